"""The scaled mode (SPEC 6): two Daphne processes sharing PostgreSQL and Redis."""

from __future__ import annotations

import concurrent.futures

import httpx
import pytest

from askuser_app.domain import services
from askuser_app.models import Prompt, PromptEvent
from tests.conftest import SCALED, SCALED_REASON, auth, payload, wait_until_parked

pytestmark = [
    pytest.mark.scaled,
    pytest.mark.live,
    pytest.mark.skipif(not SCALED, reason=SCALED_REASON),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def two_servers(start_server):
    return start_server(), start_server()


def test_a_wait_on_one_process_wakes_on_a_cancel_through_the_other(two_servers, token):
    first, second = two_servers
    created = httpx.post(f"{first.url}/api/v1/prompts", json=payload(), headers=auth(token)).json()
    path = f"/api/v1/prompts/{created['id']}"

    with concurrent.futures.ThreadPoolExecutor() as pool:
        waiting = pool.submit(httpx.get, f"{first.url}{path}?wait=30", headers=auth(token), timeout=60)
        wait_until_parked(first)
        cancelled = httpx.post(f"{second.url}{path}/cancel", headers=auth(token))
        woken = waiting.result(timeout=10)

    assert cancelled.status_code == 200
    assert woken.json() == cancelled.json()


def test_a_wait_wakes_on_an_answer_committed_by_another_process(two_servers, token, owner):
    first, _ = two_servers
    created = httpx.post(f"{first.url}/api/v1/prompts", json=payload(), headers=auth(token)).json()

    with concurrent.futures.ThreadPoolExecutor() as pool:
        waiting = pool.submit(
            httpx.get, f"{first.url}/api/v1/prompts/{created['id']}?wait=30", headers=auth(token), timeout=60
        )
        wait_until_parked(first)
        services.answer(Prompt.objects.get(pk=created["id"]), {"deploy_target": "Production"}, by=owner, surface="web")
        woken = waiting.result(timeout=10)

    assert woken.json()["answers"] == {"answers": {"deploy_target": ["Production"]}}


def test_concurrent_cancels_across_two_processes_have_one_winner(two_servers, token):
    servers = list(two_servers)
    created = httpx.post(f"{servers[0].url}/api/v1/prompts", json=payload(), headers=auth(token)).json()
    urls = [f"{servers[i % 2].url}/api/v1/prompts/{created['id']}/cancel" for i in range(20)]

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        statuses = sorted(r.status_code for r in pool.map(lambda url: httpx.post(url, headers=auth(token)), urls))

    assert statuses == [200] + [409] * 19
    assert PromptEvent.objects.filter(prompt_id=created["id"], kind__in=PromptEvent.TERMINAL).count() == 1
