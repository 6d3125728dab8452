"""The deadline loop: expires pending prompts on time, in every server process.

It sleeps until the next deadline it knows of. Prompts created in this
process move that deadline forward at once; prompts created elsewhere are
seen within five seconds (their own process normally expires them
first). Expiry is a compare-and-set, so processes never expire twice, and
reads expire overdue prompts themselves, so no result depends on this loop.
A prompt that fails to expire is logged with its id and tried again at the
next recheck; it never holds up the others.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from askuser_app.domain import services
from askuser_app.runtime.asyncdb import database_call
from askuser_app.runtime.background import Loop


async def _turn() -> datetime | None:
    now = timezone.now()
    await database_call(services.expire_due)(now)
    # Past ``now`` only: a prompt that failed to expire just now is tried again at the next
    # recheck, not in a loop that would spin on it.
    return await database_call(services.next_deadline)(now)


loop = Loop("Expiring prompts", _turn)
ensure_running = loop.ensure_running
