"""``ASKUSER_TOKEN=… manage.py mcp_stdio``: the ask_user MCP tool on stdin/stdout.

For agent runtimes that launch their tools as processes. It talks to an askuser
server over HTTP (``--url``), so it needs no database of its own.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from askuser_app.agents.mcp_server import serve_stdio
from askuser_app.runtime.datadir import DEFAULT_URL, default_server_url


class Command(BaseCommand):
    help = "Serve the ask_user MCP tool over stdio, asking through the askuser server at --url."
    requires_system_checks: list[str] = []  # a tool process starts quietly: stdout is the protocol

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--token",
            default=os.environ.get("ASKUSER_TOKEN"),
            help="Agent token; prefer $ASKUSER_TOKEN, since every account sees a command line (ps).",
        )
        parser.add_argument(
            "--url",
            default=default_server_url(settings.DATA_DIR),
            help=f"The askuser server ($ASKUSER_URL, else where 'make run' serves, else {DEFAULT_URL}).",
        )
        parser.add_argument(
            "--session",
            default=os.environ.get("ASKUSER_SESSION") or None,
            help="Session key the questions go to ($ASKUSER_SESSION; default: a new one for this process).",
        )
        parser.add_argument("--run-id", default=None, help="Run id to ask as (default: a new run per call).")
        parser.add_argument("--wait", type=float, default=25, help="Seconds each long-poll holds (at most 55).")
        parser.add_argument(
            "--progress-every",
            type=float,
            default=settings.ASKUSER_MCP_PROGRESS_EVERY,
            help="Seconds between progress notifications while waiting.",
        )

    def handle(self, token: str | None, url: str, session: str | None, run_id: str | None, **options: Any) -> None:
        if not token:
            raise CommandError("Give the agent token: --token … or ASKUSER_TOKEN (manage.py createagent prints one).")
        # stdout carries the protocol; everything else goes to stderr.
        serving = serve_stdio(
            url, token, session=session, run_id=run_id, wait=options["wait"], progress_every=options["progress_every"]
        )
        asyncio.run(serving)
