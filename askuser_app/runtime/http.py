"""HTTP pieces shared by the routes served in front of Django and by the views:
the ASGI callable's types, reading a scope, a JSON response sent straight
over ASGI with the API's security headers, a whole body read, and the type
of a logged-in request as a view receives it."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.http import HttpRequest

if TYPE_CHECKING:
    from django.contrib.auth.models import User  # the model AUTH_USER_MODEL names
    from django_htmx.middleware import HtmxDetails

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class LoggedInRequest(HttpRequest):
    """A request as login_required and django-htmx's middleware hand it to a view."""

    user: User
    htmx: HtmxDetails


def header(scope: Scope, name: bytes) -> str | None:
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
        value = header(scope, name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1"))
        if value is not None:
            return value.split(",")[0].strip() == str(secure)
    return bool(scope.get("scheme") == "https")


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


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body (the front door has bounded it), or None on a hang-up."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)
