"""Which network addresses askuser may send to: public ones, unless the operator allows more.

A URL given to askuser (an agent's callback URL, a browser's push endpoint)
is judged here when it is given, if its host names an address literally (in
any form a resolver accepts, such as ``0x7f000001``), and again by
``delivery.egress`` after resolving the name, right before sending.
"""

from __future__ import annotations

import ipaddress
import socket
from ipaddress import IPv4Address, IPv6Address

from django.conf import settings

Address = IPv4Address | IPv6Address


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


def allowed_by_name(host: str) -> bool:
    if settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE:
        return True
    return host.lower().rstrip(".") in {entry.lower() for entry in settings.ASKUSER_WEBHOOK_ALLOW_HOSTS}


def allowed(address: Address) -> bool:
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
    if allowed_by_name(host):
        return None
    name = host.lower().rstrip(".")
    address = IPv4Address("127.0.0.1") if name == "localhost" or name.endswith(".localhost") else literal_address(host)
    if address is None or allowed(address):
        return None
    return (
        f"must not point to a loopback, private or other non-public address ({address}); "
        "set ASKUSER_WEBHOOK_ALLOW_PRIVATE=1 on the server to allow it"
    )
