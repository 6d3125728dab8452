"""Waiting capacity: thousands of parked agent waits, or of idle browser
sockets, held on one fresh server process; what each costs in memory and
threads, and how fast a trivial request is served meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .client import Http, WebSocket, build_request
from .floors import http_round_trip
from .payload import agent_headers, human_cookie, session_socket
from .servers import Server
from .stats import Latency

# Connections from one local address: each loopback address has its own range of
# about 28,000 ephemeral ports (/proc/sys/net/ipv4/ip_local_port_range), and the
# largest level holds 50,000 to the one port of the server.
PER_SOURCE = 20_000


def source(i: int) -> str:
    """The loopback address the ``i``-th held connection comes from."""
    return f"127.0.0.{1 + i // PER_SOURCE}"


@dataclass
class Held:
    kind: str
    wanted: int
    held: int
    failed: int
    ramp_seconds: float
    rss_base_kib: int
    rss_held_kib: int
    threads_base: int
    threads_held: int
    threads_healthz: int
    trivial_idle: Latency
    trivial_held: Latency
    floor_kib: float | None = None  # the trivial Daphne app holding as many, per connection

    @property
    def kib_per_connection(self) -> float:
        return (self.rss_held_kib - self.rss_base_kib) / max(self.held, 1)


class Holders:
    """Connections opened ``connecting`` at a time (the rest queue in the client) and kept until closed."""

    def __init__(self, connecting: int) -> None:
        self.slots = asyncio.Semaphore(connecting)
        self.tasks: list[asyncio.Task[None]] = []
        self.closers: list[Callable[[], None]] = []
        self.ready = 0
        self.failed = 0
        self.closed = False  # past the ramp's time limit: connect no more

    def add(self, hold: Callable[[Holders], Awaitable[None]]) -> None:
        self.tasks.append(asyncio.create_task(self._guarded(hold)))

    async def _guarded(self, hold: Callable[[Holders], Awaitable[None]]) -> None:
        try:
            await hold(self)
        except (OSError, asyncio.IncompleteReadError, ConnectionError):
            self.failed += 1

    async def close(self) -> None:
        for close in self.closers:
            close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def wait_holder(port: int, prompt_id: str, token: str, i: int = 0) -> Callable[[Holders], Awaitable[None]]:
    raw = build_request("GET", f"/api/v1/prompts/{prompt_id}?wait=55", port, agent_headers(token))

    async def hold(holders: Holders) -> None:
        async with holders.slots:
            if holders.closed:
                return
            http = await Http.open(port, source(i))
            holders.closers.append(http.close)
            http.writer.write(raw)
        holders.ready += 1
        while True:  # a wait that ends pending (55 s) is asked again, as agents do
            response = await http.read_response()
            if response.status != 200:
                raise ConnectionError(f"wait refused: {response.status}")
            http.writer.write(raw)

    return hold


def socket_holder(port: int, session: str, login: str, i: int = 0) -> Callable[[Holders], Awaitable[None]]:
    async def hold(holders: Holders) -> None:
        async with holders.slots:
            if holders.closed:
                return
            ws = await WebSocket.connect(port, session_socket(session), human_cookie(login), source(i))
            holders.closers.append(ws.close)
            await ws.receive()  # the current state, rendered for this socket
        holders.ready += 1
        while True:  # idle; receive() answers the server's keep-alive pings
            await ws.receive()

    return hold


def trivial_wait_holder(port: int, i: int) -> Callable[[Holders], Awaitable[None]]:
    """A request the trivial app holds until the client hangs up (``bench/trivial.py``'s ``/hold``)."""
    raw = build_request("GET", "/hold", port)

    async def hold(holders: Holders) -> None:
        async with holders.slots:
            if holders.closed:
                return
            http = await Http.open(port, source(i))
            holders.closers.append(http.close)
            http.writer.write(raw)
            await http.reader.readuntil(b"\r\n\r\n")  # its head: the app holds it from here
        holders.ready += 1
        await http.reader.read()  # held until closed

    return hold


def trivial_socket_holder(port: int, i: int) -> Callable[[Holders], Awaitable[None]]:
    """A socket the trivial app accepts and keeps, sending nothing."""

    async def hold(holders: Holders) -> None:
        async with holders.slots:
            if holders.closed:
                return
            ws = await WebSocket.connect(port, "/", "", source(i))
            holders.closers.append(ws.close)
        holders.ready += 1
        while True:
            await ws.receive()

    return hold


async def floor_kib(server: Server, count: int, holder: Callable[[int], Callable[[Holders], Awaitable[None]]]) -> float:
    """The trivial app's memory per connection with ``count`` held: Daphne's, Twisted's and asyncio's own."""
    await asyncio.sleep(0.5)
    gc.collect()
    base = server.proc_status()["rss_kib"]
    holders = Holders(128)
    try:
        for i in range(count):
            holders.add(holder(i))
        end = time.perf_counter() + 60 + count / 100
        while time.perf_counter() < end and holders.ready + holders.failed < count:
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        return (server.proc_status()["rss_kib"] - base) / max(holders.ready, 1)
    finally:
        holders.closed = True
        with contextlib.suppress(Exception):
            await holders.close()


async def health(port: int) -> dict:
    """/healthz on a connection of its own (Twisted closes keep-alive connections idle for 60 s)."""
    http = await Http.open(port)
    try:
        return (await http.request("GET", "/healthz")).json()
    finally:
        http.close()


async def hold(
    server: Server,
    kind: str,
    levels: list[int],
    holder: Callable[[int], Callable[[Holders], Awaitable[None]]],
    samples: int,
    *,
    ramp_limit: Callable[[int], float],
    connecting: int,
) -> list[Held]:
    """Open connections made by ``holder(i)`` on a warmed-up server up to each
    of ``levels`` in turn, keeping those already open, and measure what is
    held at each; a level's new connections may take ``ramp_limit(new)``
    seconds, and a level not reached ends the climb."""
    trivial_idle = await http_round_trip(server.port, samples, "/healthz")
    gc.collect()
    base = server.proc_status()
    holders = Holders(connecting)
    measured: list[Held] = []
    try:
        for count in levels:
            started, limit = time.perf_counter(), ramp_limit(count - len(holders.tasks))
            for i in range(len(holders.tasks), count):
                holders.add(holder(i))
            while time.perf_counter() - started < limit and holders.ready + holders.failed < count:
                await asyncio.sleep(0.1)
            if kind == "waits":  # parked means counted by the server's hub, not only sent
                while time.perf_counter() - started < limit and (await health(server.port))["waiting"] < holders.ready:
                    await asyncio.sleep(0.1)
            ramp = time.perf_counter() - started
            await asyncio.sleep(0.5)  # let the last handshakes and reads settle
            held_status = server.proc_status()
            counted = await health(server.port)
            held = counted["waiting"] if kind == "waits" else holders.ready
            trivial_held = await http_round_trip(server.port, samples, "/healthz")
            measured.append(
                Held(
                    kind,
                    count,
                    held,
                    holders.failed,
                    ramp,
                    base["rss_kib"],
                    held_status["rss_kib"],
                    base["threads"],
                    held_status["threads"],
                    counted["threads"],
                    trivial_idle,
                    trivial_held,
                )
            )
            if held < count:
                break
    finally:
        holders.closed = True
        with contextlib.suppress(Exception):
            await holders.close()
    return measured


async def warm_up(server: Server, prompt_id: str, session: str, token: str, login: str) -> None:
    """One wait and one socket first, so that imports and caches are not counted per connection."""
    http = await Http.open(server.port)
    for _ in range(3):
        await http.request("GET", f"/api/v1/prompts/{prompt_id}?wait=0", agent_headers(token))
        ws = await WebSocket.connect(server.port, session_socket(session), human_cookie(login))
        await ws.receive()
        ws.close()
    http.close()
