"""Calling the ORM from async code: without holding a connection afterwards (``database_call``),
or on threads kept with their connection for one route (``KeptThreads``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections, connection

P = ParamSpec("P")
R = TypeVar("R")


def database_call(func: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Run ``func`` on the thread-sensitive executor, then drop connections a
    request would drop (broken or past their age), as Channels'
    ``database_sync_to_async`` does, but never one inside a transaction."""

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        finally:
            if not connection.in_atomic_block:
                close_old_connections()

    return sync_to_async(run, thread_sensitive=True)


class KeptThreads:
    """A route's own threads, made with its first request once settings are read.

    A thread kept for a route keeps its database connection too, which is why
    the create and the answer are served on these rather than on a new thread
    per request."""

    def __init__(self, size_setting: str, name: str) -> None:
        self.size_setting, self.name = size_setting, name
        self.pool: ThreadPoolExecutor | None = None

    def __call__(self) -> ThreadPoolExecutor:
        if self.pool is None:
            self.pool = ThreadPoolExecutor(getattr(settings, self.size_setting), thread_name_prefix=self.name)
        return self.pool
