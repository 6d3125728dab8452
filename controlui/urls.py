from django.contrib import admin
from django.urls import path

from askuser_app.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]
