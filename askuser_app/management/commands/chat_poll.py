"""``manage.py chat_poll <name>``: a chat app's inbound events without a public URL (Telegram
getUpdates, Slack Socket Mode), with the delivery engine beside it; until interrupted.

For the scaled mode only, where one process must fetch for all the server processes and
Redis carries what it records to each of them. In the embedded mode the server process
fetches the events itself (``askuser_app.delivery.channels.chats.polling``), and this command refuses: what
it recorded would be announced in its own memory, where no parked wait and no open page
of the server would hear of it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from askuser_app.delivery import channels, engine
from askuser_app.delivery.channels.base import Polling
from askuser_app.runtime import realtime


class Command(BaseCommand):
    help = "Fetch a chat app's inbound events by polling, for a scaled server (REDIS_URL) with no public URL."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", choices=channels.chat_apps())

    def handle(self, name: str, **options: Any) -> None:
        adapter = channels.installed_chat_apps().get(name)
        if adapter is None or not adapter.configured():
            raise CommandError(f"{channels.label_of(name)} is not set up on this server; see the README's Chat apps.")
        if not isinstance(adapter, Polling):
            raise CommandError(
                f"{adapter.label} cannot be polled: it posts to this server, which needs its public URL "
                f"(the README's Chat apps says how, with a tunnel if need be)."
            )
        if not realtime.heard_by_every_process():
            raise CommandError(
                f"Not needed without REDIS_URL: the server process fetches {adapter.label}'s events itself "
                f"('make run' with the app's variables set is all it takes). Run from here, the answers it "
                f"took would reach no waiting agent and no open page, which live in the server's memory. "
                f"chat_poll is for the scaled mode, where Redis carries them to every server process."
            )
        self.stdout.write(f"Polling {adapter.label}; Ctrl-C stops.")
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(self._run(adapter))

    async def _run(self, adapter: Polling) -> None:
        engine.ensure_running()  # answers taken here are edited into the messages without waiting for the server
        try:
            await adapter.poll()
        except RuntimeError as refused:
            raise CommandError(str(refused)) from refused
