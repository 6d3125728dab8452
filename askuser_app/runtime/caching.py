"""The cache as this project uses it: a shortcut past the database, never a source of truth.

What is kept there (whom the notifiers reach) is read again from the
database when the cache cannot be reached (Redis restarting), and a write or
a forgetting that fails is logged and skipped: no create, answer, page or
save fails because the cache did. A change whose forgetting failed while the
cache was reachable but refusing is seen once its entry runs out (each says
how long it is kept)."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.cache import cache

log = logging.getLogger("askuser")

# A cache that is down fails every request's reads and writes: said once in
# this many seconds, with how many more there were, not once per request.
WARN_EVERY = 10.0
_said_at = -WARN_EVERY
_unsaid = 0


def warn(message: str, *args: Any) -> None:
    """Log a failure of the cache, at most once every WARN_EVERY seconds (a race between
    threads may say one twice or count one less: it is a log line, not a tally)."""
    global _said_at, _unsaid
    now = time.monotonic()
    if now - _said_at < WARN_EVERY:
        _unsaid += 1
        return
    more, _said_at, _unsaid = _unsaid, now, 0
    if more:
        message += f" (and {more} more since the last)"
    log.warning(message, *args)


def read(*keys: str) -> dict[str, Any]:
    """The entries found for ``keys``; none when the cache cannot be reached."""
    try:
        return cache.get_many(keys)
    except Exception as exc:  # the backend's own errors (redis-py's) are not Django's to name
        warn("The cache could not be read (%s); the database is read instead.", exc)
        return {}


def keep(key: str, value: Any, seconds: float | None, *, unless_kept: bool = False) -> None:
    """Keep ``value`` for ``seconds`` (None: until replaced); ``unless_kept``: only if none is."""
    try:
        if unless_kept:
            cache.add(key, value, seconds)
        else:
            cache.set(key, value, seconds)
    except Exception as exc:
        warn("The cache could not keep %s (%s).", key, exc)


def claim(key: str, seconds: float) -> bool:
    """True when this call is the first to take ``key`` in ``seconds`` (in every process sharing
    the cache); also True when the cache cannot say, so that what it guards is done, not lost."""
    try:
        return bool(cache.add(key, True, seconds))
    except Exception as exc:
        warn("The cache could not keep %s (%s).", key, exc)
        return True


def forget(key: str) -> None:
    try:
        cache.delete(key)
    except Exception as exc:
        warn("The cache could not forget %s (%s); it runs out on its own.", key, exc)
