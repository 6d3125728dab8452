"""The cache as this project uses it: a shortcut past the database, never a source of truth.

What is kept there (a person's language, whom the notifiers reach) is read
again from the database when the cache cannot be reached (Redis restarting),
and a write or a forgetting that fails is logged and skipped: no create,
answer, page or save fails because the cache did. A change whose forgetting
failed while the cache was reachable but refusing is seen once its entry
runs out (each says how long it is kept)."""

from __future__ import annotations

import logging
from typing import Any

from django.core.cache import cache

log = logging.getLogger("askuser")


def read(*keys: str) -> dict[str, Any]:
    """The entries found for ``keys``; none when the cache cannot be reached."""
    try:
        return cache.get_many(keys)
    except Exception as exc:  # the backend's own errors (redis-py's) are not Django's to name
        log.warning("The cache could not be read (%s); the database is read instead.", exc)
        return {}


def keep(key: str, value: Any, seconds: float | None, *, unless_kept: bool = False) -> None:
    """Keep ``value`` for ``seconds`` (None: until replaced); ``unless_kept``: only if none is."""
    try:
        if unless_kept:
            cache.add(key, value, seconds)
        else:
            cache.set(key, value, seconds)
    except Exception as exc:
        log.warning("The cache could not keep %s (%s).", key, exc)


def forget(key: str) -> None:
    try:
        cache.delete(key)
    except Exception as exc:
        log.warning("The cache could not forget %s (%s); it runs out on its own.", key, exc)
