"""``manage.py serve``: the one way askuser serves, in development (``make run``) and in production.

Daphne serves ``controlui.asgi:application`` through its public ``Server``; once
it listens (its ``ready_callable``), the background loops and ``/mcp``'s session
manager start in its event loop (``askuser_app/server/loops.py``,
``start_serving``), before any request, so after a restart the deadlines fire,
deliveries leave and chat apps are fetched with nobody asking.
Daphne speaks no ASGI lifespan; a server that does (Uvicorn) would be a second
server beside the design's Daphne for one start-up hook: docs/DEPLOYMENT.md
("Processes") has the figures.

``--no-worker`` leaves the worker's loops (chat apps fetched by polling) to
``manage.py worker``; ``--worker`` runs them here; without either,
``ASKUSER_SERVE_WORKER`` says (on without ``REDIS_URL``).
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable
from typing import Any, TextIO

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from askuser_app.runtime import redaction

HOST, PORT = "127.0.0.1", 8000


class Command(BaseCommand):
    help = "Serve askuser (Daphne) and start its background loops as soon as it listens."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-b", "--bind", help=f"the address to listen on (default {HOST} with --port)")
        parser.add_argument("-p", "--port", type=int, help=f"the TCP port (default {PORT})")
        parser.add_argument("-u", "--unix-socket", help="listen on a Unix socket at this path (behind nginx)")
        parser.add_argument("--fd", type=int, help="serve a listening socket this process inherited (systemd, tests)")
        parser.add_argument(
            "-e", "--endpoint", action="append", default=[], help="one more Twisted endpoint, as Daphne's --endpoint"
        )
        log = parser.add_mutually_exclusive_group()
        log.add_argument("--access-log", help="write the access log to this file ('-': standard output)")
        log.add_argument("--no-access-log", action="store_true", help="no access log (the proxy in front keeps one)")
        worker = parser.add_mutually_exclusive_group()
        worker.add_argument("--worker", action="store_true", default=None, help="also run the worker's loops")
        worker.add_argument(
            "--no-worker", dest="worker", action="store_false", help="leave the worker's loops to manage.py worker"
        )

    def handle(self, **options: Any) -> None:
        from daphne.access import AccessLogGenerator

        from askuser_app.server.admission import Server
        from controlui.asgi import application

        worker = settings.ASKUSER_SERVE_WORKER if options["worker"] is None else options["worker"]
        endpoints = self.endpoints(options)
        log = self.access_log(options)
        server = Server(
            application=application,
            endpoints=endpoints,
            action_logger=AccessLog(AccessLogGenerator(log)) if log else None,
            verbosity=options["verbosity"],
            ready_callable=functools.partial(self.ready, endpoints, worker),
            per_turn=settings.ASKUSER_NEW_CONNECTIONS_PER_TURN,
        )
        server.run()
        if server.abort_start:
            raise CommandError(f"Could not listen on {', '.join(endpoints)}.")

    def endpoints(self, options: dict[str, Any]) -> list[str]:
        from daphne.endpoints import build_endpoint_description_strings

        host, port = options["bind"], options["port"]
        if not (host or port is not None or options["unix_socket"] or options["fd"] is not None or options["endpoint"]):
            host, port = HOST, PORT
        elif host or port is not None:
            host, port = host or HOST, PORT if port is None else port
        built = build_endpoint_description_strings(host, port, options["unix_socket"], options["fd"])
        return sorted([*options["endpoint"], *built])

    def access_log(self, options: dict[str, Any]) -> TextIO | None:
        if options["no_access_log"]:
            return None
        if options["access_log"] and options["access_log"] != "-":
            return open(options["access_log"], "a", 1)  # kept open for the life of the process
        return sys.stdout if options["access_log"] or options["verbosity"] >= 1 else None

    def ready(self, endpoints: list[str], worker: bool) -> None:
        """Listening, its event loop about to run: the loops start in its first step."""
        from askuser_app.server import loops

        asyncio.get_event_loop().call_soon(functools.partial(loops.start_serving, worker=worker))
        said = "with the worker's loops" if worker else "without the worker's loops (manage.py worker runs them)"
        self.stdout.write(f"Serving on {', '.join(endpoints)}, {said}; Ctrl-C stops.")


class AccessLog:
    """Daphne's access log, writing each path as ``redaction.access_path`` masks it: a mail's
    signed link is a credential, and the log is read by more people than the mail."""

    def __init__(self, log: Callable[[str, str, dict[str, Any]], None]) -> None:
        self.log = log

    def __call__(self, protocol: str, action: str, details: dict[str, Any]) -> None:
        if "path" in details:
            details = {**details, "path": redaction.access_path(str(details["path"]))}
        self.log(protocol, action, details)
