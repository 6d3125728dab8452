"""Where the agent API's work runs: creates on one kept thread with its open
connection, parked waits on no thread at all, Django's requests on a thread each."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from django.core.signals import request_started
from django.db import connection

from askuser_app import services
from askuser_app.realtime import hub

from .conftest import asgi_get, asgi_request, payload, until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def seen(monkeypatch):
    """The thread and database connection each create's ``services.ask`` ran on."""
    seen: list[tuple[int, int]] = []
    ask = services.ask

    def recording(*args, **kwargs):
        seen.append((threading.get_ident(), id(connection.connection)))
        return ask(*args, **kwargs)

    monkeypatch.setattr(services, "ask", recording)
    return seen


async def ask(token: str, session: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return await asgi_request("POST", "/api/v1/prompts", json=payload(session=session), headers=headers)


async def test_creates_one_after_another_run_on_one_thread(seen, token):
    for number in range(3):
        assert (await ask(token, f"kept-{number}")).status_code == 201

    assert len(seen) == 3
    assert len({thread for thread, _ in seen}) == 1
    assert threading.get_ident() not in {thread for thread, _ in seen}  # never on the event loop


@pytest.mark.skipif(connection.vendor != "sqlite", reason="PostgreSQL connections come from a pool")
async def test_creates_keep_their_database_connection_open(seen, token):
    for number in range(3):
        assert (await ask(token, f"kept-{number}")).status_code == 201

    assert len(set(seen)) == 1


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
