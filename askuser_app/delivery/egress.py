"""The one way out of the process to an address on the network: webhooks and Web Push.

The URL is checked when it is given (``domain.addresses``) and again here at
send time, after resolving its name on the engine's own resolver (``names``:
per owner, answers kept for their TTL): every address it resolves to must be
allowed by its ``Rules``. The request then goes to the very address that was
checked, with the name in the ``Host`` header and in TLS (SNI and certificate
check), so a name that resolves elsewhere a moment later (DNS rebinding)
cannot steer it; it follows no redirect and uses no proxy from the
environment.
"""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from askuser_app.delivery import names
from askuser_app.domain.addresses import (
    Address,
    Rules,
    Target,
    Unusable,
    allowed,
    allowed_by_name,
    checked,
    literal_address,
)

EXCERPT = 500  # bytes of an answer kept for the admin


class Refused(Exception):
    """At send time: the URL leads to an address the server may not POST to."""


@dataclass(frozen=True)
class Pinned:
    """A request's URL with its host replaced by the address that was checked."""

    url: httpx.URL
    host_header: str
    extensions: dict[str, str]


def readable(url: str, rules: Rules) -> Target:
    """``url`` as it is checked and sent to (``addresses.checked``), or Refused, saying why."""
    try:
        return checked(url, rules)
    except Unusable as unusable:
        if unusable.address is not None:
            raise _private(rules, unusable.address) from unusable
        raise Refused(f"refused: {rules.what} {unusable}") from unusable


async def pin(url: str, rules: Rules, within: float | None = None) -> Pinned:
    """Resolve ``url``'s host (``names``: within ``within`` seconds once its turn comes) and check
    every address; raise Refused, OSError when it does not resolve, TimeoutError or names.Crowded."""
    target = readable(url, rules)
    host, sent = target.host, target.url
    address = await _checked_address(host, target.port, rules, within)
    extensions = {"sni_hostname": host.rstrip(".")} if sent.scheme == "https" else {}
    return Pinned(sent.copy_with(host=str(address)), sent.netloc.decode("ascii"), extensions)


async def _checked_address(host: str, port: int, rules: Rules, within: float | None) -> Address:
    literal = literal_address(host)
    addresses = [literal] if literal is not None else await names.resolve(host, port, within)
    if not allowed_by_name(host, rules):
        # Every address, not only the first: the one connected to must be among those checked.
        for address in addresses:
            if not allowed(address, rules):
                raise _private(rules, address)
    return addresses[0]


def _private(rules: Rules, address: Address) -> Refused:
    return Refused(f"refused: {rules.what} resolves to a private address ({address}); {rules.hint}")


@dataclass(frozen=True)
class Answer:
    """What the receiver said: its status, headers and the start of its body."""

    status: int
    headers: httpx.Headers
    excerpt: str

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


async def post(url: str, body: bytes, headers: Mapping[str, str], rules: Rules, timeout: httpx.Timeout) -> Answer:
    """POST ``body`` once to the address checked for ``url``. A redirect is an answer like any
    other, never followed. Raises Refused, or httpx.HTTPError (a name that does not resolve, in
    time or at all, is a ConnectTimeout or ConnectError)."""
    pinned = await _pinned_in_time(url, rules, timeout.connect)
    headers = {**headers, "Host": pinned.host_header}
    # No proxy from the environment: the request must go to the address that was checked.
    async with (
        httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False, verify=trusted()) as http,
        http.stream("POST", pinned.url, content=body, headers=headers, extensions=pinned.extensions) as response,
    ):
        excerpt = await _excerpt(response)
    return Answer(response.status_code, response.headers, excerpt)


async def _pinned_in_time(url: str, rules: Rules, seconds: float | None) -> Pinned:
    """The lookup has ``seconds`` from when it starts: waiting for the owner's turn is not counted
    (``names``), and a turn that never comes is not the host's timeout."""
    try:
        return await pin(url, rules, seconds)
    except TimeoutError:
        raise httpx.ConnectTimeout("the host name did not resolve in time") from None
    except names.Crowded as crowded:
        raise httpx.ConnectError(f"not tried: {crowded}") from crowded
    except OSError as exc:  # the name did not resolve; it may later
        raise httpx.ConnectError(f"the host name did not resolve ({exc})") from exc


async def _excerpt(response: httpx.Response) -> str:
    read = b""
    async for chunk in response.aiter_raw():
        read += chunk
        if len(read) >= EXCERPT:
            break
    return read[:EXCERPT].decode(errors="replace")


def trusted() -> ssl.SSLContext:
    """The certificate authorities sends trust: ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when set (as
    OpenSSL reads them), else certifi's. Made once per value, and shared by every outbound client
    (webhooks, push, the chat apps' APIs): loading them takes some 30 ms of CPU."""
    return _trusted(os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", ""))


@functools.lru_cache(maxsize=4)
def _trusted(cert_file: str, cert_dir: str) -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=True)  # reads the two variables above
