"""Where the server's own requests may go: public addresses only, unless the operator allows more.

A callback URL is chosen by an agent and a push endpoint by a browser, and the
server POSTs to both, so by default loopback, private, link-local, multicast
and other non-public addresses are refused: here when the URL is given, if it
names one literally (in any form a resolver accepts, such as ``0x7f000001`` or
``localhost.``), and by ``delivery.egress`` at send time after resolving the
name. An IPv6 address that carries an IPv4 one to a relay or a translator
(6to4 ``2002::/16``, Teredo ``2001::/32``, NAT64 ``64:ff9b::/96``) is judged
by that IPv4 address too.

Every reading of a URL, to check it, to name its host for the delivery engine
and to connect, is ``parsed``: the sender's own parser (httpx: IDNA,
``①②⑦`` refused), with its port as ASCII digits only (httpx reads ``+80``,
``8_0`` and ``٨٠`` as 80 where ``urllib`` refuses them), so what was checked
is what is sent, and a URL stored once is never one that cannot be read.

Each kind of request has its ``Rules``: webhooks' are lifted by
``ASKUSER_WEBHOOK_ALLOW_PRIVATE=1`` or, for some host names or networks, by
``ASKUSER_WEBHOOK_ALLOW_HOSTS``; pushes' by ``ASKUSER_PUSH_ALLOW_PRIVATE=1``.
"""

from __future__ import annotations

import enum
import ipaddress
import re
import socket
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address

import httpx
from django.conf import settings

Address = IPv4Address | IPv6Address
DEFAULT_PORTS = {"http": 80, "https": 443}
NAT64 = ipaddress.ip_network("64:ff9b::/96")
# The engine's host for a URL that cannot be sent to (a row stored before ``parsed`` refused it):
# no real host:port looks like it.
UNUSABLE_HOST = "unusable"
# httpx's grammar for the authority (httpx/_urlparse.py: URL_REGEX, AUTHORITY_REGEX), to read the
# port as it was written: httpx turns it into an int with int(), which takes more than ASCII digits.
_AUTHORITY = re.compile(r"(?:[a-zA-Z][a-zA-Z0-9+.-]*:)?//(?P<authority>[^/?#]*)")
_AFTER_HOST = re.compile(r"(?:.*@)?(?:\[.*\]|[^:@]*)(?P<port>.*)", re.DOTALL)
_PORT = re.compile(r"(?::(?P<digits>[0-9]{1,5}))?")


@dataclass(frozen=True)
class Rules:
    """Where one kind of request may go."""

    what: str  # the URL's name in a refusal: "callback_url", "the push endpoint"
    schemes: frozenset[str]
    hint: str  # how the operator allows a non-public address
    allow_private: bool = False
    allow_hosts: tuple[str, ...] = ()  # host names and networks allowed although not public
    own_port_only: bool = False  # only the scheme's own port (unless private addresses are allowed)


def webhook_rules() -> Rules:
    return Rules(
        "callback_url",
        frozenset(DEFAULT_PORTS),
        "set ASKUSER_WEBHOOK_ALLOW_PRIVATE=1 to allow",
        settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE,
        tuple(settings.ASKUSER_WEBHOOK_ALLOW_HOSTS),
    )


class Flaw(enum.Enum):
    """Why a URL is refused before anything is sent; each surface words it for its readers."""

    NOT_A_URL = "is not a URL the server can send to"
    SCHEME = "has a scheme the server does not send to, or no host"
    CREDENTIALS = "carries a user name or password"
    HOST = "writes its host with characters other than letters, digits, hyphens and dots"
    PORT = "names a port other than its scheme's own"
    PRIVATE = "names a loopback, private or other non-public address"


class Unusable(ValueError):
    """A URL the server will not send to, whatever its name resolves to."""

    def __init__(self, flaw: Flaw, address: Address | None = None) -> None:
        super().__init__(flaw.value + (f" ({address})" if address is not None else ""))
        self.flaw, self.address = flaw, address


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
    if isinstance(address, IPv6Address) and address in NAT64:
        # A translator connects to the IPv4 address in the last 32 bits, and to nothing else.
        return is_public(IPv4Address(int(address) & 0xFFFFFFFF))
    # is_global alone lets multicast (224.0.0.0/4) through.
    if not address.is_global or address.is_multicast or address.is_reserved:
        return False
    return all(is_public(carried) for carried in carried_ipv4(address))


def carried_ipv4(address: Address) -> tuple[IPv4Address, ...]:
    """The IPv4 addresses a relay reaches for an IPv6 one: 6to4's, Teredo's server and client."""
    if not isinstance(address, IPv6Address):
        return ()
    if address.sixtofour is not None:
        return (address.sixtofour,)
    return address.teredo or ()


def allowed_by_name(host: str, rules: Rules) -> bool:
    if rules.allow_private:
        return True
    return host.rstrip(".") in {entry.lower() for entry in rules.allow_hosts}


def allowed(address: Address, rules: Rules) -> bool:
    if is_public(address):
        return True
    for entry in rules.allow_hosts:
        try:
            if address in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue  # a host name, matched by _allowed_by_name
    return False


def _plain_host(host: str) -> bool:
    """A name in letters, digits, hyphens, underscores and dots, or an IPv6 address without a zone:
    nothing a resolver would read otherwise than it looks (``127.0.0.1%2e``)."""
    if ":" in host:
        return "%" not in host and literal_address(host) is not None
    return bool(host) and all(char.isascii() and (char.isalnum() or char in "-_.") for char in host)


@dataclass(frozen=True)
class Target:
    """A URL as the server reads it, to check it and to connect to it (``parsed``)."""

    url: httpx.URL

    @property
    def host(self) -> str:
        """Lower case, IDNA-encoded; an IPv6 address without its brackets."""
        return self.url.raw_host.decode("ascii")

    @property
    def port(self) -> int:
        """The port connected to: the one named, else the scheme's own."""
        return self.url.port or DEFAULT_PORTS.get(self.url.scheme, 0)

    @property
    def host_key(self) -> str:
        """host:port, the unit the delivery engine shares an owner's attempts by and pauses."""
        return f"{self.host}:{self.port}"


def parsed(url: str) -> Target:
    """``url`` as the sender reads it, or Unusable (NOT_A_URL): not parsed by it, or a port that is
    not 1 to 5 ASCII digits between 1 and 65535."""
    try:
        target = httpx.URL(url)
    except httpx.InvalidURL as bad:  # ①②⑦.0.0.1: not a host name IDNA allows
        raise Unusable(Flaw.NOT_A_URL) from bad
    written = _AUTHORITY.match(url)
    after_host = _AFTER_HOST.fullmatch(written["authority"]) if written else None
    port = _PORT.fullmatch(after_host["port"] if after_host else "")
    if port is None or (port["digits"] is not None and not 0 < int(port["digits"]) < 65536):
        raise Unusable(Flaw.NOT_A_URL)
    return Target(target)


def host_key(url: str) -> str:
    """``Target.host_key`` of ``url``, or ``UNUSABLE_HOST`` for a URL that cannot be sent to: a
    row stored before ``parsed`` refused it is recorded, and its send refused, never an error."""
    try:
        return parsed(url).host_key
    except Unusable:
        return UNUSABLE_HOST


def checked(url: str, rules: Rules) -> Target:
    """``url`` as the sender reads it (``parsed``), or Unusable: not parsed by it, another scheme,
    credentials, an odd host, another port, or an address it names literally that ``rules`` do
    not allow."""
    target = parsed(url)
    if target.url.scheme not in rules.schemes or not target.url.raw_host:
        raise Unusable(Flaw.SCHEME)
    if target.url.userinfo:
        raise Unusable(Flaw.CREDENTIALS)
    host = target.host
    if not _plain_host(host):
        raise Unusable(Flaw.HOST)
    address = _named_address(host)
    if address is not None and not (allowed_by_name(host, rules) or allowed(address, rules)):
        raise Unusable(Flaw.PRIVATE, address)
    if rules.own_port_only and target.url.port is not None and not rules.allow_private:
        raise Unusable(Flaw.PORT)
    return target


def _named_address(host: str) -> Address | None:
    name = host.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return IPv4Address("127.0.0.1")
    return literal_address(name)
