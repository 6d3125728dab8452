"""SPEC 3.4: the bounded long-poll wakes on the event, without threads or polling."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from askuser_app.agents import waits as longpoll
from askuser_app.domain import services
from askuser_app.models import Prompt
from askuser_app.runtime import realtime
from askuser_app.runtime.asyncdb import database_call
from controlui.asgi import application
from tests.conftest import asgi_get, parked, start_wait, until

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 10  # seconds any single step may take before the test fails


answer = database_call(services.answer)
cancel = database_call(services.cancel)


async def test_a_wait_returns_the_answer_as_soon_as_it_is_given(asked, token, owner):
    waiting = start_wait(token, asked)
    await until(parked(asked))

    await answer(asked, {"deploy_target": "Production"}, by=owner, surface="web")

    response = await asyncio.wait_for(waiting, DEADLINE)
    assert response.status_code == 200
    assert {k: response.json()[k] for k in ("status", "answers")} == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }


async def test_a_wait_wakes_on_a_cancel(asked, token, agent):
    waiting = start_wait(token, asked)
    await until(parked(asked))

    await cancel(asked, agent=agent)

    body = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert (body["status"], body["reason"]) == ("no_answer", "cancelled")


async def test_every_waiter_on_a_prompt_wakes(asked, token, owner):
    waits = [start_wait(token, asked) for _ in range(5)]
    await until(parked(asked, 5))

    await answer(asked, {"deploy_target": "Production"}, by=owner)

    responses = await asyncio.wait_for(asyncio.gather(*waits), DEADLINE)
    assert {r.json()["status"] for r in responses} == {"answered"}
    assert realtime.hub().inboxes == {}


async def test_a_wait_with_nothing_happening_returns_pending(asked, token):
    response = await asyncio.wait_for(start_wait(token, asked, wait=0.2), DEADLINE)

    assert response.json()["status"] == "pending"
    assert realtime.hub().inboxes == {}


async def test_a_wait_on_a_resolved_prompt_returns_at_once(asked, token, agent):
    await cancel(asked, agent=agent)

    response = await asyncio.wait_for(start_wait(token, asked, wait=55), DEADLINE)

    assert response.json()["reason"] == "cancelled"


async def test_a_wait_returns_expired_when_the_deadline_passes(asked, token):
    deadline = timezone.now() + timedelta(milliseconds=300)
    await database_call(Prompt.objects.filter(pk=asked.pk).update)(expires_at=deadline)

    body = (await asyncio.wait_for(start_wait(token, asked, wait=30), DEADLINE)).json()

    assert (body["status"], body["reason"]) == ("no_answer", "expired")
    assert body["resolved_at"] == deadline.isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def test_an_answer_landing_between_subscribing_and_parking_is_not_missed(asked, token, owner, monkeypatch):
    read_state = longpoll._read_state

    async def read_then_answer(authorization, prompt_id):
        state = await read_state(authorization, prompt_id)  # still pending here
        await answer(asked, {"deploy_target": "Production"}, by=owner)
        return state

    monkeypatch.setattr(longpoll, "_read_state", read_then_answer)

    body = (await asyncio.wait_for(start_wait(token, asked, wait=30), DEADLINE)).json()

    assert body["status"] == "answered"


async def test_a_client_that_hangs_up_stops_waiting(asked, token):
    hung_up = asyncio.Event()
    sent: list[dict] = []

    async def receive():
        if not sent:
            sent.append({})
            return {"type": "http.request", "body": b"", "more_body": False}
        await hung_up.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": f"/api/v1/prompts/{asked.pk}",
        "query_string": b"wait=30",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode())],
    }
    serving = asyncio.ensure_future(application(scope, receive, send))
    await until(parked(asked))

    hung_up.set()

    await asyncio.wait_for(serving, DEADLINE)
    await until(lambda: realtime.hub().inboxes == {})
    assert all(m.get("type") != "http.response.start" for m in sent)


async def test_a_parked_wait_runs_in_its_requests_task_beside_one_listening_for_a_hang_up(asked, token, owner):
    waits = [start_wait(token, asked) for _ in range(3)]
    await until(parked(asked, 3))

    running = [task.get_coro().__qualname__ for task in asyncio.all_tasks()]

    # Thousands are parked at once: a task of its own for each wait would be 1.5 KiB more
    # apiece (askuser_app/server/README.md, "Idle connections"); each request's task runs its
    # wait, and one more awaits the server's ``receive`` for a hang-up, with no frame around it.
    assert sum(name.endswith(".receive") for name in running) == 3
    assert not any(name.startswith(("LongPoll.", "wait_for_result")) for name in running)
    await answer(asked, {"deploy_target": "Production"}, by=owner)
    responses = await asyncio.wait_for(asyncio.gather(*waits), DEADLINE)
    assert [r.json()["status"] for r in responses] == ["answered"] * 3


def awaiting(coroutine) -> list[str]:
    """The coroutines a suspended one awaits, outermost first, by their names."""
    names = []
    while coroutine is not None and hasattr(coroutine, "cr_await"):
        names.append(coroutine.__qualname__)
        coroutine = coroutine.cr_await
    return names


async def test_a_parked_wait_keeps_no_frame_of_a_consumer_or_of_a_route_passing_it_on(asked, token):
    wait = start_wait(token, asked)
    # Parked: past its subscription (a Redis round trip in the scaled mode) and its read.
    await until(lambda: awaiting(wait.get_coro())[-1:] == ["Mailbox.get_within"])

    chain = awaiting(wait.get_coro())

    # Held by the thousand: a Channels consumer and its dispatch, or a frame of each route that
    # passes a request on, was 4 KiB of each (askuser_app/server/README.md, "Waits as plain
    # ASGI"). What is left between the server and the wait's inbox is Channels' two routers.
    served = chain[chain.index("ProtocolTypeRouter.__call__") :]
    assert served == [
        "ProtocolTypeRouter.__call__",
        "URLRouter.__call__",
        "LongPoll.serve",
        "wait_for_result",
        "_resolution",
        "Mailbox.get_within",
    ]
    wait.cancel()


async def test_a_thousand_waits_hold_no_thread_each_and_all_wake(asked, token, owner, settings):
    # One agent on one address: an operator who allows that many, as the benchmark does.
    settings.ASKUSER_MAX_WAITS_PER_AGENT = settings.ASKUSER_MAX_WAITS_PER_USER = 0
    settings.ASKUSER_MAX_WAITS_PER_ADDRESS = 0
    threads_before = threading.active_count()
    waits = [start_wait(token, asked) for _ in range(1000)]
    await until(parked(asked, 1000), within=60)

    threads_while_parked = threading.active_count()
    await answer(asked, {"deploy_target": "Production"}, by=owner)
    responses = await asyncio.wait_for(asyncio.gather(*waits), 60)

    assert threads_while_parked - threads_before < 10
    assert [r.json()["status"] for r in responses] == ["answered"] * 1000


async def test_a_wait_checks_the_token_first(asked, other_token):
    unknown = await asgi_get(f"/api/v1/prompts/{asked.pk}?wait=5", {"Authorization": "Bearer au_nope"})
    foreign = await asgi_get(f"/api/v1/prompts/{asked.pk}?wait=5", {"Authorization": f"Bearer {other_token}"})
    malformed = await asgi_get("/api/v1/prompts/nope?wait=5", {"Authorization": "Bearer au_nope"})

    assert (unknown.status_code, foreign.status_code, malformed.status_code) == (401, 404, 401)
    assert realtime.hub().inboxes == {}


async def test_a_wait_cancelled_while_subscribing_leaves_nothing_behind(asked, token, monkeypatch):
    hub = realtime.hub()
    subscribing = asyncio.Event()

    async def slow_group_add(group, channel):
        subscribing.set()
        await asyncio.Event().wait()  # a layer that never answers

    monkeypatch.setattr(hub.layer, "group_add", slow_group_add)
    waiting = start_wait(token, asked)
    await asyncio.wait_for(subscribing.wait(), DEADLINE)

    waiting.cancel()

    await until(lambda: hub.inboxes == {})
    assert hub.waiting == 0
