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


# The Control UI's pages: no inline script or style anywhere (htmx is configured
# not to inject styles or evaluate code, and our own JavaScript is a static file).
PAGE_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
# JSON, which no browser shows as a page: nothing may load from it or frame it.
DATA_POLICY = "default-src 'none'; frame-ancestors 'none'"
PERMISSIONS_POLICY = "camera=(), microphone=(), geolocation=(), payment=()"


def own_headers(*, data: bool) -> dict[str, str]:
    """The headers askuser adds beside Django's middleware (``web.middleware`` on Django's responses)."""
    return {"Content-Security-Policy": DATA_POLICY if data else PAGE_POLICY, "Permissions-Policy": PERMISSIONS_POLICY}


def security_headers(secure: bool, *, data: bool = True) -> dict[str, str]:
    """Every security header of a response Django does not make, as Django's middleware
    (``SecurityMiddleware``, ``XFrameOptionsMiddleware``) and ``own_headers`` set them on
    the responses it does make; ``tests/server/test_security_headers.py`` compares the two."""
    headers = {}
    if settings.SECURE_HSTS_SECONDS and secure:
        hsts = f"max-age={settings.SECURE_HSTS_SECONDS}"
        hsts += "; includeSubDomains" if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS else ""
        hsts += "; preload" if settings.SECURE_HSTS_PRELOAD else ""
        headers["Strict-Transport-Security"] = hsts
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers["X-Content-Type-Options"] = "nosniff"
    if policy := settings.SECURE_REFERRER_POLICY:
        values = [v.strip() for v in policy.split(",")] if isinstance(policy, str) else policy
        headers["Referrer-Policy"] = ",".join(values)
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers["Cross-Origin-Opener-Policy"] = settings.SECURE_CROSS_ORIGIN_OPENER_POLICY
    headers["X-Frame-Options"] = getattr(settings, "X_FRAME_OPTIONS", "DENY").upper()
    return headers | own_headers(data=data)


async def respond(
    send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None, *, scope: Scope
) -> None:
    """A JSON response sent straight over ASGI, with the security headers Django's would have."""
    payload = json.dumps(body, ensure_ascii=False).encode()
    await respond_with(send, status, payload, "application/json", headers, scope=scope)


async def respond_with(
    send: Send, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None, *, scope: Scope
) -> None:
    """A response of ``content_type`` sent straight over ASGI, with the security headers Django's would have."""
    fields = {
        "Content-Type": content_type,
        "Cache-Control": "no-store",
        **security_headers(is_secure(scope)),
        **(headers or {}),
        "Content-Length": str(len(payload)),
    }
    encoded = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in fields.items()]
    await send({"type": "http.response.start", "status": status, "headers": encoded})
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
