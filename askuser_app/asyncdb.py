"""Calling the ORM from async code without holding a connection afterwards."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
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
