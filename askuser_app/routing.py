"""Where each ASGI connection goes: the long-poll in front of Django, sockets to consumers."""

from __future__ import annotations

import os
import threading
from typing import Any

from django.urls import path

from . import expiry, longpoll, webhooks
from .consumers import LiveConsumer
from .realtime import hub

websocket_urlpatterns = [
    path("ws/sessions/", LiveConsumer.as_asgi()),
    path("ws/sessions/<str:key>/", LiveConsumer.as_asgi()),
]


class HttpRouter:
    """Agent waits go to the long-poll app, MCP to its endpoint, everything else to Django."""

    def __init__(self, django_app: Any) -> None:
        self.django_app = django_app
        self.mcp: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        expiry.ensure_running()
        webhooks.ensure_running()
        if scope["path"] == "/healthz":
            return await health(scope, receive, send)
        if scope["path"] in ("/mcp", "/mcp/"):
            return await self.mcp_endpoint()(scope, receive, send)
        found = longpoll.route(scope["path"]) if scope["method"] in ("GET", "HEAD") else None
        if found:
            return await longpoll.serve(*found, scope, receive, send)
        return await self.django_app(scope, receive, send)

    def mcp_endpoint(self) -> Any:
        """Built on first use: the MCP SDK is imported only by processes that serve it."""
        if self.mcp is None:
            from .mcp_server import HttpEndpoint

            # Its tool calls come back into this router, in process.
            self.mcp = HttpEndpoint(self)
        return self.mcp


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
