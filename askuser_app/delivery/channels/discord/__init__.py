"""Discord: a prompt as a direct message with buttons, answered through signed interactions
(``adapter``; its one interactions endpoint)."""

from __future__ import annotations

from django.utils.translation import gettext_noop

from askuser_app.delivery.channels import Folder

folder = Folder(
    settings=("DISCORD_APPLICATION_ID", "DISCORD_PUBLIC_KEY", "DISCORD_BOT_TOKEN", "DISCORD_API_URL"),
    surface=gettext_noop("on Discord"),
    links=True,
    place=3,
)
