"""Every background loop of askuser, and where each may run: the one place that says so.

- **Anywhere** (``ANYWHERE``): the deadline loop (``server/expiry.py``) and the
  delivery engine (``delivery/engine.py``). Each turn claims its rows by
  compare-and-set, so any number of processes may run them at once and none
  does a thing twice. Every server process runs them: a prompt or a delivery
  committed in a process wakes that process's own loop at once, where a loop
  in another process would see it only at its next recheck. So does the loop
  that renews the process's word that a person's tab is in sight
  (``runtime/presence.py``): each process, for its own sockets.
- **Once** (``once``): the chat apps' events fetched without a public URL
  (``delivery/channels/chats/polling.py``), one loop per bot. Telegram serves one
  ``getUpdates`` per bot at a time (a second consumer is refused with 409
  Conflict) and each Slack Socket Mode connection gets its share of the events,
  so exactly one process per deployment runs them: the worker.

The worker is ``manage.py worker``, or the server process itself with
``ASKUSER_SERVE_WORKER`` (on by default without ``REDIS_URL``: the embedded
mode's one process does everything; off with it, where one ``manage.py worker``
runs beside the server processes). ``manage.py serve --no-worker`` and
``--worker`` choose for one process.

Loops start when the process is ready (``start``), never on a request. A process
that serves (``manage.py serve``) starts them with ``start_serving``, which also
starts ``/mcp``'s session manager (``agents/mcp_server.py``), and ends both with
``stop_serving``.
"""

from __future__ import annotations

import asyncio
import logging

from askuser_app.agents import mcp_server
from askuser_app.delivery import channels, engine
from askuser_app.delivery.channels.base import Polling
from askuser_app.delivery.channels.chats import polling
from askuser_app.runtime import presence
from askuser_app.runtime.background import Loop
from askuser_app.server import expiry

log = logging.getLogger("askuser")

ANYWHERE: tuple[Loop, ...] = (expiry.loop, engine.loop, presence.loop)


def once() -> list[Loop]:
    """The loops one process of the deployment runs: one per chat app that fetches its events."""
    return list(polling.loops().values())


def start(*, worker: bool) -> None:
    """In the running event loop: the loops that run anywhere, and the worker's when ``worker``."""
    for loop in (*ANYWHERE, *(once() if worker else ())):
        loop.ensure_running()
    if not worker:
        _say_who_fetches()


def start_serving(*, worker: bool) -> None:
    """In a serving process's event loop, once it listens: the loops (``start``) and ``/mcp``'s session manager."""
    start(worker=worker)
    mcp_server.endpoint().start()


def _say_who_fetches() -> None:
    for adapter in channels.installed_chat_apps().values():
        if isinstance(adapter, Polling) and adapter.configured() and adapter.polls():
            log.info(
                "%s has no public URL set up; its events are fetched by the worker: "
                "run one manage.py worker beside the server processes.",
                adapter.label,
            )


async def stop() -> None:
    """Cancel this process's loops and wait until each has ended."""
    tasks = [loop.task for loop in (*ANYWHERE, *once()) if loop.task is not None and not loop.task.done()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def stop_serving() -> None:
    """What ``start_serving`` started, ended: the loops and ``/mcp``'s sessions."""
    await stop()
    await mcp_server.endpoint().stop()
