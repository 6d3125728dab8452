"""The floors, measured in the same run: what the machine, Redis and Daphne
allow before askuser does anything."""

from __future__ import annotations

import asyncio
import time

from .client import Http, build_request
from .stats import Latency, latency


async def redis_round_trip(url: str, samples: int) -> Latency:
    """PUBLISH on one connection → the message read on a subscribed one."""
    import redis.asyncio as redis

    client = redis.Redis.from_url(url)
    pubsub = client.pubsub()
    channel = f"askuser-bench-floor-{time.monotonic_ns()}"
    await pubsub.subscribe(channel)
    await pubsub.get_message(timeout=1)  # the subscribe confirmation
    times = []
    try:
        for _ in range(samples):
            start = time.perf_counter()
            await client.publish(channel, b"x")
            while await pubsub.get_message(ignore_subscribe_messages=True, timeout=1) is None:
                pass
            times.append(time.perf_counter() - start)
    finally:
        await pubsub.aclose()
        await client.aclose()
    return latency(times)


async def http_round_trip(port: int, samples: int, path: str = "/") -> Latency:
    """Sequential GETs on one keep-alive connection."""
    http = await Http.open(port)
    raw = build_request("GET", path, port)
    for _ in range(min(50, samples)):  # warm up
        await http.send_raw(raw)
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        response = await http.send_raw(raw)
        times.append(time.perf_counter() - start)
        assert response.status == 200, response
    http.close()
    return latency(times)


async def http_throughput(port: int, clients: int, seconds: float, path: str = "/") -> tuple[float, Latency]:
    """Requests per second and their latency with ``clients`` keep-alive connections busy."""
    raw = build_request("GET", path, port)
    times: list[float] = []
    connections = [await Http.open(port) for _ in range(clients)]
    end = time.perf_counter() + seconds

    async def work(http: Http) -> None:
        while time.perf_counter() < end:
            start = time.perf_counter()
            await http.send_raw(raw)
            times.append(time.perf_counter() - start)

    began = time.perf_counter()
    await asyncio.gather(*(work(c) for c in connections))
    elapsed = time.perf_counter() - began
    for http in connections:
        http.close()
    return len(times) / elapsed, latency(times)
