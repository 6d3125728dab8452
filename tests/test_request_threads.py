"""Requests Django serves run on kept threads, one request per thread at a time."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from django.core.signals import request_finished, request_started
from django.db import connection

from .conftest import asgi_get, asgi_request, payload

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def seen():
    """The thread (and its database connection) each request's signals ran on."""
    seen: list[tuple[int, int | None]] = []

    def record(**kwargs) -> None:
        seen.append((threading.get_ident(), id(connection.connection) if connection.connection else None))

    request_finished.connect(record)
    yield seen
    request_finished.disconnect(record)


@pytest.mark.parametrize("path", ["/api/v1/tool", "/login/"], ids=["agent API", "pages"])
async def test_requests_one_after_another_reuse_a_thread(seen, path):
    for _ in range(5):
        assert (await asgi_get(path, {})).status_code == 200

    assert len({thread for thread, _ in seen}) == 1


async def ask(token: str, session: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return await asgi_request("POST", "/api/v1/prompts", json=payload(session=session), headers=headers)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="PostgreSQL connections come from a pool")
async def test_a_kept_thread_keeps_its_database_connection(seen, token):
    for number in range(3):
        assert (await ask(token, f"kept-{number}")).status_code == 201

    assert len(seen) == 3
    assert len(set(seen)) == 1
    assert None not in {conn for _, conn in seen}


async def test_requests_at_the_same_time_never_share_a_thread():
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
