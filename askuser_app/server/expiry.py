"""The deadline loop: expires pending prompts on time, in every server process.

It sleeps until the next deadline it knows of. Prompts created in this
process move that deadline forward at once; prompts created elsewhere are
seen within five seconds (their own process normally expires them
first). Expiry is a compare-and-set, so processes never expire twice, and
reads expire overdue prompts themselves, so no result depends on this loop.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from askuser_app.domain import services, signals
from askuser_app.runtime.asyncdb import database_call
from askuser_app.runtime.background import Loop


async def _turn() -> datetime | None:
    await database_call(services.expire_due)()
    return await database_call(services.next_deadline)()


loop = Loop("Expiring prompts", _turn)
ensure_running = loop.ensure_running


def deadline_added(sender: Any, *, expires_at: datetime, **kwargs: Any) -> None:
    """From any thread, after a prompt is created here (``signals.deadline_added``)."""
    loop.wake(expires_at)


# services only sends the signal: it does not import this module, which imports it.
signals.deadline_added.connect(deadline_added)
