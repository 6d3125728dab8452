"""Background work inside each server process: the deadline and delivery loops.

A loop starts when its process is ready to serve (``server/loops.py``). Each
turn does its work and sleeps until the moment the work names, or at most
``recheck`` seconds (to see what other processes recorded), or until this
process wakes it after committing something new. A loop with a ``calm``
starts its turns at least that far apart: the wakes that come meanwhile (a
burst of commits, attempts landing one by one) make one turn, not one each.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from datetime import datetime

from django.utils import timezone

from askuser_app.runtime import metrics

log = logging.getLogger("askuser")


class Loop:
    def __init__(
        self, name: str, turn: Callable[[], Awaitable[datetime | None]], *, recheck: float = 5.0, calm: float = 0.0
    ) -> None:
        self.name = name
        self.turn = turn  # does the work; returns when the next turn is due, if it knows
        self.recheck = recheck
        self.calm = calm  # seconds at least between the starts of two turns
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[None] | None = None
        self.woken: asyncio.Event | None = None
        # When the sleeping loop wakes by itself (a timestamp); infinity while it works.
        self.wakes_at = math.inf

    def ensure_running(self) -> None:
        """Start in the running event loop, once."""
        loop = asyncio.get_running_loop()
        if self.task is not None and not self.task.done() and self.loop is loop:
            return
        self.loop, self.woken = loop, asyncio.Event()
        self.task = loop.create_task(self.run(self.woken))

    def wake(self, due: datetime | None = None) -> None:
        """From any thread: something new is due (at ``due``, or now).

        A loop that will wake before ``due`` anyway is left asleep, so a burst
        of new prompts costs no extra turns."""
        if due is not None and due.timestamp() >= self.wakes_at:
            return
        if self.loop is not None and self.woken is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.woken.set)

    async def run(self, woken: asyncio.Event) -> None:
        began = -math.inf
        while True:
            self.wakes_at = math.inf
            if (rest := began + self.calm - time.monotonic()) > 0:
                await asyncio.sleep(rest)  # the wakes meanwhile are all answered by the turn below
            woken.clear()  # before the work, so a wake during it is not lost
            began = time.monotonic()
            metrics.LOOP_TURNS.labels(loop=self.name).inc()
            try:
                upcoming = await self.turn()
            except Exception:
                metrics.LOOP_FAILURES.labels(loop=self.name).inc()
                log.exception("%s failed; trying again shortly.", self.name)
                upcoming = None
            delay = self.recheck if upcoming is None else (upcoming - timezone.now()).total_seconds()
            sleep = min(max(delay, 0.0), self.recheck)
            self.wakes_at = time.time() + sleep
            # asyncio.timeout, not wait_for: Python 3.11's wait_for returns when
            # its event is set in the same step as the task is cancelled, and the
            # loop, its one cancellation swallowed, would never end.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(sleep):
                    await woken.wait()
