"""``POST /api/v1/prompts``, an agent's create, served in front of Django.

Django's ASGI handler gives every request a thread and a database connection
of its own, and crosses from the event loop to that thread and back for each
synchronous middleware and the view. On the create path, the agent API's
most frequent write, that cost about as much CPU as the create itself
(docs/PERFORMANCE.md). Here a create is a Channels consumer: its token check
and ``api.create`` run in one ``database_sync_to_async`` call, on Channels'
shared database thread, whose connection stays open (``CONN_MAX_AGE``); one
thread also writes SQLite's creates one after another, without racing for
its lock. ``api.create_prompt`` serves the same ``api.create`` where a
request reaches Django directly, and documents the route.

A request this consumer would answer differently from Django, a plain-HTTP
one under ``SECURE_SSL_REDIRECT``, goes on to Django.
"""

from __future__ import annotations

import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.http import AsyncHttpConsumer
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from . import agentauth, api, contract, longpoll, services

log = logging.getLogger("askuser")

CREATE_PATH = "/api/v1/prompts"
Outcome = tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]
# Beside longpoll's: what Django's XFrameOptionsMiddleware would add.
EXTRA_HEADERS = [(b"x-frame-options", b"DENY")]


def serves(scope: dict[str, Any]) -> bool:
    """Whether the request is a create this consumer answers as Django would."""
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


class CreatePrompt(AsyncHttpConsumer):
    # No layer channel of its own: a create hears nothing from the channel
    # layer, and making one would cost each request a layer round trip.
    channel_layer_alias = None

    async def handle(self, body: bytes) -> None:
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in self.scope["headers"]}
        try:
            outcome = await self.create(headers, body) if host_allowed(self.scope, headers) else bad_host()
        except Exception:
            log.exception("A create failed")
            outcome = 500, contract.error_body("server_error", "The server failed to store the prompt."), []
        status, payload, extra = outcome
        await longpoll.respond(self.send, status, payload, [*EXTRA_HEADERS, *extra, *self.hsts()])

    @staticmethod
    @database_sync_to_async
    def create(headers: dict[str, str], body: bytes) -> Outcome:
        try:
            agent = agentauth.agent_for(headers.get("authorization"))
            created, created_headers = api.create(agent, headers.get("idempotency-key"), body)
        except (agentauth.Unauthorized, contract.ContractError, api.ApiError, services.DomainError) as exc:
            return refusal(exc)
        return 201, created, [(k.lower().encode(), v.encode()) for k, v in created_headers.items()]

    def hsts(self) -> list[tuple[bytes, bytes]]:
        """What Django's SecurityMiddleware adds over HTTPS."""
        if not settings.SECURE_HSTS_SECONDS or not is_secure(self.scope):
            return []
        value = f"max-age={settings.SECURE_HSTS_SECONDS}"
        value += "; includeSubDomains" if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS else ""
        value += "; preload" if settings.SECURE_HSTS_PRELOAD else ""
        return [(b"strict-transport-security", value.encode())]


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
