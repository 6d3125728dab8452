"""Chat apps' inbound events fetched by the server process itself, where it has no public URL.

Telegram without ``TELEGRAM_WEBHOOK_SECRET`` long-polls ``getUpdates``; Slack
with ``SLACK_APP_TOKEN`` holds a Socket Mode connection (``Polling.polls``).
In the embedded mode each runs as one of the server's background loops,
beside the delivery engine's, and hands every event to the same handler its webhook
endpoint uses. An answer taken so is announced on the layer this process's
parked waits and open pages listen on, and they hear of it at once. Taken by
a second process (``manage.py chat_poll``) it would be recorded where no wait
or page hears of it: the embedded layer lives in one process's memory.

In the scaled mode the server processes leave it to one ``manage.py chat_poll
<name>`` process: Telegram serves one ``getUpdates`` at a time (a second
consumer is refused with 409 Conflict), so several server processes would
take turns refusing each other, and the Redis layer carries that one
process's announcements to every server process anyway.
"""

from __future__ import annotations

import functools
import logging

from askuser_app.delivery import channels
from askuser_app.delivery.channels.base import Polling
from askuser_app.runtime import realtime
from askuser_app.runtime.background import Loop

log = logging.getLogger("askuser")

RECHECK = 30.0  # seconds before an app that is off, or was refused, is looked at again

_told: set[str] = set()  # the apps this scaled process said it leaves to chat_poll


async def fetch(adapter: Polling) -> None:
    """One turn: the app's events until it refuses; nothing while it is off or another process polls."""
    if not (adapter.configured() and adapter.polls()):
        return
    if realtime.heard_by_every_process():
        if adapter.name not in _told:
            _told.add(adapter.name)
            log.info(
                "%s has no public URL set up; in the scaled mode one process fetches its events: "
                "run manage.py chat_poll %s beside the server processes.",
                adapter.label,
                adapter.name,
            )
        return
    try:
        await adapter.poll()
    except RuntimeError as refused:  # a webhook set, a revoked token: said again every RECHECK seconds
        log.warning("%s; trying again in %.0f s.", refused, RECHECK)


@functools.cache
def loops() -> dict[str, Loop]:
    """One loop per app that can fetch its events, by the app's name; made once per process."""
    return {
        name: Loop(f"Fetching {adapter.label} events", functools.partial(fetch, adapter), recheck=RECHECK)
        for name, adapter in channels.installed_chat_apps().items()
        if isinstance(adapter, Polling)
    }


def ensure_running() -> None:
    for loop in loops().values():
        loop.ensure_running()
