"""``manage.py worker``: askuser's background loops without serving, like healthchecks' ``sendalerts``.

It runs every loop (``askuser_app/server/loops.py``): those that run anywhere
(deadlines, deliveries) and those one process of a deployment runs (chat apps
fetched by polling). In the scaled mode one worker runs beside server
processes started with ``serve --no-worker`` (their default with ``REDIS_URL``);
Redis carries what it records to every one of them. SIGTERM or Ctrl-C stops it.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from django.core.management.base import BaseCommand

from askuser_app.runtime import realtime
from askuser_app.server import loops


class Command(BaseCommand):
    help = "Run the background loops (deadlines, deliveries, chat apps fetched by polling) without serving."

    def handle(self, **options: Any) -> None:
        if not realtime.heard_by_every_process():
            self.stderr.write(
                "No REDIS_URL: what this worker records is announced in its own memory, so the server's open "
                "pages and waiting agents learn of it only when they next read. Without REDIS_URL 'manage.py "
                "serve' runs these loops itself; run a worker only where no server runs them."
            )
        asyncio.run(self.run())

    async def run(self) -> None:
        stopping = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(signum, stopping.set)
        loops.start(worker=True)
        self.stdout.write("Running the background loops; Ctrl-C stops.")
        await stopping.wait()
        await loops.stop()
