"""Email: the mail for an unanswered prompt (``adapter``, ``mails``), its signed one-tap answer links
and the settings page's email section (``views``, ``urls``, ``templates/``), and the file backend that
keeps mail on disk when no SMTP server is set (``backend``)."""

from __future__ import annotations

from django.utils.translation import gettext_noop

from askuser_app.delivery.channels import Folder

folder = Folder(
    settings=(
        "EMAIL_HOST",
        "EMAIL_PORT",
        "EMAIL_HOST_USER",
        "EMAIL_HOST_PASSWORD",
        "EMAIL_USE_TLS",
        "EMAIL_USE_SSL",
        "EMAIL_TIMEOUT",
        "DEFAULT_FROM_EMAIL",
    ),
    surface=gettext_noop("by email"),
    section=2,
    watches=("askuser_app.Preferences",),  # when, if at all, a person is mailed
)
