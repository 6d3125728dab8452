"""A server loads what requests use before it serves, and keeps it out of the
collector's passes (askuser_app/server/startup.py).

Each test starts a fresh Python process, as Daphne does: this process has long
imported everything, so it could not tell a module loaded at start from one
loaded by a request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from askuser_app.server import startup

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.backend_neutral  # a process of its own, on an SQLite file of its own

# The database, a person with a login and an agent token, made in a process of their own.
SETUP = """
import json
import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
from askuser_app.domain import services
from tests.conftest import log_in

call_command("migrate", interactive=False, verbosity=0)
person = get_user_model().objects.create_user("ann", password=None)
_, token = services.create_agent("ann-agent", person)
print(json.dumps({"token": token, "login": log_in(person)}))
"""

# What a served process does: an agent asks and waits, the person opens the
# page and its socket and answers. Everything the harness needs is imported
# before the server's module.
SERVE = """
import asyncio, gc, json, sys
import httpx
from channels.testing import WebsocketCommunicator

given = json.loads(sys.argv[1])
import controlui.asgi
from askuser_app.web import views

loaded = set(sys.modules)
CSRF = "startupcsrftokenstartupcsrftoken"
person = {"Cookie": f"sessionid={given['login']}; csrftoken={CSRF}", "X-CSRFToken": CSRF, "HX-Request": "true"}
agent = {"Authorization": f"Bearer {given['token']}"}
questions = [{"id": "target", "header": "Deploy", "question": "Where to?",
              "options": [{"label": "Staging"}, {"label": "Production"}]}]

async def serve():
    app = controlui.asgi.application
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        created = await client.post("/api/v1/prompts", json={"session": "s1", "questions": questions}, headers=agent)
        prompt = created.json()["id"]
        page = await client.get("/s/s1/", headers=person)
        socket = WebsocketCommunicator(app, "/ws/sessions/s1/?since=0",
            headers=[(b"host", b"127.0.0.1"), (b"origin", b"http://127.0.0.1"), (b"cookie", person["Cookie"].encode())])
        opened, _ = await socket.connect()
        answered = await client.post(f"/s/s1/prompts/{prompt}/answer", data={"q-target": "0", "action": "answer"},
                                     headers=person)
        result = await client.get(f"/api/v1/prompts/{prompt}?wait=5", headers=agent)
        await socket.disconnect()
    return [created.status_code, page.status_code, opened, answered.status_code, result.json()["status"]]

statuses = asyncio.run(serve())
walked = {id(obj) for obj in gc.get_objects()}
print(json.dumps({
    "statuses": statuses,
    "imported": sorted(set(sys.modules) - loaded),
    "view_walked": id(views.session_page) in walked,
    "thresholds": gc.get_threshold(),
}))
"""


def run(code: str, env: dict[str, str], *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> dict:
    # The embedded mode, whatever tier runs it: no PostgreSQL, no Redis, nothing that requires them.
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "ASKUSER_REQUIRE_SCALED")}
    env.update(
        ASKUSER_DATA_DIR=str(tmp_path_factory.mktemp("served")),
        DJANGO_SETTINGS_MODULE="controlui.settings",
        ASKUSER_RATE_LIMIT="0",
    )
    given = run(SETUP, env)
    return run(SERVE, env, json.dumps(given))


def test_the_first_create_page_socket_answer_and_wait_import_nothing(served):
    assert served["statuses"] == [201, 200, True, 200, "answered"]
    # A module imported here was loaded while an agent or a person waited, and
    # its objects are walked by every full pass of the collector: load it in
    # askuser_app/server/startup.py.
    assert served["imported"] == []


def test_what_was_loaded_at_start_is_not_walked_by_the_collector(served):
    assert served["view_walked"] is False


def test_full_passes_of_the_collector_wait_for_many_more_objects_than_by_default(served):
    # Python's default is every 10 passes over the middle generation.
    assert served["thresholds"][2] == startup.FULL_PASS_AFTER_MIDDLE_PASSES > 10
