"""The front door of every HTTP request.

A bad host or a body too large is refused here with ``refuse`` from
``askuser_app/agents/refusals.py``, the one place an agent-facing refusal
becomes a response, so these refusals read as on every other route.

``FrontDoor`` wraps the HTTP router: it checks the host as Django does and bounds
the body. Nothing starts here: the background loops start with the server (``loops.py``).
"""

from __future__ import annotations

import ipaddress
import os
import threading
from collections.abc import Awaitable
from typing import Any

from asgiref.sync import markcoroutinefunction
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from askuser_app.agents.refusals import Rejected, refuse
from askuser_app.domain import contract
from askuser_app.domain.chars import ascii_int
from askuser_app.runtime import proxies
from askuser_app.runtime.http import App, Receive, Scope, Send, header, respond
from askuser_app.runtime.realtime import hub

# --- the front door ------------------------------------------------------------------------


AGENT_ROUTES = ("/api/", "/mcp")
# Methods whose body, without a declared length, is not read here.
BODILESS = ("GET", "HEAD", "OPTIONS", "DELETE")
BAD_LENGTH = Rejected(400, "bad_content_length", "The Content-Length header is not a number of bytes (ASCII digits).")


class FrontDoor:
    """Every HTTP request passes here first: the host check, the body bound."""

    def __init__(self, app: App) -> None:
        self.app = app

    @markcoroutinefunction
    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        # Not a coroutine of its own when nothing is to be read: the route's is awaited in
        # its place, so a parked wait keeps no frame of this (askuser_app/server/README.md).
        if not host_allowed(scope):
            return refuse(send, Rejected(400, "bad_host", "This host name is not served here."), scope)
        if scope["method"] in BODILESS and header(scope, b"content-length") is None:
            return self.app(scope, receive, send)
        return self.bounded(scope, receive, send)

    async def bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        bounded = await bounded_body(scope, receive, send)
        if bounded is not None:
            await self.app(scope, bounded, send)


def host_allowed(scope: Scope) -> bool:
    """Django's own host check (``HttpRequest.get_host``), before any route runs."""
    host = header(scope, b"x-forwarded-host") if settings.USE_X_FORWARDED_HOST else None
    host = host or header(scope, b"host")
    if host is None and scope.get("server"):
        host = str(scope["server"][0])
    domain, _ = split_domain_port(host or "")
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


def body_limit(path: str) -> int:
    """One cap per route family: an agent's call (the API, MCP) is a prompt's worth at most
    (the contract's 64 KiB); a page's form or a chat app's event, ``ASKUSER_MAX_BODY``."""
    if path.startswith(AGENT_ROUTES):
        return contract.MAX_BODY_BYTES
    return int(settings.ASKUSER_MAX_BODY)


async def bounded_body(scope: Scope, receive: Receive, send: Send) -> Receive | None:
    """``receive`` for a body within its route family's cap (``body_limit``), or None once 413 (or 400) is sent.

    A declared length is checked before anything is read; a chunked body is
    read here up to the limit and handed on, so nothing larger is ever
    buffered or spooled to disk."""
    limit = body_limit(scope["path"])
    too_large = Rejected(413, "body_too_large", f"The body is over {limit // 1024} KiB; send less.")
    length = header(scope, b"content-length")
    if length is not None:
        declared = ascii_int(length)
        if declared is None or declared > limit:
            await refuse(send, too_large if declared is not None else BAD_LENGTH, scope)
            return None
        return receive
    if scope["method"] in BODILESS:
        return receive
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return receive if message["type"] == "http.disconnect" else None
        size += len(message.get("body", b""))
        if size > limit:
            await refuse(send, too_large, scope)
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    replay = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

    async def replayed() -> dict[str, Any]:
        return replay.pop() if replay else await receive()

    return replayed


class ByMethod:
    """``methods`` for their HTTP methods, ``otherwise`` for the rest of a path's."""

    def __init__(self, methods: dict[str, App], otherwise: App) -> None:
        self.methods, self.otherwise = methods, otherwise

    @markcoroutinefunction
    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        # The method's application awaited in this one's place, with no frame of its own.
        return self.methods.get(scope["method"], self.otherwise)(scope, receive, send)


# --- the process ---------------------------------------------------------------------------


def from_loopback(scope: Scope) -> bool:
    """Asked on this machine: over loopback, by a client on loopback (``proxies``).

    A request relayed by a proxy that is not trusted (``X-Forwarded-For``), or
    that names its client in a ``Forwarded`` header, which askuser does not
    read, is someone else's."""
    if header(scope, b"forwarded") or (header(scope, b"x-forwarded-for") and not proxies.peer_is_trusted(scope)):
        return False
    peer, client = scope.get("client"), proxies.client_address(scope)
    return peer is not None and _loopback(str(peer[0])) and client is not None and _loopback(client)


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


async def health(scope: Scope, receive: Receive, send: Send) -> None:
    """Liveness for load balancers; what this process holds only for its own machine."""
    body: dict[str, Any] = {"status": "ok"}
    if from_loopback(scope):
        body |= {"pid": os.getpid(), "waiting": hub().waiting, "threads": threading.active_count()}
    await respond(send, 200, body, scope=scope)


async def mcp(scope: Scope, receive: Receive, send: Send) -> None:
    """``/mcp``, built on first use: the MCP SDK is imported only by processes that serve it."""
    from askuser_app.agents.mcp_server import endpoint

    await endpoint()(scope, receive, send)
