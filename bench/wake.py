"""Wake latency: a wait is parked, the human answers through the panel's form,
and the clock runs from the answer's response to the agent's wait returning."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from .client import Http, form_body, json_body, timed
from .payload import ANSWER_FORM, agent_headers, create_body, human_headers
from .stats import Latency, latency

SESSION = "bench-wake"


@dataclass
class Wake:
    wake: Latency  # answer response received → wait response received
    answer: Latency  # the answer request's own round trip
    sent_to_wake: Latency  # answer request sent → wait response received
    early: int  # waits that returned before the answer's response did


async def until_parked(probe: Http, count: int, within: float = 10.0) -> None:
    """Until /healthz of the waiting process counts ``count`` parked waits."""
    end = time.perf_counter() + within
    while (await probe.request("GET", "/healthz")).json()["waiting"] < count:
        if time.perf_counter() > end:
            raise TimeoutError(f"the wait was not parked within {within} s")
        await asyncio.sleep(0.001)


async def measure(wait_port: int, answer_port: int, token: str, login: str, samples: int) -> Wake:
    """Wait on ``wait_port``, answer on ``answer_port`` (the same process or another)."""
    agent, waiter, probe = await Http.open(wait_port), await Http.open(wait_port), await Http.open(wait_port)
    human = await Http.open(answer_port)
    auth = agent_headers(token)
    form_headers, form = form_body(ANSWER_FORM)
    create_headers, create = json_body(create_body(SESSION))
    wakes, answers, totals = [], [], []
    for _ in range(samples):
        created = await agent.request("POST", "/api/v1/prompts", {**auth, **create_headers}, create)
        assert created.status == 201, created
        prompt_id = created.json()["id"]
        waiting = asyncio.create_task(timed(waiter.request("GET", f"/api/v1/prompts/{prompt_id}?wait=30", auth)))
        await until_parked(probe, 1)
        await asyncio.sleep(0.002)  # past the wait's subscribe-then-read, onto its inbox
        sent = time.perf_counter()
        answered = await human.request(
            "POST", f"/s/{SESSION}/prompts/{prompt_id}/answer", {**human_headers(login), **form_headers}, form
        )
        returned = time.perf_counter()
        assert answered.status in (200, 302), answered
        woke, result = await waiting
        assert result.json()["status"] == "answered", result
        wakes.append(woke - returned)
        answers.append(returned - sent)
        totals.append(woke - sent)
    for http in (agent, waiter, probe, human):
        http.close()
    early = sum(1 for w in wakes if w < 0)
    return Wake(latency([max(w, 0) for w in wakes]), latency(answers), latency(totals), early)
