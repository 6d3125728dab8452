"""The deadline loop: expires pending prompts on time, in every server process.

It sleeps until the next deadline it knows of. Prompts created in this
process move that deadline forward at once; prompts created elsewhere are
seen within five seconds (their own process normally expires them
first). Expiry is a compare-and-set, so processes never expire twice, and
reads expire overdue prompts themselves, so no result depends on this loop.
"""

from __future__ import annotations

from datetime import datetime

from .asyncdb import database_call
from .background import Loop


async def _turn() -> datetime | None:
    from . import services  # services tells this module about new deadlines

    await database_call(services.expire_due)()
    return await database_call(services.next_deadline)()


loop = Loop("Expiring prompts", _turn)
ensure_running = loop.ensure_running


def deadline_added(expires_at: datetime) -> None:
    """Called from any thread after a prompt is created here."""
    loop.wake(expires_at)
