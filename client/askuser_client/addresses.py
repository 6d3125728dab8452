"""The addresses Claude Code's http hooks refuse to post to.

Claude Code 2.1 sends an http hook only to a loopback or a public address: a
private one (a home network), Tailscale's (100.64.0.0/10) and a link-local one
are refused, and a redirect is never followed. A command hook (``askuser hook``)
has no such limit.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

REFUSED: tuple[tuple[str, str], ...] = (
    ("10.0.0.0/8", "a private address"),
    ("172.16.0.0/12", "a private address"),
    ("192.168.0.0/16", "a private address"),
    ("100.64.0.0/10", "a Tailscale (carrier-grade NAT) address"),
    ("169.254.0.0/16", "a link-local address"),
    ("fc00::/7", "a private address"),
    ("fe80::/10", "a link-local address"),
)
NETWORKS = tuple((ipaddress.ip_network(network), kind) for network, kind in REFUSED)


def refused_kind(address: IPAddress) -> str | None:
    """Why Claude Code's http hooks refuse ``address`` ("a private address"), or None."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return next((kind for network, kind in NETWORKS if address in network), None)


def addresses_of(host: str) -> list[IPAddress]:
    """``host`` as addresses: itself when it is one, else what it resolves to (nothing if it does not)."""
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found))


def http_hook_refusal(url: str) -> str | None:
    """The sentence saying why Claude Code's http hooks would refuse ``url``, or None."""
    host = urlsplit(url).hostname or ""
    for address in addresses_of(host):
        kind = refused_kind(address)
        if kind is not None:
            shown = host if host == str(address) else f"{host} ({address})"
            return f"Claude Code's http hooks refuse {shown}, {kind}"
    return None
