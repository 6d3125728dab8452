"""One Redis connection pool per process for Django's cache (the scaled mode's logins, and whom the notifiers reach).

Django keeps a cache object per thread and per async context, and its Redis
cache client makes a connection pool per cache object. Each request Django
serves runs in an async context of its own, so each request built a new pool
and opened a new connection to Redis (tests/runtime/test_cache.py counts them): the
cache was 12.8 % of a panel answer's samples on PostgreSQL and Redis, 5.4 % of
them opening a connection, and server CPU per answer 11.3–12.9 ms without,
10.7–11.2 ms with (bench.answer, 400 answers; docs/PERFORMANCE.md, and
askuser_app/server/README.md for what those figures leave open). Django's
``pool_class`` option (in its Redis cache's documented ``OPTIONS``) takes this
class, whose pools are shared by address; redis-py's pools are thread-safe and
start afresh in a forked process.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import redis


class SharedConnectionPool(redis.ConnectionPool):
    shared: ClassVar[dict[str, SharedConnectionPool]] = {}
    sharing: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> SharedConnectionPool:
        key = repr((url, sorted(kwargs.items())))
        with cls.sharing:
            pool = cls.shared.get(key)
            if pool is None:
                pool = cls.shared[key] = super().from_url(url, **kwargs)
            return pool
