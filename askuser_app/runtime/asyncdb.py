"""Calling the ORM from async code: without holding a connection afterwards (``database_call``),
on threads kept with their connection for one route (``KeptThreads``), or on a background
part's own thread (``OwnThread``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections, connection

P = ParamSpec("P")
R = TypeVar("R")


def dropping_old_connections(func: Callable[P, R]) -> Callable[P, R]:
    """``func``, then drop the connections a request would drop (broken or past their
    age), as Channels' ``database_sync_to_async`` does, but never one inside a transaction."""

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        finally:
            if not connection.in_atomic_block:
                close_old_connections()

    return run


def database_call(func: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Run ``func`` on the thread-sensitive executor, dropping old connections after it."""
    return sync_to_async(dropping_old_connections(func), thread_sensitive=True)


class KeptThreads:
    """A route's own threads, made with its first request once settings are read.

    A thread kept for a route keeps its database connection too, which is why
    the agent routes and the answer are served on these rather than on a new
    thread per request."""

    def __init__(self, size: Callable[[], int], name: str) -> None:
        self.size, self.name = size, name
        self.pool: ThreadPoolExecutor | None = None

    def executor(self) -> ThreadPoolExecutor:
        """The threads, made on first use with the size the settings give (at least one, as they read it)."""
        if self.pool is None:
            self.pool = ThreadPoolExecutor(self.size(), thread_name_prefix=self.name)
        return self.pool

    def run(self, func: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
        """``func`` as a coroutine on these threads."""
        return sync_to_async(func, thread_sensitive=False, executor=self.executor())


class OwnThread:
    """One thread of a background part's own (the delivery engine's), made on first use.

    Its database work never queues on the thread that ``database_call`` shares
    with the requests a person or an agent waits on, and theirs never on it;
    its connection is kept or dropped as ``database_call``'s is."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pool: ThreadPoolExecutor | None = None

    def run(self, func: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
        """``func`` as a coroutine on this thread."""
        if self.pool is None:
            self.pool = ThreadPoolExecutor(1, thread_name_prefix=self.name)
        return sync_to_async(dropping_old_connections(func), thread_sensitive=False, executor=self.pool)
