"""How Django serves the requests that reach it: on a kept thread, in one hop.

Django's ASGI handler runs a request's synchronous parts on a thread of the
request's own (asgiref's ``ThreadSensitiveContext``), made for the request
and joined after it, so its database connection is opened and closed per
request too. And with the middleware chain run in async mode, every
synchronous middleware method and the view each cross from the event loop
to that thread and back: a dozen hops per request.

Here a request borrows a kept thread, whose connection stays open
(``CONN_MAX_AGE``), and the whole chain (middleware, view, ORM) runs on it in
one call, as under WSGI. Nothing in the chain is asynchronous, and the long
waits are served in front of Django (``longpoll``), so no wait holds a thread.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.handlers.asgi import ASGIHandler as DjangoASGIHandler

# Threads kept between requests, each with its open database connection.
KEEP_THREADS = 32


class RequestThreads:
    """Threads lent to one request at a time, and kept for the next.

    A request holds its thread for its whole life, so a thread never serves
    two requests at once; beyond ``keep`` concurrent requests, extra threads
    are made and let go afterwards, as Django would.
    """

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.idle: list[ThreadPoolExecutor] = []

    @contextlib.asynccontextmanager
    async def lend(self) -> AsyncIterator[None]:
        # The most recently returned thread first: its connection is the warmest.
        executor = self.idle.pop() if self.idle else ThreadPoolExecutor(1, thread_name_prefix="request")
        try:
            async with ThreadSensitiveContext(executor=executor):
                yield
        finally:
            if len(self.idle) < self.keep:
                self.idle.append(executor)
            else:
                executor.shutdown(wait=False)


class ASGIHandler(DjangoASGIHandler):
    def __init__(self, threads: RequestThreads | None = None) -> None:
        self.threads = threads or RequestThreads(KEEP_THREADS)
        super().__init__()

    def load_middleware(self, is_async: bool = False) -> None:
        # The chain as WSGI builds it, entered in one hop to the request's thread.
        super().load_middleware(is_async=False)
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        async with self.threads.lend():
            await super().__call__(scope, receive, send)


def get_asgi_application() -> ASGIHandler:
    """``django.core.asgi.get_asgi_application``, with this handler."""
    import django

    django.setup(set_prefix=False)
    return ASGIHandler()
