"""The front door of every HTTP request, and the one place an agent-facing
refusal becomes a response.

``refusal(exc)`` turns any error an agent can meet (a bad token, a broken
rule, a domain error, a body too large, too many waits, a bad host) into its
status, JSON body and headers; the ninja handlers (``api``), the long-polls
(``longpoll``) and ``/mcp`` (``mcp_server``) all answer with it, so the same
refusal reads the same on every route.

``FrontDoor`` wraps the HTTP router: it checks the host as Django does, bounds
the body, and starts the process's background loops (``start_loops``).
"""

from __future__ import annotations

import ipaddress
import json
import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.http import JsonResponse
from django.http.request import split_domain_port, validate_host
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError

from . import agentauth, contract, expiry, services, webhooks
from .chat import outbox as chat_outbox
from .chat import polling as chat_polling
from .realtime import hub

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class Rejected(Exception):
    """A request refused at the edge, before any service runs."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


@dataclass(frozen=True)
class Refusal:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


MISSING_TOKEN = "Send your agent token as 'Authorization: Bearer <token>'."

# What ``refusal`` knows how to answer; anything else is a server error.
REFUSED: tuple[type[Exception], ...] = (
    agentauth.Unauthorized,
    AuthenticationError,
    contract.ContractError,
    NinjaValidationError,
    services.DomainError,
    Rejected,
    HttpError,
)


def refusal(exc: Exception) -> Refusal:
    """The status, JSON body and headers that answer ``exc`` (one of ``REFUSED``)."""
    if isinstance(exc, agentauth.Unauthorized | AuthenticationError):
        detail = str(exc) if isinstance(exc, agentauth.Unauthorized) else MISSING_TOKEN
        return Refusal(401, contract.error_body("unauthorized", detail), {"WWW-Authenticate": "Bearer"})
    if isinstance(exc, NinjaValidationError):
        # ninja names where a parameter came from ("path", "query"); the contract names the field only.
        exc = contract.ContractError(contract.describe_errors([{**e, "loc": tuple(e["loc"][1:])} for e in exc.errors]))
    if isinstance(exc, contract.ContractError):
        return Refusal(422, contract.error_body("invalid_request", exc.sentence, errors=exc.errors))
    if isinstance(exc, services.DomainError):
        retry = {"Retry-After": str(exc.extra["retry_after"])} if "retry_after" in exc.extra else {}
        return Refusal(exc.status, contract.error_body(exc.code, exc.message, **exc.extra), retry)
    if isinstance(exc, Rejected):
        return Refusal(exc.status, contract.error_body(exc.code, exc.detail))
    if isinstance(exc, HttpError):
        return Refusal(exc.status_code, contract.error_body("error", str(exc)))
    raise TypeError(f"{type(exc).__name__} is not an agent-facing refusal") from exc


def json_response(answer: Refusal) -> JsonResponse:
    """``answer`` as Django's response (the ninja views)."""
    response = JsonResponse(answer.body, status=answer.status, json_dumps_params={"ensure_ascii": False})
    for name, value in answer.headers.items():
        response[name] = value
    return response


# --- raw ASGI responses --------------------------------------------------------------------

RESPONSE_HEADERS = [
    (b"content-type", b"application/json"),
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
]


async def respond(send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    """A JSON response sent straight over ASGI, with the API's security headers."""
    payload = json.dumps(body, ensure_ascii=False).encode()
    extra = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in (headers or {}).items()]
    length = [(b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*RESPONSE_HEADERS, *extra, *length]})
    await send({"type": "http.response.body", "body": payload})


async def refuse(send: Send, exc: Exception) -> None:
    answer = refusal(exc)
    await respond(send, answer.status, answer.body, answer.headers)


# --- the front door ------------------------------------------------------------------------


class FrontDoor:
    """Every HTTP request passes here first: the host check, the body bound, the loops."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Daphne does not speak lifespan: the first request starts the loops.
        start_loops()
        if not host_allowed(scope):
            return await refuse(send, Rejected(400, "bad_host", "This host name is not served here."))
        bounded = await bounded_body(scope, receive, send)
        if bounded is not None:
            await self.app(scope, bounded, send)


def start_loops() -> None:
    """This process's background loops: deadlines, webhooks, chat messages, and the chat
    apps' events fetched without a public URL (in the embedded mode)."""
    expiry.ensure_running()
    webhooks.ensure_running()
    chat_outbox.ensure_running()
    chat_polling.ensure_running()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            name_value: str = value.decode("latin-1")
            return name_value
    return None


def is_secure(scope: Scope) -> bool:
    """``HttpRequest.is_secure()``, read from the ASGI scope: the trusted proxy's
    header (``SECURE_PROXY_SSL_HEADER``) when the request carries it, else the scheme."""
    if settings.SECURE_PROXY_SSL_HEADER:
        name, secure = settings.SECURE_PROXY_SSL_HEADER
        value = _header(scope, name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1"))
        if value is not None:
            return value.split(",")[0].strip() == str(secure)
    return bool(scope.get("scheme") == "https")


def host_allowed(scope: Scope) -> bool:
    """Django's own host check (``HttpRequest.get_host``), before any route runs."""
    host = _header(scope, b"x-forwarded-host") if settings.USE_X_FORWARDED_HOST else None
    host = host or _header(scope, b"host")
    if host is None and scope.get("server"):
        host = str(scope["server"][0])
    domain, _ = split_domain_port(host or "")
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


async def bounded_body(scope: Scope, receive: Receive, send: Send) -> Receive | None:
    """``receive`` for a body within ASKUSER_MAX_BODY, or None once 413 is sent.

    A declared length is checked before anything is read; a chunked body is
    read here up to the limit and handed on, so nothing larger is ever
    buffered or spooled to disk."""
    limit = settings.ASKUSER_MAX_BODY
    too_large = Rejected(413, "body_too_large", f"The request body is over {limit // 1024} KiB; send less.")
    length = _header(scope, b"content-length")
    if length is not None:
        if not length.isdigit() or int(length) > limit:
            await refuse(send, too_large)
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
            await refuse(send, too_large)
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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.methods.get(scope["method"], self.otherwise)(scope, receive, send)


# --- the process ---------------------------------------------------------------------------


def from_loopback(scope: Scope) -> bool:
    """Asked on this machine, not relayed by a proxy for someone else."""
    client = scope.get("client")
    if not client or _header(scope, b"x-forwarded-for") or _header(scope, b"forwarded"):
        return False
    try:
        return ipaddress.ip_address(client[0]).is_loopback
    except ValueError:
        return False


async def health(scope: Scope, receive: Receive, send: Send) -> None:
    """Liveness for load balancers; what this process holds only for its own machine."""
    body: dict[str, Any] = {"status": "ok"}
    if from_loopback(scope):
        body |= {"pid": os.getpid(), "waiting": hub().waiting, "threads": threading.active_count()}
    await respond(send, 200, body)


async def lifespan(scope: Scope, receive: Receive, send: Send) -> None:
    """Servers that speak the lifespan protocol start the loops at start-up."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            start_loops()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def mcp(scope: Scope, receive: Receive, send: Send) -> None:
    """``/mcp``, built on first use: the MCP SDK is imported only by processes that serve it."""
    from .mcp_server import endpoint

    await endpoint()(scope, receive, send)
