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

The agent API (``/api/``) gets a handler of its own whose chain is
``API_MIDDLEWARE``: an agent sends a token, never a cookie, so sessions, CSRF,
login, messages and htmx would only cost it time; it keeps the security
headers and the host check.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler as DjangoASGIHandler
from django.core.handlers.exception import convert_exception_to_response
from django.utils.module_loading import import_string

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
        # The handler's private chain, which the stubs leave out.
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)  # type: ignore[has-type]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        async with self.threads.lend():
            await super().__call__(scope, receive, send)


class APIHandler(ASGIHandler):
    """The same handler with the chain ``API_MIDDLEWARE`` names instead of ``MIDDLEWARE``."""

    def load_middleware(self, is_async: bool = False) -> None:
        # Django's loader reads settings.MIDDLEWARE itself; this is its
        # synchronous path over another list (every entry here is sync-capable).
        self._view_middleware, self._template_response_middleware, self._exception_middleware = [], [], []  # type: ignore[var-annotated]
        handler = convert_exception_to_response(self._get_response)  # type: ignore[attr-defined]  # private, not in the stubs
        for path in reversed(settings.API_MIDDLEWARE):
            middleware = import_string(path)(handler)
            if hasattr(middleware, "process_view"):
                self._view_middleware.insert(0, middleware.process_view)
            if hasattr(middleware, "process_template_response"):
                self._template_response_middleware.append(middleware.process_template_response)
            if hasattr(middleware, "process_exception"):
                self._exception_middleware.append(middleware.process_exception)
            handler = convert_exception_to_response(middleware)
        self._middleware_chain = sync_to_async(handler, thread_sensitive=True)


def get_asgi_application() -> ASGIHandler:
    """``django.core.asgi.get_asgi_application``, with this handler."""
    import django

    django.setup(set_prefix=False)
    return ASGIHandler()


def get_api_application(django_app: ASGIHandler) -> APIHandler:
    """The agent API's handler, lending requests the threads of ``django_app``."""
    return APIHandler(django_app.threads)
