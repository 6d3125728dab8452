"""``manage.py worker``: askuser's background loops without serving, like healthchecks' ``sendalerts``.

It runs every loop (``askuser_app/server/loops.py``): those that run anywhere
(deadlines, deliveries) and those one process of a deployment runs (chat apps
fetched by polling). In the scaled mode one worker runs beside server
processes started with ``serve --no-worker`` (their default with ``REDIS_URL``);
Redis carries what it records to every one of them. With
``ASKUSER_WORKER_METRICS_PORT`` it serves its own counters' ``/metrics`` there, or
with ``--metrics-fd`` on a listening socket it inherits (``server/metrics.py``).
SIGTERM or Ctrl-C stops it.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from askuser_app.runtime import realtime
from askuser_app.server import loops, metrics


class Command(BaseCommand):
    help = "Run the background loops (deadlines, deliveries, chat apps fetched by polling) without serving."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--metrics-fd",
            type=int,
            help="serve /metrics on a listening socket this process inherited (systemd, tests), "
            "instead of ASKUSER_WORKER_METRICS_PORT",
        )

    def handle(self, **options: Any) -> None:
        if not realtime.heard_by_every_process():
            self.stderr.write(
                "No REDIS_URL: what this worker records is announced in its own memory, so the server's open "
                "pages and waiting agents learn of it only when they next read. Without REDIS_URL 'manage.py "
                "serve' runs these loops itself; run a worker only where no server runs them."
            )
        asyncio.run(self.run(options["metrics_fd"]))

    async def run(self, metrics_fd: int | None = None) -> None:
        stopping = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(signum, stopping.set)
        scraped = self.scrape_target(metrics_fd)
        if scraped is not None:
            scraped.start()
        loops.start(worker=True)
        said = f"; /metrics on {scraped.address}" if scraped else ""
        self.stdout.write(f"Running the background loops{said}; Ctrl-C stops.")
        try:
            await stopping.wait()
        finally:
            await loops.stop()
            if scraped is not None:
                scraped.stop()

    @staticmethod
    def scrape_target(fd: int | None) -> metrics.WorkerMetrics | None:
        """Where its ``/metrics`` is served: the inherited socket, else the configured port, else nowhere."""
        if fd is not None:
            return metrics.WorkerMetrics.inherited(fd)
        port = settings.ASKUSER_WORKER_METRICS_PORT
        return metrics.WorkerMetrics.on(settings.ASKUSER_WORKER_METRICS_HOST, port) if port else None
