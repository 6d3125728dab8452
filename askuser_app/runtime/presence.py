"""Whether a person has an askuser tab in sight right now, wherever it is served.

Each page's socket says whether its page is visible (``document.visibilityState``)
when it connects and whenever that changes; a socket that closes stops counting
at once. What the delivery engine asks (``in_sight``) is whether any socket of the
person, in any server process, says so: a push for a prompt is then needless,
since the page shows and notifies it itself.

Nothing of it is written to the database. Each process counts its own visible
sockets per person (``Counter``). The embedded mode's one process answers from
that count. In the scaled mode a process also keeps its word in Redis, in one
sorted set per person (``<prefix>:presence:<user id>``) whose members are the
processes that have a tab of that person in sight, each scored with when its
word runs out: written only when the process's count for a person goes from 0
to 1 or back, and renewed every ``RENEW`` seconds (``renew``, the ``Presence``
loop) while it lasts. A process that is killed stops renewing, so its word
runs out ``LASTS`` seconds later at most and the person is no longer "in sight"
because of it. Scores are the writers' clocks, read by any process's: the
server processes' clocks must agree, as they must for every prompt's deadline.

Redis writes run in order on one thread of this module's own: a visible then a
hidden socket is never stored the other way round, and a Redis that is slow to
answer never holds the event loop. A Redis that cannot be reached answers "not
in sight": a needless push is better than a missed one.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis
from django.conf import settings

from askuser_app.runtime import metrics
from askuser_app.runtime.background import Loop
from askuser_app.runtime.cachepool import SharedConnectionPool
from askuser_app.runtime.caching import warn

LASTS = 30.0  # seconds a process's word that a person's tab is in sight lasts unless renewed
RENEW = LASTS / 3

PROCESS = uuid.uuid4().hex  # this process, as a member of each person's set
_counted: Counter[int] = Counter()  # this process's visible sockets, per person
_writes = ThreadPoolExecutor(1, thread_name_prefix="askuser-presence")


def scaled() -> bool:
    return bool(settings.REDIS_URL)


def _redis() -> redis.Redis:
    pool = SharedConnectionPool.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1)
    return redis.Redis(connection_pool=pool)


def _key(user_id: int) -> str:
    return f"{settings.REDIS_PREFIX}:presence:{user_id}"


# --- what a socket says ----------------------------------------------------------------------


async def seen(user_id: int, visible: bool) -> None:
    """One socket of ``user_id`` in this process became visible (True), or stopped being: hidden
    or closed (False). Each socket says each change once (``Sighting``)."""
    if visible:
        metrics.SOCKETS_VISIBLE.inc()
        _counted[user_id] += 1
        changed = _counted[user_id] == 1
    else:
        metrics.SOCKETS_VISIBLE.dec()
        _counted[user_id] -= 1
        changed = _counted[user_id] <= 0
        if changed:
            del _counted[user_id]
    if changed and scaled():
        await _in_order(_store, user_id, visible)


class Sighting:
    """One socket's part: whether its page is visible, said to ``seen`` only when it changes."""

    def __init__(self, user_id: int) -> None:
        self.user_id = user_id
        self.visible = False

    async def says(self, visible: bool) -> None:
        if visible != self.visible:
            self.visible = visible
            await seen(self.user_id, visible)

    async def closed(self) -> None:
        await self.says(False)


async def _in_order(func: Any, *args: Any) -> None:
    await asyncio.get_running_loop().run_in_executor(_writes, func, *args)


def _store(user_id: int, visible: bool) -> None:
    try:
        with _redis().pipeline() as pipe:
            if visible:
                _mark(pipe, user_id, time.time())
            else:
                pipe.zrem(_key(user_id), PROCESS)
            pipe.execute()
    except redis.RedisError as exc:
        warn("Redis could not keep whether a tab is in sight (%s).", exc)


def _mark(pipe: Any, user_id: int, now: float) -> None:
    key = _key(user_id)
    pipe.zadd(key, {PROCESS: now + LASTS})
    pipe.zremrangebyscore(key, "-inf", now)  # the words of processes that stopped renewing
    pipe.expire(key, int(LASTS) + 1)


# --- renewed while it lasts ------------------------------------------------------------------


async def renew() -> None:
    """This process's word for each person it has a tab of in sight, renewed (scaled mode)."""
    if scaled() and _counted:
        await _in_order(_renew)


async def _renewing() -> None:
    await renew()  # then sleeps RENEW seconds


loop = Loop("Presence", _renewing, recheck=RENEW)


def _renew() -> None:
    # Read here, on the writes' thread: a person hidden meanwhile has their removal queued after this.
    people, now = list(_counted), time.time()
    try:
        with _redis().pipeline() as pipe:
            for user_id in people:
                _mark(pipe, user_id, now)
            pipe.execute()
    except redis.RedisError as exc:
        warn("Redis could not keep whether a tab is in sight (%s).", exc)


# --- what the delivery engine asks -----------------------------------------------------------


def in_sight(user_id: int) -> bool:
    """Whether any tab of ``user_id`` is visible now, in any server process (from any thread)."""
    if _counted.get(user_id, 0) > 0:  # one of this process's own
        return True
    if not scaled():
        return False
    try:
        return bool(_redis().zcount(_key(user_id), f"({time.time()}", "+inf"))
    except redis.RedisError as exc:
        warn("Redis could not say whether a tab is in sight (%s); the push is sent.", exc)
        return False
