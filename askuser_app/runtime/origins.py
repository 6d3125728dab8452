"""WebSockets from our own pages only: the Origin must be the server's own.

Browsers send any page's WebSocket to us with the person's cookies, so a page
on ``http://127.0.0.1:9999`` could read what the Control UI on ``:8765``
shows. ``/mcp`` refuses another site's page the same way (``foreign_origin``),
as the MCP transport asks, but takes a request without an Origin: that is a
program, not a browser. Channels' ``AllowedHostsOriginValidator`` compares the host only; this
compares scheme, host and port, as browsers do for same-origin, with the
address the request was sent to (its Host header and scheme, ``wss`` or
``X-Forwarded-Proto: https`` behind a TLS proxy when ``SECURE_PROXY_SSL_HEADER``
says to trust it). Origins in ``CSRF_TRUSTED_ORIGINS`` are accepted too, as by
Django's CSRF check, for proxies that rewrite the Host header.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from askuser_app.runtime import http

DEFAULT_PORTS = {"http": 80, "https": 443}

Origin = tuple[str, str, int]


class SameOriginValidator:
    """ASGI middleware: a WebSocket whose Origin is not the server's own is denied."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if is_same_origin(scope):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)


def is_same_origin(scope: dict[str, Any]) -> bool:
    """The request comes from a page of the server's own (or of ``CSRF_TRUSTED_ORIGINS``)."""
    headers = _headers(scope)
    return _ours(parse_origin(headers.get(b"origin", "")), scope, headers)


def foreign_origin(scope: dict[str, Any]) -> bool:
    """The request comes from another site's page: it has an Origin, and not one of ours."""
    headers = _headers(scope)
    return b"origin" in headers and not _ours(parse_origin(headers[b"origin"]), scope, headers)


def _headers(scope: dict[str, Any]) -> dict[bytes, str]:
    return {name.lower(): value.decode("latin-1") for name, value in scope.get("headers", [])}


def _ours(origin: Origin | None, scope: dict[str, Any], headers: dict[bytes, str]) -> bool:
    if origin is None:
        return False
    if origin in trusted_origins():
        return True
    own = own_origin(scope, headers)
    return own is not None and origin == own and validate_host(own[1], settings.ALLOWED_HOSTS)


def parse_origin(text: str, default_scheme: str | None = None) -> Origin | None:
    """``scheme://host[:port]`` as (scheme, host, port), the port made explicit; None if it is not one."""
    try:
        parts = urlsplit(text if default_scheme is None else f"{default_scheme}://{text}")
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/") or parts.username:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return scheme, host.lower(), port or DEFAULT_PORTS[scheme]


def own_origin(scope: dict[str, Any], headers: dict[bytes, str]) -> Origin | None:
    """The origin the browser addressed: the Host header, with the connection's scheme."""
    host = headers.get(b"host", "")
    if not host or split_domain_port(host)[0] == "":
        return None
    return parse_origin(host, default_scheme=request_scheme(scope))


def request_scheme(scope: dict[str, Any]) -> str:
    secure = scope.get("scheme") in ("wss", "https") or http.is_secure(scope)
    return "https" if secure else "http"


def trusted_origins() -> set[Origin]:
    return {origin for origin in map(parse_origin, settings.CSRF_TRUSTED_ORIGINS) if origin is not None}
