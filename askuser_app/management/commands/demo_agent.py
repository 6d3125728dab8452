"""``manage.py demo_agent``: a pretend agent that asks the demo user three prompts in turn.

It uses the Python client exactly as an agent would, and prints each result as
it arrives; answer in the Control UI (logged in as demo).
"""

from __future__ import annotations

import json
import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from askuser_app.runtime.datadir import DEFAULT_URL, default_server_url
from askuser_client.client import AskUserClient, AskUserError, clean_title

PROMPTS: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "Where to deploy first",
        [
            {
                "id": "deploy_target",
                "header": "Deploy",
                "question": "The release build passed; where should it go first?",
                "options": [
                    {"label": "Staging (Recommended)", "description": "Safe and reversible; QA sees it today"},
                    {"label": "Production", "description": "Customers get the fix within the hour"},
                ],
            }
        ],
    ),
    (
        "Which checks to run",
        [
            {
                "id": "checks",
                "header": "Checks",
                "question": "Which checks should run before the deploy?",
                "options": [
                    {"label": "Unit tests (Recommended)", "description": "Four minutes"},
                    {"label": "Browser tests", "description": "Twenty minutes"},
                    {"label": "Load test", "description": "An hour, on the staging cluster"},
                ],
                "multiSelect": True,
            }
        ],
    ),
    (
        "How to announce it",
        [
            {
                "id": "announce",
                "header": "Announce",
                "question": "Should the release be announced?",
                "options": [
                    {"label": "Changelog only (Recommended)"},
                    {"label": "Changelog and email"},
                    {"label": "No announcement"},
                ],
            },
            {
                "id": "version",
                "header": "Version",
                "question": "Which version number should it get?",
                "options": [{"label": "2.4.1 (Recommended)", "description": "A patch release"}, {"label": "2.5.0"}],
            },
            {
                "id": "reviewers",
                "header": "Reviewers",
                "question": "Who should review the release notes?",
                "options": [{"label": "Alice"}, {"label": "Bob"}, {"label": "The whole team"}],
                "multiSelect": True,
            },
        ],
    ),
]


class Command(BaseCommand):
    help = "Ask the demo user a realistic sequence of questions through the Python client; print each result."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--url",
            default=default_server_url(settings.DATA_DIR),
            help=f"The askuser server (default: $ASKUSER_URL, else where 'make run' serves, else {DEFAULT_URL}).",
        )
        parser.add_argument("--token", default=os.environ.get("ASKUSER_TOKEN"), help="Default: the demo token.")
        parser.add_argument("--session", default=None, help="Default: a new session of its own, titled demo_agent.")
        parser.add_argument("--timeout", type=int, default=900, help="Seconds each prompt waits (30–3600).")

    def handle(self, url: str, token: str | None, session: str | None, timeout: int, **options: Any) -> None:
        token = token or self.demo_token()
        own_title = None if session else clean_title(f"demo_agent · {os.path.basename(os.getcwd())}")
        with AskUserClient(url, token, session=session, title=own_title) as askuser:
            key = askuser.session
            self.stdout.write(
                f"Asking in session {key!r} on {url}; answer in the Control UI ({url}/s/{key}/ as demo).\n"
            )
            for number, (title, questions) in enumerate(PROMPTS, 1):
                self.stdout.write(f"[{number}/{len(PROMPTS)}] {title}: waiting for the answer…")
                try:
                    result = askuser.ask(questions, timeout_seconds=timeout)
                except AskUserError as exc:
                    raise CommandError(str(exc)) from None
                except KeyboardInterrupt:
                    self.stdout.write("\nInterrupted; the open prompt was cancelled.")
                    return
                self.show(result)

    def show(self, result: dict[str, Any]) -> None:
        if result["status"] == "answered":
            self.stdout.write(self.style.SUCCESS("  answered: " + "; ".join(result.get("summary", []))))
        else:
            self.stdout.write(self.style.WARNING(f"  no answer ({result.get('reason')})"))
        self.stdout.write("  " + json.dumps({k: result[k] for k in ("status", "answers") if k in result}) + "\n")

    def demo_token(self) -> str:
        path = settings.DATA_DIR / "demo-agent-token"
        if not path.exists():
            raise CommandError(f"No {path}: run 'make run' (or 'manage.py setupdemo') first, or give --token.")
        return path.read_text().strip()
