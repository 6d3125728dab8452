"""The database work of the agent routes served in front of Django, in one shape.

The create (``create``), the long-polls (``waits``) and the hooks (``hooks``)
each read the token, then read or write in one short call; between calls a
wait parks with no thread and no connection. Every such call is an
``agent_call``, the same for all three:

- **Thread:** one of the threads kept for agents' calls (``threads``,
  ``ASKUSER_CREATE_THREADS``; one on SQLite, so that a process's writes queue
  for the write lock instead of racing for it in SQLite's busy handler), never
  the thread Channels' consumers share and never a thread per request. A hook
  creates where the API creates.
- **Connection:** the thread keeps its connection (SQLite's stays open,
  PostgreSQL's goes back to the pool); one broken or past its age is dropped
  after the call, as at the end of a request (``dropping_old_connections``).
- **Announcement:** what the call commits is announced after commit
  (``transaction.on_commit``, ``server/effects.py``), handed to the route's
  event loop without the thread waiting for the channel layer
  (``realtime.sending_on``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from django.conf import settings

from askuser_app.runtime import realtime
from askuser_app.runtime.asyncdb import KeptThreads, dropping_old_connections

P = ParamSpec("P")
R = TypeVar("R")

threads = KeptThreads(lambda: settings.ASKUSER_CREATE_THREADS, "agent")


def agent_call(func: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``func`` as a coroutine: on an agent thread, its connection kept, its announcements sent on the caller's loop."""
    dropping = dropping_old_connections(func)

    @functools.wraps(func)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        with realtime.sending_on(asyncio.get_running_loop()):
            return await threads.run(dropping)(*args, **kwargs)

    return call
