"""Run in the server's environment (``python -m bench.prepare``): migrate, make
the bench user, its agent token and a logged-in session, the people of the
reconnect storm (each with a token and a login), and count the queries one
create and one answer make. Prints one JSON line."""

from __future__ import annotations

import json
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlui.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from askuser_app.agents import create as agent_create  # noqa: E402
from askuser_app.domain import services  # noqa: E402

from .payload import ANSWER_FORM, create_body  # noqa: E402


def login(user) -> str:
    """A browser's ``sessionid`` for ``user`` (Django's ``force_login``)."""
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def create(token: str, session: str) -> dict:
    """A create as the server's create route runs it on its thread: the token check and the
    create, in the one function the route calls (Django's test client would reach only the
    OpenAPI document's operation: the create is served in front of Django)."""
    headers = {"authorization": f"Bearer {token}"}
    status, body, _headers = agent_create.create(headers, json.dumps(create_body(session)).encode())
    assert status == 201, body
    return body


def count_queries(token: str, user) -> dict[str, int]:
    """One create as the create route runs it and one answer through the panel's form (in
    process, through Django's full middleware chain)."""
    create(token, "bench-queries")  # warm caches
    with CaptureQueriesContext(connection) as created:
        prompt_id = create(token, "bench-queries-2")["id"]
    human = Client(HTTP_HOST="127.0.0.1", HTTP_HX_REQUEST="true")
    human.force_login(user)
    with CaptureQueriesContext(connection) as answer:
        response = human.post(f"/s/bench-queries-2/prompts/{prompt_id}/answer", ANSWER_FORM)
    assert response.status_code == 200, response.content
    return {"create_queries": len(created.captured_queries), "answer_queries": len(answer.captured_queries)}


# The storm's pages belong to this many people: 5,000 pages are 50 tabs each,
# within the default cap of 200 sockets per person, as a real deployment's are.
STORM_PEOPLE = 100


def people() -> list[dict[str, str]]:
    """The storm's people: each with an agent token and a login."""
    made = []
    for n in range(STORM_PEOPLE):
        person = get_user_model().objects.create_user(f"storm-{n}", password=None)
        _, token = services.create_agent(f"storm-agent-{n}", person)
        made.append({"token": token, "session_key": login(person)})
    return made


def main() -> None:
    call_command("migrate", interactive=False, verbosity=0)
    user = get_user_model().objects.create_user("bench", password=None)
    _, token = services.create_agent("bench", user)
    result = {"token": token, "session_key": login(user), "people": people(), **count_queries(token, user)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
