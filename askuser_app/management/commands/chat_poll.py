"""``manage.py chat_poll <name>``: a chat app's inbound events without a public URL (Telegram
getUpdates, Slack Socket Mode), with the delivery engine beside it; until interrupted."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from askuser_app.delivery import engine
from askuser_app.delivery.chats import core
from askuser_app.delivery.chats.base import CHANNELS


class Command(BaseCommand):
    help = "Fetch a chat app's inbound events by polling, for a server with no public URL."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", choices=CHANNELS)

    def handle(self, name: str, **options: Any) -> None:
        adapter = core.installed().get(name)
        if adapter is None or not adapter.configured():
            raise CommandError(f"{core.label_of(name)} is not set up on this server; see the README's Chat apps.")
        poll = getattr(adapter, "poll", None)
        if poll is None:
            raise CommandError(
                f"{adapter.label} cannot be polled: it posts to this server, which needs its public URL "
                f"(the README's Chat apps says how, with a tunnel if need be)."
            )
        self.stdout.write(f"Polling {adapter.label}; Ctrl-C stops.")
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(self._run(poll))

    async def _run(self, poll: Any) -> None:
        engine.ensure_running()  # answers taken here are edited into the messages without waiting for the server
        try:
            await poll()
        except RuntimeError as refused:
            raise CommandError(str(refused)) from refused
