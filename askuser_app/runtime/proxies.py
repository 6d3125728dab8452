"""Who a request comes from: its peer, or behind trusted proxies the client they relay.

Every rule kept per client address asks ``client_address``: django-axes'
login lockout (``AXES_CLIENT_IP_CALLABLE``, through ``for_request``), the caps
on open sockets (``askuser_app/web/consumers.py``) and on parked waits
(``askuser_app/agents/waits.py``, and ``/mcp``'s waits through it), and ``/healthz``'s loopback check
(``askuser_app.server.edge.from_loopback``).

With ``ASKUSER_TRUSTED_PROXIES`` empty, the default, the client is the peer:
the address the connection comes from. A peer listed there is a proxy, and
a proxy appends the address it was asked by to ``X-Forwarded-For`` (nginx's
``$proxy_add_x_forwarded_for``, Caddy, Traefik), after whatever the client
sent in that header itself. So the header is read from the right, and only as
far as trusted proxies wrote it: the client is the rightmost entry that is not
a trusted proxy; entries to its left are the client's own words and never
believed. When every entry is a trusted proxy, the leftmost is the client. An
entry that is not an address (``unknown``, a name, a typo) ends the walk at
the trusted hop that passed it on, so such a request counts against that
proxy, never against an address nobody had.

Daphne's ``--proxy-headers`` takes the leftmost entry instead, which any
client chooses: askuser runs without it.

The scheme a proxy reports (``X-Forwarded-Proto``, Django's
``SECURE_PROXY_SSL_HEADER`` with ``ASKUSER_HTTPS=1``) is believed from a
trusted proxy only: Django would take it from any peer, so ``SchemeFromProxies``
takes it out of every other request before Django or a route reads it.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Awaitable
from ipaddress import IPv4Network, IPv6Network
from typing import Any

from asgiref.sync import markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest

from askuser_app.domain.addresses import Address, unmapped
from askuser_app.runtime.http import App, Receive, Scope, Send

FORWARDED_FOR = b"x-forwarded-for"


def client_address(scope: dict[str, Any]) -> str | None:
    """The client's address (canonical: ``::ffff:10.0.0.1`` is ``10.0.0.1``), None when the peer has none."""
    address = _parsed(str(scope["client"][0])) if scope.get("client") else None
    entries = ",".join(value.decode("latin-1") for name, value in scope["headers"] if name.lower() == FORWARDED_FOR)
    hops = entries.split(",") if entries else []
    while address is not None and is_trusted(address) and hops:
        relayed = _parsed(hops.pop())
        if relayed is None:
            break
        address = relayed
    return None if address is None else str(address)


def for_request(request: HttpRequest) -> str | None:
    """``client_address`` of a request Django serves (django-axes' ``AXES_CLIENT_IP_CALLABLE``).

    Django's request holds the peer as ``REMOTE_ADDR`` and the header joined
    with commas, whether it came through the ASGI handler or the WSGI one."""
    peer = request.META.get("REMOTE_ADDR")
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    headers = [(FORWARDED_FOR, forwarded.encode("latin-1", "replace"))] if forwarded else []
    return client_address({"client": (peer, 0) if peer else None, "headers": headers})


def peer_is_trusted(scope: dict[str, Any]) -> bool:
    """Whether the connection comes from a proxy listed in ``ASKUSER_TRUSTED_PROXIES``."""
    peer = _parsed(str(scope["client"][0])) if scope.get("client") else None
    return peer is not None and is_trusted(peer)


def is_trusted(address: Address) -> bool:
    return any(address in network for network in _networks(tuple(settings.ASKUSER_TRUSTED_PROXIES)))


@functools.lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[IPv4Network | IPv6Network, ...]:
    # Checked when the settings are read (controlui/settings.py): every entry is a network.
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def _parsed(entry: str) -> Address | None:
    """The address an entry names, with a port or not (``1.2.3.4:80``, ``[2001:db8::1]:80``); None if none."""
    entry = entry.strip()
    if entry.startswith("["):
        entry = entry[1:].partition("]")[0]
    elif entry.count(":") == 1:
        entry = entry.partition(":")[0]
    try:
        address = ipaddress.ip_address(entry)
    except ValueError:
        return None
    # A zone (fe80::1%eth0) names an interface of the proxy's machine, not a client.
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id is not None:
        return None
    return unmapped(address)


class SchemeFromProxies:
    """The proxy's scheme header (``SECURE_PROXY_SSL_HEADER``) only from a peer in
    ``ASKUSER_TRUSTED_PROXIES``: from any other it is dropped, so a request over plain HTTP
    is plain HTTP (redirected, no HSTS, its origin ``http://``) whatever it says of itself."""

    def __init__(self, app: App) -> None:
        self.app = app

    @markcoroutinefunction
    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        # Not a coroutine of its own: the application's is awaited in its place, so a
        # connection held for long keeps no frame of this (askuser_app/server/README.md).
        header = settings.SECURE_PROXY_SSL_HEADER
        if header and scope["type"] in ("http", "websocket") and not peer_is_trusted(scope):
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if not _names(header[0], k)]}
        return self.app(scope, receive, send)


def _names(meta_key: str, name: bytes) -> bool:
    """Whether a header ``name`` reaches Django as ``meta_key`` (``HTTP_X_FORWARDED_PROTO``):
    its hyphenated and its underscored spellings both do."""
    return "HTTP_" + name.decode("latin-1").upper().replace("-", "_") == meta_key
