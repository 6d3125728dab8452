"""What the benchmark asks and how its human answers: a valid two-question prompt."""

from __future__ import annotations

import time
from typing import Any

QUESTIONS = [
    {
        "id": "deploy_target",
        "header": "Deploy",
        "question": "Where should this release go first?",
        "options": [
            {"label": "Staging (Recommended)", "description": "Safe, reversible"},
            {"label": "Production"},
        ],
    },
    {
        "id": "checks",
        "header": "Checks",
        "question": "Which checks should run before the release?",
        "options": [{"label": "Unit tests"}, {"label": "Smoke tests"}, {"label": "Load tests"}],
        "multiSelect": True,
    },
]

# The panel's form, as the browser posts it on Submit.
ANSWER_FORM = {"q-deploy_target": "0", "q-checks": ["0", "1"], "action": "answer"}

# An unmasked 32-character CSRF secret: Django accepts it as cookie and header alike.
CSRF = "benchcsrftokenbenchcsrftokenbe12"


def create_body(session: str, timeout: int = 3600) -> dict[str, Any]:
    return {"session": session, "questions": QUESTIONS, "timeoutSeconds": timeout}


def agent_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def human_headers(session_key: str) -> dict[str, str]:
    """A logged-in browser posting through htmx."""
    return {"Cookie": human_cookie(session_key), "X-CSRFToken": CSRF, "HX-Request": "true"}


def human_cookie(session_key: str) -> str:
    return f"sessionid={session_key}; csrftoken={CSRF}"


def session_socket(session: str) -> str:
    """A session page's socket, as a page rendered now opens it (its cursor says since when)."""
    return f"/ws/sessions/{session}/?since={int(time.time() * 1000)}"
