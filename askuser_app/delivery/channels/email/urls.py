"""Email's routes: the page a mail's signed links open, and the settings page's form."""

from __future__ import annotations

from django.urls import path

from askuser_app.delivery.channels.email import views

urlpatterns = [
    path("chat/email/<str:token>/", views.email_page, name="email_page"),
    path("settings/email/", views.settings_email, name="settings_email"),
]
