"""The deadline loop: expires pending prompts on time, in every server process.

It sleeps until the next deadline it knows of. Prompts created in this
process move that deadline forward at once; prompts created elsewhere are
seen within ``RECHECK`` seconds (their own process normally expires them
first). Expiry is a compare-and-set, so processes never expire twice, and
reads expire overdue prompts themselves, so no result depends on this loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime

from django.utils import timezone

from .asyncdb import database_call

log = logging.getLogger("askuser")

RECHECK = 5.0

_loop: asyncio.AbstractEventLoop | None = None
_task: asyncio.Task[None] | None = None
_wake: asyncio.Event | None = None


def ensure_running() -> None:
    """Start the loop in the running event loop, once."""
    global _loop, _task, _wake
    loop = asyncio.get_running_loop()
    if _task is not None and not _task.done() and _loop is loop:
        return
    _loop, _wake = loop, asyncio.Event()
    _task = loop.create_task(_run(_wake))


def deadline_added(expires_at: datetime) -> None:
    """Called from any thread after a prompt is created here."""
    if _loop is not None and _wake is not None and not _loop.is_closed():
        _loop.call_soon_threadsafe(_wake.set)


async def _run(wake: asyncio.Event) -> None:
    from . import services  # services tells this module about new deadlines

    while True:
        try:
            await database_call(services.expire_due)()
            upcoming = await database_call(services.next_deadline)()
        except Exception:
            log.exception("Expiring prompts failed; trying again shortly.")
            upcoming = None
        delay = RECHECK if upcoming is None else (upcoming - timezone.now()).total_seconds()
        wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), timeout=min(max(delay, 0.0), RECHECK))
