from django.contrib import admin
from django.urls import include, path

from askuser_app.agents.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("", include("askuser_app.urls")),
]
handler404 = "askuser_app.web.views.not_found"
