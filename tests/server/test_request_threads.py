"""Where the agent API's work runs: creates, the waits' reads and the hooks on the threads kept
for agents' calls, with their connections (on SQLite one, so that writes queue for the write lock), parked
waits on no thread at all, Django's requests on a thread each (but the
panel's answer, on threads kept for it: tests/server/test_answer_route.py)."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.signals import request_started
from django.db import connection

from askuser_app.domain import agentauth, services
from askuser_app.runtime import realtime
from askuser_app.runtime.realtime import hub
from tests.conftest import asgi_get, asgi_request, log_in, payload, until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def seen(monkeypatch):
    """The thread and database connection each create's ``services.ask`` ran on."""
    seen: list[tuple[str, int]] = []
    ask = services.ask

    def recording(*args, **kwargs):
        seen.append((threading.current_thread().name, id(connection.connection)))
        return ask(*args, **kwargs)

    monkeypatch.setattr(services, "ask", recording)
    return seen


async def ask(token: str, session: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return await asgi_request("POST", "/api/v1/prompts", json=payload(session=session), headers=headers)


async def test_creates_run_on_the_threads_kept_for_them(seen, token):
    for number in range(3):
        assert (await ask(token, f"kept-{number}")).status_code == 201

    assert len(seen) == 3
    assert all(thread.startswith("agent") for thread, _ in seen)


PERMISSION = {
    "session_id": "0c6b1f3e-5a7d-4e2b-9f10-2d8c4b6a1e57",
    "transcript_path": "/home/alice/.claude/projects/x.jsonl",
    "cwd": "/home/alice/app",
    "hook_event_name": "PermissionRequest",
    "tool_name": "Bash",
    "tool_input": {"command": "make build", "description": "Build"},
}


async def test_a_hook_asks_on_the_thread_and_connection_an_api_create_asks_on(seen, token):
    # One shape for the routes in front of Django (agents/calls.py): a hook's question is
    # stored where an agent's create is, not on the thread Channels' consumers share.
    assert (await ask(token, "by-the-api")).status_code == 201
    headers = {"Authorization": f"Bearer {token}"}
    hooked = await asgi_request("POST", "/api/v1/hooks?wait=0", json=PERMISSION, headers=headers)

    assert hooked.status_code == 200
    assert len(seen) == 2
    if connection.vendor == "sqlite":
        assert seen[0] == seen[1]
    assert all(thread.startswith("agent") for thread, _ in seen)


async def test_a_waits_reads_run_on_the_threads_kept_for_agents(token, monkeypatch):
    read_on: list[str] = []
    agent_for = agentauth.agent_for

    def recording(*args, **kwargs):
        read_on.append(threading.current_thread().name)
        return agent_for(*args, **kwargs)

    monkeypatch.setattr(agentauth, "agent_for", recording)
    created = await ask(token, "read")
    headers = {"Authorization": f"Bearer {token}"}
    assert (await asgi_get(f"/api/v1/prompts/{created.json()['id']}?wait=0", headers)).status_code == 200

    assert len(read_on) == 2 and all(thread.startswith("agent") for thread in read_on)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="PostgreSQL's creates share a pool")
async def test_on_sqlite_creates_run_on_one_thread_with_one_open_connection(seen, token):
    creates = [ask(token, f"kept-{number}") for number in range(6)]

    assert [r.status_code for r in await asyncio.gather(*creates)] == [201] * 6
    assert len(set(seen)) == 1


async def test_a_create_announces_itself_from_its_thread_without_waiting_for_the_layer(token, owner, monkeypatch):
    # The agent thread hands the announcement to the event loop (realtime.sending_on):
    # a layer that has not taken it yet holds back neither the thread nor the response.
    layer = get_channel_layer()
    listener = await layer.new_channel()
    await layer.group_add(realtime.user_group(owner.pk), listener)
    taken, group_send = asyncio.Event(), layer.group_send

    async def slow_group_send(group: str, message: dict) -> None:
        await taken.wait()
        await group_send(group, message)

    monkeypatch.setattr(layer, "group_send", slow_group_send)

    response = await asyncio.wait_for(ask(token, "announced"), 10)
    assert response.status_code == 201 and not taken.is_set()
    taken.set()
    announced = await asyncio.wait_for(layer.receive(listener), 10)

    assert (announced["type"], announced["status"], announced["prompt_id"]) == (
        "prompt.changed",
        "pending",
        response.json()["id"],
    )


async def test_parked_waits_hold_no_thread(api, token):
    created = [await ask(token, f"parked-{number}") for number in range(20)]
    headers = {"Authorization": f"Bearer {token}"}
    threads = threading.active_count()

    waits = [asyncio.ensure_future(asgi_get(f"/api/v1/prompts/{r.json()['id']}?wait=30", headers)) for r in created]
    try:
        await until(lambda: hub().waiting == len(waits))
        assert threading.active_count() <= threads + 1  # at most the database thread, once
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)


async def test_parked_waits_share_the_processs_one_layer_channel(api, token, monkeypatch):
    # A wait listens through the hub (realtime.Hub), not through a layer channel of its own.
    layer = get_channel_layer()
    made: list[str] = []
    new_channel = layer.new_channel

    async def counted(*args, **kwargs) -> str:
        made.append(await new_channel(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(layer, "new_channel", counted)
    created = [await ask(token, f"shared-{number}") for number in range(5)]
    headers = {"Authorization": f"Bearer {token}"}

    waits = [asyncio.ensure_future(asgi_get(f"/api/v1/prompts/{r.json()['id']}?wait=30", headers)) for r in created]
    try:
        await until(lambda: hub().waiting == len(waits))
        assert made == [hub().channel]
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)


async def test_requests_django_serves_at_the_same_time_never_share_a_thread():
    # Each request waits in its own thread for the other: on a shared thread
    # the second could never arrive and the barrier would break.
    both = threading.Barrier(2, timeout=10)

    def meet(**kwargs) -> None:
        both.wait()

    request_started.connect(meet)
    try:
        responses = await asyncio.gather(asgi_get("/api/v1/tool", {}), asgi_get("/api/v1/tool", {}))
    finally:
        request_started.disconnect(meet)

    assert [r.status_code for r in responses] == [200, 200]


def checked_out_of_the_pool() -> int:
    """PostgreSQL connections taken from the pool and not given back, by any thread."""
    stats = connection.pool.get_stats()
    return stats["pool_size"] - stats["pool_available"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's connections come from a pool")
def test_pages_not_found_keep_no_connection_out_of_the_pool(owner):
    # Django renders a path no route matches on a thread of asyncio's own, where the page reads
    # the person's login; a connection kept there is one fewer for every other request.
    cookie = f"sessionid={log_in(owner)}"
    connection.close()
    before = checked_out_of_the_pool()

    for _ in range(3):  # each through a new event loop, so on a new thread of asyncio's
        response = async_to_sync(asgi_request)("GET", "/no/such/page", headers={"Cookie": cookie})
        assert response.status_code == 404 and "alice" in response.text

    connection.close()
    assert checked_out_of_the_pool() == before
