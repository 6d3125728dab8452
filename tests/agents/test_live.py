"""Against a real Daphne process: the agent's loop, a crash and a restart."""

from __future__ import annotations

import concurrent.futures
import time

import httpx
import pytest

from askuser_app.domain import services
from askuser_app.models import Prompt
from tests.conftest import auth, payload, wait_until_parked

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def test_an_agent_asks_waits_and_is_woken_by_a_cancel_on_the_same_server(start_server, token):
    server = start_server()
    created = httpx.post(f"{server.url}/api/v1/prompts", json=payload(), headers=auth(token)).json()
    url = f"{server.url}/api/v1/prompts/{created['id']}"

    with concurrent.futures.ThreadPoolExecutor() as pool:
        waiting = pool.submit(httpx.get, f"{url}?wait=30", headers=auth(token), timeout=60)
        wait_until_parked(server)
        cancelled = httpx.post(f"{url}/cancel", headers=auth(token))
        woken = waiting.result(timeout=10)

    assert cancelled.status_code == 200
    assert woken.json() == cancelled.json()


def test_a_prompt_and_its_answer_survive_a_killed_server(start_server, server_env, token, owner):
    first = start_server()
    created = httpx.post(f"{first.url}/api/v1/prompts", json=payload(), headers=auth(token)).json()

    first.kill()
    services.answer(Prompt.objects.get(pk=created["id"]), {"deploy_target": "Production"}, by=owner, surface="web")
    second = start_server(port=first.port)

    body = httpx.get(f"{second.url}/api/v1/prompts/{created['id']}?wait=5", headers=auth(token)).json()
    assert {k: body[k] for k in ("status", "answers")} == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }


def test_a_wait_cut_by_a_crash_gets_the_result_from_the_restarted_server(start_server, token, owner):
    first = start_server()
    created = httpx.post(f"{first.url}/api/v1/prompts", json=payload(), headers=auth(token)).json()
    url = f"/api/v1/prompts/{created['id']}?wait=30"

    with concurrent.futures.ThreadPoolExecutor() as pool:
        waiting = pool.submit(httpx.get, f"{first.url}{url}", headers=auth(token), timeout=60)
        wait_until_parked(first)
        first.kill()
        with pytest.raises(httpx.TransportError):
            waiting.result(timeout=10)

    services.cancel(Prompt.objects.get(pk=created["id"]), agent=services.Agent.objects.get())
    second = start_server(port=first.port)
    assert httpx.get(f"{second.url}{url}", headers=auth(token)).json()["reason"] == "cancelled"


def test_the_server_expires_a_prompt_at_its_deadline_without_being_asked(start_server, token):
    server = start_server()
    created = httpx.post(f"{server.url}/api/v1/prompts", json=payload(), headers=auth(token)).json()
    Prompt.objects.filter(pk=created["id"]).update(expires_at=services.timezone.now())

    deadline = time.monotonic() + 15
    while Prompt.objects.get(pk=created["id"]).is_pending:
        assert time.monotonic() < deadline, "the server did not expire the prompt"
        time.sleep(0.05)
    assert Prompt.objects.get(pk=created["id"]).events.filter(kind="expired").count() == 1
