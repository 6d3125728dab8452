"""``POST /api/v1/prompts``, an agent's create, served in front of Django.

Django's ASGI handler gives every request a thread and a database connection
of its own, and crosses from the event loop to that thread and back for each
synchronous middleware and the view. On the create path, the agent API's
most frequent write, that cost about as much CPU as the create itself
(docs/PERFORMANCE.md). Here a create is served by a plain ASGI app, as the
long-poll is (a Channels ``AsyncHttpConsumer`` would add a channel-layer
channel and, before every message, a hop to close old connections: 10 % of
a create's CPU in the profile). Its token check and ``api.create`` run in
one ``database_sync_to_async`` call on a thread kept for creates
(``ASKUSER_CREATE_THREADS``), whose connection is kept too (SQLite's stays
open, PostgreSQL's goes back to the pool). On SQLite that is one thread, so
a process's creates queue for the write lock instead of racing for it in
SQLite's busy handler. ``api.create_prompt`` serves the same ``api.create``
where a request reaches Django directly, and documents the route.

A request this app would answer differently from Django, a plain-HTTP one
under ``SECURE_SSL_REDIRECT``, goes on to Django.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from . import agentauth, api, contract, longpoll, services

log = logging.getLogger("askuser")

CREATE_PATH = "/api/v1/prompts"
Outcome = tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]
# Beside longpoll's: what Django's XFrameOptionsMiddleware would add.
EXTRA_HEADERS = [(b"x-frame-options", b"DENY")]
# Made with the first create, once settings are read.
_threads: ThreadPoolExecutor | None = None


def threads() -> ThreadPoolExecutor:
    global _threads
    if _threads is None:
        _threads = ThreadPoolExecutor(settings.ASKUSER_CREATE_THREADS, thread_name_prefix="create")
    return _threads


def serves(scope: dict[str, Any]) -> bool:
    """Whether the request is a create this app answers as Django would."""
    if scope["method"] != "POST" or scope["path"] != CREATE_PATH:
        return False
    return not settings.SECURE_SSL_REDIRECT or is_secure(scope)


def is_secure(scope: dict[str, Any]) -> bool:
    """``HttpRequest.is_secure()``, read from the ASGI scope."""
    if settings.SECURE_PROXY_SSL_HEADER:
        name, secure = settings.SECURE_PROXY_SSL_HEADER
        header = name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1")
        value = dict(scope["headers"]).get(header)
        if value is not None:
            return value.decode("latin-1").split(",")[0].strip() == secure
    return scope.get("scheme") == "https"


async def serve_create(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The create's ASGI app: read the body, create on a create thread, respond."""
    body = await read_body(receive)
    if body is None:  # the client hung up
        return
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
    try:
        if host_allowed(scope, headers):
            outcome = await database_sync_to_async(create, thread_sensitive=False, executor=threads())(headers, body)
        else:
            outcome = bad_host()
    except Exception:
        log.exception("A create failed")
        outcome = 500, contract.error_body("server_error", "The server failed to store the prompt."), []
    status, payload, extra = outcome
    await longpoll.respond(send, status, payload, [*EXTRA_HEADERS, *extra, *hsts(scope)])


async def read_body(receive: Any) -> bytes | None:
    """The whole request body (the router has bounded it), or None on a hang-up."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def hsts(scope: dict[str, Any]) -> list[tuple[bytes, bytes]]:
    """What Django's SecurityMiddleware adds over HTTPS."""
    if not settings.SECURE_HSTS_SECONDS or not is_secure(scope):
        return []
    value = f"max-age={settings.SECURE_HSTS_SECONDS}"
    value += "; includeSubDomains" if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS else ""
    value += "; preload" if settings.SECURE_HSTS_PRELOAD else ""
    return [(b"strict-transport-security", value.encode())]


def create(headers: dict[str, str], body: bytes) -> Outcome:
    """The token check and the create, in one call on a create thread."""
    try:
        agent = agentauth.agent_for(headers.get("authorization"))
        created, created_headers = api.create(agent, headers.get("idempotency-key"), body)
    except (agentauth.Unauthorized, contract.ContractError, api.ApiError, services.DomainError) as exc:
        return refusal(exc)
    return 201, created, [(k.lower().encode(), v.encode()) for k, v in created_headers.items()]


def host_allowed(scope: dict[str, Any], headers: dict[str, str]) -> bool:
    """Django's ALLOWED_HOSTS check: the Host header, else the server's name."""
    server = (scope.get("server") or ("",))[0] or ""
    domain, _ = split_domain_port(headers.get("host") or server)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def bad_host() -> Outcome:
    return 400, contract.error_body("bad_host", "This host name is not served here."), []


def refusal(exc: Exception) -> Outcome:
    """The API's error response for a refused create, as api.py's handlers render it:
    the one place this route turns a refusal into a response."""
    if isinstance(exc, agentauth.Unauthorized):
        return 401, contract.error_body("unauthorized", str(exc)), [(b"www-authenticate", b"Bearer")]
    if isinstance(exc, contract.ContractError):
        return 422, contract.error_body("invalid_request", exc.sentence, errors=exc.errors), []
    if isinstance(exc, api.ApiError):
        return exc.status, contract.error_body(exc.code, exc.detail), []
    if isinstance(exc, services.DomainError):
        extra = [(b"retry-after", str(exc.extra["retry_after"]).encode())] if "retry_after" in exc.extra else []
        return exc.status, contract.error_body(exc.code, exc.message, **exc.extra), extra
    raise TypeError(f"not a refusal: {exc!r}")
