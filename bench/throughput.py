"""Create throughput: agents asking as fast as they can for a fixed time."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from .client import Http, build_request
from .payload import agent_headers, create_body
from .stats import Latency, latency


@dataclass
class Throughput:
    clients: int
    created: int
    per_second: float
    latency: Latency
    errors: dict[int, int]


def create_request(port: int, token: str, session: str) -> bytes:
    body = json.dumps(create_body(session)).encode()
    return build_request(
        "POST", "/api/v1/prompts", port, {**agent_headers(token), "Content-Type": "application/json"}, body
    )


async def run(
    port: int,
    token: str,
    clients: int,
    seconds: float,
    tag: str,
    make: Callable[[int, str, str], bytes] = create_request,
) -> Throughput:
    """``clients`` agents, each on its own connection and creating in a fresh
    session every time (a session holds one pending prompt); ``make`` writes
    each request (another server's create, for bench.compare). A connection the
    server resets is counted as error 0 and opened again."""
    connections = [await Http.open(port) for _ in range(clients)]
    numbers = itertools.count()
    times: list[float] = []
    errors: dict[int, int] = {}
    end = time.perf_counter() + seconds

    async def agent(http: Http) -> None:
        while time.perf_counter() < end:
            raw = make(port, token, f"{tag}-{next(numbers)}")
            start = time.perf_counter()
            try:
                response = await http.send_raw(raw)
            except (ConnectionError, asyncio.IncompleteReadError):  # counted, on a new connection
                errors[0] = errors.get(0, 0) + 1
                http.close()
                http = await Http.open(port)
                continue
            if response.status == 201:
                times.append(time.perf_counter() - start)
            else:
                errors[response.status] = errors.get(response.status, 0) + 1

    began = time.perf_counter()
    await asyncio.gather(*(agent(c) for c in connections))
    elapsed = time.perf_counter() - began
    for http in connections:
        http.close()  # the first ones; a reopened connection closes with the process
    return Throughput(clients, len(times), len(times) / elapsed, latency(times), errors)


async def create_prompts(port: int, token: str, sessions: list[str], clients: int = 16) -> list[str]:
    """One pending prompt in each session; their ids, in the same order."""
    ids: dict[str, str] = {}
    queue = list(reversed(sessions))

    async def agent() -> None:
        http = await Http.open(port)
        while queue:
            session = queue.pop()
            response = await http.send_raw(create_request(port, token, session))
            assert response.status == 201, response
            ids[session] = response.json()["id"]
        http.close()

    await asyncio.gather(*(agent() for _ in range(clients)))
    return [ids[s] for s in sessions]
