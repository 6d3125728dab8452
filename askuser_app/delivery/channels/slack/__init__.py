"""Slack: a prompt as a Block Kit message in the app's direct message, answered by a tap, a modal
or a reply (``adapter``; its HTTP endpoints and, without a public URL, Socket Mode)."""

from __future__ import annotations

from django.utils.translation import gettext_noop

from askuser_app.delivery.channels import Folder

folder = Folder(
    settings=("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_API_URL", "SLACK_APP_TOKEN"),
    surface=gettext_noop("on Slack"),
    links=True,
    place=2,
)
