"""``manage.py discord_commands``: register the ``/askuser`` slash command with Discord, once per application."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from askuser_app.delivery.channels.base import Permanent, Temporary
from askuser_app.delivery.channels.discord import adapter as discord


class Command(BaseCommand):
    help = "Register the /askuser command (link, unlink) as the Discord application's global command."

    def handle(self, **options: Any) -> None:
        if not discord.adapter.configured():
            raise CommandError("Set DISCORD_APPLICATION_ID, DISCORD_PUBLIC_KEY and DISCORD_BOT_TOKEN first.")
        try:
            names = discord.register_command()
        except (Temporary, Permanent) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Registered with Discord: {', '.join('/' + n for n in names)}. It may take a minute to show."
        )
