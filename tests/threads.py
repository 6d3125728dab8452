"""The thread that the requests of people and agents share, held as a slow request would hold it."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator

from askuser_app.runtime.asyncdb import database_call


@contextlib.asynccontextmanager
async def requests_thread_held(seconds: float = 30.0) -> AsyncIterator[None]:
    """While inside, ``database_call``'s thread is busy (at most ``seconds``): whatever needs it waits."""
    started, released = threading.Event(), threading.Event()

    def slow_request() -> None:
        started.set()
        released.wait(seconds)

    holding = asyncio.ensure_future(database_call(slow_request)())
    try:
        assert await asyncio.to_thread(started.wait, seconds)
        yield
    finally:
        released.set()
        await holding
