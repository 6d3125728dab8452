"""Host names resolved for deliveries, on the engine's own resolver, fairly per owner.

Why not asyncio's ``getaddrinfo``: it runs the C library's resolver on the
event loop's default executor, a handful of threads shared with everything
else; a name whose DNS server never answers holds a thread for the whole of
the resolver's timeouts and retries, and cancelling the wait does not free it.
A few such names of one owner filled it, and every other owner's lookups
queued behind them. Here names are resolved by c-ares (``aiodns``, pinned):
each lookup is a socket on the event loop, with no thread to hold, and a
cancelled one ends at once. It reads ``/etc/hosts`` and ``/etc/resolv.conf``
like the C library, or asks the servers ``ASKUSER_DNS_SERVERS`` names.

- **Per owner, bounded.** An owner has at most ``LOOKUPS_PER_OWNER`` lookups
  in flight in a process; the next waits for one of them, never for another
  owner's.
- **Waiting is not the host's fault.** While an attempt waits for its turn
  here, the engine's clock of it stops (``Attempt.clock``): a host's timeout
  counts from the moment its lookup starts. A turn that does not come within
  the attempt's own time is ``Crowded``, a failure retried later that pauses
  no host.
- **A lookup's resolver ends with it.** Each lookup has a c-ares channel of
  its own, closed (its queries cancelled) as the lookup ends, in time or
  not: a query given up on is not retried in the background, and nothing
  calls back into an event loop that has closed since ("Event loop is
  closed" at shutdown). A channel costs a tenth of a millisecond; answers
  are kept anyway.
- **Answers are kept for their TTL**, at most ``CACHE_SECONDS``, for up to
  ``CACHE_NAMES`` names; a failed lookup is not kept.

``egress`` checks every address an answer holds and connects to the one it
checked, from the cache or not, so a name that resolves elsewhere a moment
later cannot steer a request.
"""

from __future__ import annotations

import asyncio
import contextvars
import ipaddress
import socket
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from ipaddress import IPv4Address

import aiodns
from django.conf import settings

from askuser_app.domain.addresses import Address, unmapped

LOOKUPS_PER_OWNER = 4
CACHE_SECONDS = 300.0  # an answer is kept for its TTL, never longer than this
CACHE_NAMES = 4096


class Crowded(Exception):
    """The owner's other lookups took the attempt's whole time: no fault of the host's."""


@dataclass(frozen=True)
class Attempt:
    """The delivery attempt the current task makes (set by ``engine.attempt``)."""

    owner_id: int | None
    clock: asyncio.Timeout | None  # the attempt's deadline, stopped while it waits for a turn


ATTEMPT: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar("askuser_attempt", default=None)


@dataclass
class _Loop:
    """What one event loop keeps for its lookups: each owner's turns."""

    turns: dict[int | None, asyncio.Semaphore] = field(default_factory=dict)


_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Loop] = weakref.WeakKeyDictionary()
_cache: OrderedDict[tuple[tuple[str, ...], str], tuple[float, list[Address]]] = OrderedDict()  # until, addresses


def servers() -> tuple[str, ...]:
    """``ASKUSER_DNS_SERVERS``: ``address`` or ``address:port`` each; none, the system's."""
    return tuple(settings.ASKUSER_DNS_SERVERS)


def _here() -> _Loop:
    loop = asyncio.get_running_loop()
    here = _loops.get(loop)
    if here is None:
        here = _loops[loop] = _Loop()
    return here


async def resolve(host: str, port: int, within: float | None) -> list[Address]:
    """Every address ``host`` resolves to, in the resolver's order: kept, or looked up in the
    owner's turn within ``within`` seconds (TimeoutError); OSError when the name does not resolve."""
    name = host.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        # As ``domain.addresses`` reads them (RFC 6761), not ::1 first as c-ares answers.
        return [IPv4Address("127.0.0.1")]
    kept = _kept(host)
    if kept is not None:
        return kept
    # The channel is made once the owner's turn has come, and closed as the lookup ends.
    async with _turn(_here()), asyncio.timeout(within), _channel() as resolver:
        try:
            found = await resolver.getaddrinfo(host, port=port, type=socket.SOCK_STREAM)
        except aiodns.error.DNSError as failed:
            raise OSError(f"{host}: {failed.args[-1] if failed.args else failed}") from failed
    addresses = list(dict.fromkeys(unmapped(ipaddress.ip_address(node.addr[0].decode())) for node in found.nodes))
    if not addresses:
        raise OSError(f"{host}: no address")
    _keep(host, addresses, min(node.ttl for node in found.nodes))
    return addresses


def _channel() -> aiodns.DNSResolver:
    return aiodns.DNSResolver(nameservers=list(servers()) or None)


@asynccontextmanager
async def _turn(here: _Loop) -> AsyncIterator[None]:
    """One of the owner's lookups in flight; the attempt's clock stopped while waiting for it."""
    attempt = ATTEMPT.get() or Attempt(None, None)
    turns = here.turns.setdefault(attempt.owner_id, asyncio.Semaphore(LOOKUPS_PER_OWNER))
    if turns.locked():
        await _wait_for(turns, attempt.clock)
    else:
        await turns.acquire()
    try:
        yield
    finally:
        turns.release()


async def _wait_for(turns: asyncio.Semaphore, clock: asyncio.Timeout | None) -> None:
    """Acquire ``turns`` with the attempt's clock stopped, for at most the time it had left."""
    loop = asyncio.get_running_loop()
    when = clock.when() if clock is not None else None
    left = None if when is None else max(when - loop.time(), 0.0)
    if clock is not None:
        clock.reschedule(None)
    try:
        async with asyncio.timeout(left):
            await turns.acquire()
    except TimeoutError:
        raise Crowded("the owner's other name lookups took this attempt's time") from None
    finally:
        if clock is not None and left is not None:
            clock.reschedule(loop.time() + left)


def _kept(host: str) -> list[Address] | None:
    entry = _cache.get((servers(), host))
    if entry is None or entry[0] <= time.monotonic():
        return None
    return list(entry[1])


def _keep(host: str, addresses: list[Address], ttl: int) -> None:
    seconds = min(float(ttl), CACHE_SECONDS)
    if seconds <= 0:
        return
    key = (servers(), host)  # what one set of servers answered is not another's
    _cache[key] = (time.monotonic() + seconds, addresses)
    _cache.move_to_end(key)
    while len(_cache) > CACHE_NAMES:
        _cache.popitem(last=False)


def forget() -> None:
    """Every kept answer is looked up again (a changed setting, a test)."""
    _cache.clear()
