"""Push latency: an agent asks, and the owner's open session page receives the
panel over its WebSocket; the clock runs from the POST's response to the
socket's message."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from .client import Http, WebSocket, json_body
from .payload import agent_headers, create_body, human_cookie, session_socket
from .stats import Latency, latency

SESSION = "bench-push"


@dataclass
class Push:
    push: Latency
    early: int  # panels that arrived before the POST's response did


async def measure(post_port: int, socket_port: int, token: str, login: str, samples: int) -> Push:
    agent = await Http.open(post_port)
    auth = agent_headers(token)
    headers, body = json_body(create_body(SESSION))
    created = await agent.request("POST", "/api/v1/prompts", {**auth, **headers}, body)  # the session, first
    await agent.request("POST", f"/api/v1/prompts/{created.json()['id']}/cancel", auth)
    ws = await WebSocket.connect(socket_port, session_socket(SESSION), human_cookie(login))
    await ws.receive()  # the current state
    arrivals: asyncio.Queue[tuple[float, str]] = asyncio.Queue()

    async def listen() -> None:
        while True:
            text = await ws.receive()
            arrivals.put_nowait((time.perf_counter(), text))

    listener = asyncio.create_task(listen())
    gaps = []
    try:
        for _ in range(samples):
            response = await agent.request("POST", "/api/v1/prompts", {**auth, **headers}, body)
            returned = time.perf_counter()
            assert response.status == 201, response
            prompt_id = response.json()["id"]
            # A cancel's frames (the panel closed first, then the session's change) may still be
            # arriving: the new prompt's panel is the first frame that carries its form.
            arrived, html = await asyncio.wait_for(arrivals.get(), 10)
            while f"panel-form-{prompt_id}" not in html:
                arrived, html = await asyncio.wait_for(arrivals.get(), 10)
            gaps.append(arrived - returned)
            await agent.request("POST", f"/api/v1/prompts/{prompt_id}/cancel", auth)
            await asyncio.wait_for(arrivals.get(), 10)  # the panel leaving (its first frame)
    finally:
        listener.cancel()
        ws.close()
        agent.close()
    return Push(latency([max(g, 0) for g in gaps]), sum(1 for g in gaps if g < 0))
