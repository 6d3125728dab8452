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

import httpx

from askuser_app.domain.addresses import Address, allowed, allowed_by_name, literal_address, unmapped

ALLOW_HINT = "set ASKUSER_WEBHOOK_ALLOW_PRIVATE=1 to allow"


class Refused(Exception):
    """The callback URL leads to an address the server may not POST to."""


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
    if not allowed_by_name(host):
        # Every address, not only the first: the one connected to must be among those checked.
        for address in addresses:
            if not allowed(address):
                raise Refused(f"refused: callback_url resolves to a private address ({address}); {ALLOW_HINT}")
    return addresses[0]
