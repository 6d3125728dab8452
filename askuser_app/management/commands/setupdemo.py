"""``manage.py setupdemo``: the demo login and agent token that ``make run`` prints.

The known ``demo`` / ``demo`` password is for a server on this machine only
(the embedded default binds 127.0.0.1). When ``--url`` names any other
address, the demo user gets a generated password instead, printed once, and an
existing demo user with the known one gets a new one.
"""

from __future__ import annotations

import ipaddress
import secrets
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from askuser_app.domain import contract, services
from askuser_app.domain.agentauth import hash_token
from askuser_app.models import REVIEWERS, Agent, Prompt, PromptEvent, Run, Session
from askuser_app.runtime.datadir import SERVER_URL_FILE, write_private

if TYPE_CHECKING:
    from django.contrib.auth.models import User

DEMO_USER = "demo"
DEMO_PASSWORD = "demo"
DEMO_AGENT = "demo"
DEMO_SESSION = "demo"
EXPOSED = "the server listens beyond this machine, so not demo/demo"
UNCHANGED = "(the password set before; manage.py changepassword demo sets another)"
WELCOME = (
    "Hi! I'm the demo agent. When I need a decision from you, my question appears right here, "
    "above the message box. Try the README's curl example to see it."
)


class Command(BaseCommand):
    help = "Create (once) the demo user and demo agent, and print how to use them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="Where the server will listen.")

    def handle(self, url: str, **options: Any) -> None:
        url = url.rstrip("/")
        user, password = self.demo_user(exposed=beyond_loopback(url))
        token = self.demo_token(user)
        agent = Agent.objects.get(token_hash=hash_token(token))
        self.welcome(user)
        seeded = seed_history(user, agent)
        # The next steps (demo_agent, mcp_stdio) ask the server where it really listens.
        write_private(settings.DATA_DIR / SERVER_URL_FILE, client_url(url) + "\n")
        self.stdout.write(
            f"\naskuser is starting on {url}/\n"
            f"  Log in as:         {DEMO_USER} / {password}   (staff: {url}/admin/)\n"
            f"  Demo agent token:  {token}\n"
            f"                     (also in {self.token_path()}; export ASKUSER_TOKEN=$(cat {self.token_path()}))\n"
            f"  Webhook secret:    {agent.webhook_secret}   (signs the demo agent's callback_url deliveries)\n"
            f"  Demo agent:        .venv/bin/python manage.py demo_agent   (in a second terminal)\n"
            f"  Question history:  {url}/admin/askuser_app/prompt/"
            f"{f'   ({seeded} demo prompts from the last days added)' if seeded else ''}\n"
        )

    def demo_user(self, *, exposed: bool) -> tuple[User, str]:
        """The demo login, staff with the Reviewers' view permissions (never a superuser),
        and how to say its password."""
        user, created = get_user_model().objects.get_or_create(
            username=DEMO_USER, defaults={"email": "demo@example.com"}
        )
        known = not created and user.check_password(DEMO_PASSWORD)
        if created or (exposed and known):
            password = secrets.token_urlsafe(12) if exposed else DEMO_PASSWORD
            user.set_password(password)
            shown = password if not exposed else f"{password}   (new, shown only now: {EXPOSED})"
        else:
            shown = DEMO_PASSWORD if known else UNCHANGED
        user.is_staff, user.is_superuser = True, False
        user.save(update_fields=["password", "is_staff", "is_superuser"])
        user.groups.add(Group.objects.get(name=REVIEWERS))
        return user, shown

    def welcome(self, user: User) -> None:
        """A first message in the demo session, so there is a page to open."""
        if Session.objects.filter(owner=user, key=DEMO_SESSION).exists():
            return
        agent = Agent.objects.filter(owner=user, name=DEMO_AGENT, revoked_at=None).first()
        assert agent is not None  # demo_token made it
        services.post_agent_message(agent, DEMO_SESSION, WELCOME)

    def token_path(self) -> Path:
        return settings.DATA_DIR / "demo-agent-token"

    def demo_token(self, user: User) -> str:
        """The saved demo token while it still works, else a new one."""
        path = self.token_path()
        if path.exists():
            token = path.read_text().strip()
            if Agent.objects.filter(token_hash=hash_token(token), owner=user, revoked_at=None).exists():
                return token
        _, token = services.create_agent(DEMO_AGENT, user)
        write_private(path, token + "\n")
        return token


def beyond_loopback(url: str) -> bool:
    """Whether a server listening on ``url``'s host can be reached from other machines."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True  # a name: whoever resolves it may reach it


def client_url(url: str) -> str:
    """Where a client on this machine reaches a server listening on ``url``: a server bound
    to every address (0.0.0.0, ::) answers on loopback, a name ALLOWED_HOSTS knows."""
    parts = urlsplit(url)
    loopback = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(parts.hostname or "")
    if loopback is None:
        return url
    netloc = f"{loopback}:{parts.port}" if parts.port else loopback
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


# --- a few days of demo history, so the admin has something to show -------------

HISTORY_SESSION = "demo-history"

DEPLOY = {
    "id": "deploy_target",
    "header": "Deploy",
    "question": "Where should this release go first?",
    "options": [{"label": "Staging (Recommended)", "description": "Safe, reversible"}, {"label": "Production"}],
}
TESTS = {
    "id": "test_suites",
    "header": "Tests",
    "question": "Which test suites should run before the merge?",
    "options": [
        {"label": "Unit (Recommended)", "description": "Two minutes"},
        {"label": "Integration", "description": "Fifteen minutes, needs the staging database"},
        {"label": "End-to-end", "description": "An hour"},
    ],
    "multiSelect": True,
}
BRANCH = {
    "id": "branch_name",
    "header": "Branch",
    "question": "What should the release branch be called?",
    "options": [{"label": "release/next (Recommended)"}, {"label": "release/v2"}],
}


def _question(qid: str, header: str, text: str, *labels: str) -> dict[str, Any]:
    return {"id": qid, "header": header, "question": text, "options": [{"label": label} for label in labels]}


# (days ago, time of day, questions, outcome, seconds it took, answers, surface)
DEMO_HISTORY: list[tuple[int, str, list[dict[str, Any]], str, int, dict[str, Any], str]] = [
    (
        4,
        "10:20",
        [_question("database", "Database", "Which database should staging use?", "PostgreSQL (Recommended)", "SQLite")],
        "answer",
        95,
        {"database": "PostgreSQL (Recommended)"},
        "web",
    ),
    (
        3,
        "16:45",
        [
            _question(
                "rotate_keys",
                "API keys",
                "Should I rotate the payment provider's API keys now?",
                "Rotate tonight (Recommended)",
                "Rotate now",
                "Leave them",
            )
        ],
        "expire",
        900,
        {},
        "",
    ),
    (
        2,
        "11:05",
        [
            _question(
                "notes_style",
                "Changelog",
                "Which style should the release notes follow?",
                "Keep a Changelog (Recommended)",
                "GitHub releases",
            )
        ],
        "skip",
        20,
        {},
        "web",
    ),
    (1, "09:12", [DEPLOY], "answer", 42, {"deploy_target": "Staging (Recommended)"}, "web"),
    (
        1,
        "14:30",
        [TESTS, BRANCH],
        "answer",
        190,
        {"test_suites": ["Unit (Recommended)", "Integration"], "branch_name": "release/2026-12"},
        "text",
    ),
    (
        1,
        "17:50",
        [
            _question(
                "migration_window",
                "Migration",
                "Should I run the database migration during business hours?",
                "Wait for the night window (Recommended)",
                "Run it now",
            )
        ],
        "cancel",
        120,
        {},
        "",
    ),
]


def seed_history(user: User, agent: Agent) -> int:
    """Ask and resolve a few prompts through the services, then move them into the
    last days. Only for a demo user without any history; the timestamp rewrite
    below is for this demo data and nothing else. Run outside the server (before
    it starts, in ``make run``), its announcements reach no server process in the
    embedded mode; none is missed: each prompt resolves in the call that made it,
    so no agent waits on it and no page showed it pending."""
    if Prompt.objects.filter(session__owner=user).exists():
        return 0
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    for days_ago, clock, questions, outcome, seconds, answers, surface in DEMO_HISTORY:
        hour, minute = map(int, clock.split(":"))
        created = today - timedelta(days=days_ago) + timedelta(hours=hour, minutes=minute)
        request = contract.parse_create({"session": HISTORY_SESSION, "questions": questions})
        prompt = services.ask(agent, request).prompt
        _resolve(prompt, outcome, user, agent, answers, surface)
        _backdate(prompt, created, timedelta(seconds=seconds))
    first = today - timedelta(days=max(entry[0] for entry in DEMO_HISTORY))
    Session.objects.filter(owner=user, key=HISTORY_SESSION).update(created_at=first)
    Run.objects.filter(session__owner=user, session__key=HISTORY_SESSION).update(created_at=first)
    return len(DEMO_HISTORY)


def _resolve(prompt: Prompt, outcome: str, user: User, agent: Agent, answers: dict[str, Any], surface: str) -> None:
    if outcome == "answer":
        services.answer(prompt, answers, by=user, surface=surface)
    elif outcome == "skip":
        services.skip_all(prompt, by=user, surface=surface)
    elif outcome == "cancel":
        services.cancel(prompt, agent=agent)
    else:
        Prompt.objects.filter(pk=prompt.pk).update(expires_at=timezone.now())
        prompt.refresh_from_db()
        services.expire(prompt)


def _backdate(prompt: Prompt, created: datetime, took: timedelta) -> None:
    prompt.refresh_from_db()
    expires = created + timedelta(seconds=prompt.timeout_seconds)
    resolved = expires if prompt.reason == Prompt.Reason.EXPIRED else created + took
    assert prompt.result is not None  # _resolve resolved it
    result = {**prompt.result, "resolved_at": contract.iso(resolved)}
    Prompt.objects.filter(pk=prompt.pk).update(
        created_at=created, expires_at=expires, resolved_at=resolved, result=result
    )
    events = PromptEvent.objects.filter(prompt=prompt)
    events.filter(kind=PromptEvent.Kind.CREATED).update(at=created)
    events.exclude(kind=PromptEvent.Kind.CREATED).update(at=resolved, detail={"deadline": contract.iso(expires)})
