"""Where each ASGI connection goes: the long-poll in front of Django, sockets to consumers."""

from __future__ import annotations

import os
import threading
from typing import Any

from django.conf import settings
from django.urls import path

from . import agentwrites, contract, expiry, longpoll, webhooks
from .consumers import LiveConsumer
from .realtime import hub

websocket_urlpatterns = [
    path("ws/sessions/", LiveConsumer.as_asgi()),
    path("ws/sessions/<str:key>/", LiveConsumer.as_asgi()),
]


class HttpRouter:
    """Agent waits go to the long-poll app, creates to their consumer, MCP to
    its endpoint, everything else to Django."""

    def __init__(self, django_app: Any) -> None:
        self.django_app = django_app
        self.mcp: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        expiry.ensure_running()
        webhooks.ensure_running()
        if scope["path"] == "/healthz":
            return await health(scope, receive, send)
        found = longpoll.route(scope["path"]) if scope["method"] in ("GET", "HEAD") else None
        if found:
            return await longpoll.serve(*found, scope, receive, send)
        receive = await bounded_body(scope, receive, send)
        if receive is None:
            return None
        if scope["path"] in ("/mcp", "/mcp/"):
            return await self.mcp_endpoint()(scope, receive, send)
        if agentwrites.serves(scope):
            return await agentwrites.serve_create(scope, receive, send)
        return await self.django_app(scope, receive, send)

    def mcp_endpoint(self) -> Any:
        """Built on first use: the MCP SDK is imported only by processes that serve it."""
        if self.mcp is None:
            from .mcp_server import HttpEndpoint

            # Its tool calls come back into this router, in process.
            self.mcp = HttpEndpoint(self)
        return self.mcp


async def bounded_body(scope: dict[str, Any], receive: Any, send: Any) -> Any:
    """``receive`` for a body within ASKUSER_MAX_BODY, or None once 413 is sent.

    A declared length is checked before anything is read; a chunked body is
    read here up to the limit and handed on, so nothing larger is ever
    buffered or spooled to disk."""
    limit = settings.ASKUSER_MAX_BODY
    length = dict(scope["headers"]).get(b"content-length")
    if length is not None:
        if not length.isdigit() or int(length) > limit:
            await _too_large(send, limit)
            return None
        return receive
    if scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
        return receive
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return receive if message["type"] == "http.disconnect" else None
        size += len(message.get("body", b""))
        if size > limit:
            await _too_large(send, limit)
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    replay = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

    async def replayed() -> dict[str, Any]:
        return replay.pop() if replay else await receive()

    return replayed


async def _too_large(send: Any, limit: int) -> None:
    detail = f"The request body is over {limit // 1024} KiB; send less."
    await longpoll.respond(send, 413, contract.error_body("body_too_large", detail))


async def health(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Liveness for load balancers, with what this process holds."""
    body = {"status": "ok", "pid": os.getpid(), "waiting": hub().waiting, "threads": threading.active_count()}
    await longpoll.respond(send, 200, body)


async def lifespan(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Servers that speak the lifespan protocol start the expiry loop at start-up."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            expiry.ensure_running()
            webhooks.ensure_running()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
