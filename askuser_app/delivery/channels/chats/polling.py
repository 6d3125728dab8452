"""Chat apps' inbound events fetched by the server process itself, where it has no public URL.

Telegram without ``TELEGRAM_WEBHOOK_SECRET`` long-polls ``getUpdates``; Slack
with ``SLACK_APP_TOKEN`` holds a Socket Mode connection (``Polling.polls``).
Each runs as a background loop of the worker (``askuser_app/server/loops.py``
says which process that is: the server process itself in the embedded mode,
one ``manage.py worker`` beside the server processes in the scaled mode), and
hands every event to the same handler its webhook endpoint uses. An answer
taken so is announced on the channel layer, and the parked waits and open
pages listening there hear of it at once.
"""

from __future__ import annotations

import functools
import logging

from askuser_app.delivery import channels
from askuser_app.delivery.channels.base import Polling
from askuser_app.runtime.background import Loop

log = logging.getLogger("askuser")

RECHECK = 30.0  # seconds before an app that is off, or was refused, is looked at again


async def fetch(adapter: Polling) -> None:
    """One turn: the app's events until it refuses; nothing while it is off."""
    if not (adapter.configured() and adapter.polls()):
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
