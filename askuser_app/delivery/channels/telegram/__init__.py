"""Telegram: a prompt as a message with an inline keyboard, answered by a tap or a reply, in the
chat a person links with a code (``adapter``; its webhook and, without a public URL, its polling)."""

from __future__ import annotations

from django.utils.translation import gettext_noop

from askuser_app.delivery.channels import Folder

folder = Folder(
    settings=("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET", "TELEGRAM_API_URL"),
    surface=gettext_noop("on Telegram"),
    links=True,
    place=1,
)
