"""Where webhooks may go: public addresses only, unless the operator allows more.

A callback URL is chosen by the agent, and the server POSTs to it with retries
(staff can read the start of each answer), so by default loopback, private,
link-local, multicast and other non-public addresses are refused: at create
time when the URL names one literally (in any form a resolver accepts, such as
``0x7f000001``), and at send time after resolving the name. The request then
goes to the very address that was checked, with the name in the ``Host``
header and in TLS (SNI and certificate check), so a name that resolves
elsewhere a moment later (DNS rebinding) cannot steer it.

``ASKUSER_WEBHOOK_ALLOW_PRIVATE=1`` lifts the rule for servers whose agents
run next to them; ``ASKUSER_WEBHOOK_ALLOW_HOSTS`` lifts it for some host
names or networks only.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address

import httpx
from django.conf import settings

Address = IPv4Address | IPv6Address
ALLOW_HINT = "set ASKUSER_WEBHOOK_ALLOW_PRIVATE=1 to allow"


class Refused(Exception):
    """The callback URL leads to an address the server may not POST to."""


def literal_address(host: str) -> Address | None:
    """The address ``host`` names literally: 127.0.0.1, ::1, and what inet_aton reads (0x7f000001, 127.1)."""
    try:
        return unmapped(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        return IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def unmapped(address: Address) -> Address:
    """::ffff:127.0.0.1 is 127.0.0.1, and is judged as such."""
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_public(address: Address) -> bool:
    address = unmapped(address)
    # is_global alone lets multicast (224.0.0.0/4) through.
    return address.is_global and not (address.is_multicast or address.is_reserved)


def _allowed_by_name(host: str) -> bool:
    if settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE:
        return True
    return host.lower().rstrip(".") in {entry.lower() for entry in settings.ASKUSER_WEBHOOK_ALLOW_HOSTS}


def _allowed(address: Address) -> bool:
    if is_public(address):
        return True
    for entry in settings.ASKUSER_WEBHOOK_ALLOW_HOSTS:
        try:
            if address in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue  # a host name, matched by _allowed_by_name
    return False


def literal_refusal(host: str) -> str | None:
    """At create time: why a host that names its address literally is refused, or None."""
    if _allowed_by_name(host):
        return None
    name = host.lower().rstrip(".")
    address = IPv4Address("127.0.0.1") if name == "localhost" or name.endswith(".localhost") else literal_address(host)
    if address is None or _allowed(address):
        return None
    return (
        f"must not point to a loopback, private or other non-public address ({address}); "
        "set ASKUSER_WEBHOOK_ALLOW_PRIVATE=1 on the server to allow it"
    )


@dataclass(frozen=True)
class Pinned:
    """A request's URL with its host replaced by the address that was checked."""

    url: httpx.URL
    host_header: str
    extensions: dict[str, str]


async def pin(url: str) -> Pinned:
    """Resolve ``url``'s host and check every address; raise Refused, or OSError when it does not resolve."""
    target = httpx.URL(url)
    host = target.raw_host.decode("ascii")
    address = await _checked_address(host, target.port or (443 if target.scheme == "https" else 80))
    extensions = {"sni_hostname": host} if target.scheme == "https" else {}
    return Pinned(target.copy_with(host=str(address)), target.netloc.decode("ascii"), extensions)


async def _checked_address(host: str, port: int) -> Address:
    literal = literal_address(host)
    if literal is not None:
        addresses = [literal]
    else:
        found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(unmapped(ipaddress.ip_address(info[4][0])) for info in found))
    if not _allowed_by_name(host):
        # Every address, not only the first: the one connected to must be among those checked.
        for address in addresses:
            if not _allowed(address):
                raise Refused(f"refused: callback_url resolves to a private address ({address}); {ALLOW_HINT}")
    return addresses[0]
