"""Soak with faults, in the scaled deployment: two Daphne processes behind
PostgreSQL and a Redis of the test's own.

Fifty agents ask through the Python client, humans answer through the
Control UI's form and composer endpoints, agents cancel and abort, some
prompts expire and some answers race their deadline. Meanwhile one server
is killed with SIGKILL and restarted, and Redis is restarted. Afterwards no
prompt is lost or resolved twice, every agent got exactly the stored result,
no answer was accepted after its deadline, and no request got a 5xx.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

import httpx
import pytest
from django.db import connection
from django.utils import timezone

from askuser_app.domain import contract, services
from askuser_app.models import Prompt, PromptEvent
from askuser_client.client import AskUserClient, ConflictError
from tests.conftest import QUESTION, SCALED, SCALED_REASON, log_in, make_user
from tests.servers import DaphneServer, RedisServer

AGENTS = 50
PROMPTS = int(os.environ.get("ASKUSER_SOAK_PROMPTS", "500"))
OWNERS = 5
CSRF = "soakcsrftokensoakcsrftokensoak12"  # an unmasked 32-character secret

pytestmark = [
    pytest.mark.scaled,
    pytest.mark.live,
    pytest.mark.skipif(not SCALED, reason=SCALED_REASON),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs the redis-server program"),
    pytest.mark.django_db(transaction=True),
]

# What happens to each prompt. Every agent also has one prompt with the
# shortest deadline (30 s), which either expires, is answered at the last
# moment, racing the deadline, or is given more time at the last moment, at
# each deadline, until no more may be added; the rest resolve at once.
PLANS = ["web"] * 55 + ["text"] * 20 + ["cancel"] * 12 + ["abort"] * 13
SLOW_PLANS = ["expire", "deadline", "extend"]
EXTEND_SECONDS = 2  # what each More time adds in the soak's servers


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    connection_errors: int = 0
    received: dict[str, dict] = field(default_factory=dict)  # prompt id -> the result its agent got
    plans: dict[str, str] = field(default_factory=dict)
    faults: list[str] = field(default_factory=list)

    def response(self, response: httpx.Response) -> None:
        with self.lock:
            self.statuses[response.status_code] += 1
            if response.status_code >= 500:
                request = response.request
                self.server_errors.append(f"{request.method} {request.url.path} {response.status_code}")

    def resolved(self) -> int:
        with self.lock:
            return len(self.received)


def agent_work(index: int, token: str, urls: list[str], tally: Tally, prompts: int) -> None:
    rng = random.Random(index)
    hooks = {"response": [tally.response]}
    slow_turn = rng.randrange(prompts)
    with AskUserClient(urls[index % 2], token, wait=10, event_hooks=hooks) as client:
        for n in range(prompts):
            plan = rng.choice(SLOW_PLANS) if n == slow_turn else rng.choice(PLANS)
            run_id = f"a{index}-r{n}"
            timeout = 30 if plan in SLOW_PLANS else 600
            created = client.create([QUESTION], session=f"agent-{index}", run_id=run_id, timeout_seconds=timeout)
            with tally.lock:
                tally.plans[created["id"]] = plan
            if plan in ("cancel", "abort"):
                time.sleep(rng.uniform(0, 0.05))
                with contextlib.suppress(ConflictError):  # a human may get there first
                    client.cancel(created["id"]) if plan == "cancel" else client.abort_run(run_id)
            result = client.wait(created["id"])
            with tally.lock:
                tally.received[created["id"]] = result


class Human:
    """A logged-in person answering through the Control UI's endpoints."""

    def __init__(self, user, urls: list[str], tally: Tally) -> None:
        self.user, self.urls, self.tally = user, urls, tally
        cookies = {"sessionid": log_in(user), "csrftoken": CSRF}
        headers = {"X-CSRFToken": CSRF, "HX-Request": "true"}
        self.http = [httpx.Client(base_url=u, cookies=cookies, headers=headers, timeout=20) for u in urls]
        self.turn = 0

    def post(self, path: str, data: dict) -> None:
        for _ in range(20):  # a killed server: try the other one
            self.turn += 1
            try:
                self.tally.response(self.http[self.turn % 2].post(path, data=data))
                return
            except httpx.TransportError:
                with self.tally.lock:
                    self.tally.connection_errors += 1
                time.sleep(0.2)

    def answer(self, prompt: Prompt, plan: str) -> None:
        key = prompt.session.key
        if plan == "text":
            text = random.choice(["1", "2", "production", "staging (recommended)"])
            self.post(f"/s/{key}/messages", {"text": text})
        else:
            form = {"q-deploy_target": random.choice(["0", "1"]), "action": "answer"}
            self.post(f"/s/{key}/prompts/{prompt.pk}/answer", form)

    def work(self, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                now = timezone.now()
                pending = Prompt.objects.filter(session__owner=self.user, status="pending").select_related("session")
                for prompt in pending:
                    with self.tally.lock:
                        plan = self.tally.plans.get(str(prompt.pk))
                    if plan in ("web", "text"):
                        self.answer(prompt, plan)
                    elif plan == "deadline" and prompt.expires_at - now < timedelta(milliseconds=150):
                        self.answer(prompt, "web")  # racing the deadline, either side of it
                    elif plan == "extend" and prompt.expires_at - now < timedelta(milliseconds=150):
                        self.post(f"/s/{prompt.session.key}/prompts/{prompt.pk}/extend", {})  # More time, racing it
                time.sleep(0.02)
        finally:
            connection.close()


def test_no_prompt_is_lost_or_doubled_through_kills_and_restarts(server_env):
    redis = RedisServer().start()
    env = {
        **server_env,
        "REDIS_URL": redis.url,
        "ASKUSER_RATE_LIMIT": "0",
        "ASKUSER_EXTEND_SECONDS": str(EXTEND_SECONDS),
    }
    servers = [DaphneServer(env).start(), DaphneServer(env).start()]
    urls = [s.url for s in servers]
    owners = [make_user(f"owner{i}") for i in range(OWNERS)]
    tokens = [services.create_agent(f"agent{i}", owners[i % OWNERS])[1] for i in range(AGENTS)]
    tally, stop = Tally(), threading.Event()
    humans = [threading.Thread(target=Human(o, urls, tally).work, args=(stop,)) for o in owners]
    per_agent = PROMPTS // AGENTS
    agents = [threading.Thread(target=agent_work, args=(i, t, urls, tally, per_agent)) for i, t in enumerate(tokens)]
    try:
        for thread in humans + agents:
            thread.start()
        inject_faults(servers, redis, tally, total=per_agent * AGENTS)
        for thread in agents:
            thread.join(timeout=300)
        assert not any(t.is_alive() for t in agents), "some agents never got their results"
    finally:
        stop.set()
        for thread in humans:
            thread.join(timeout=30)
        for server in servers:
            server.stop()
        redis.stop()

    report(tally)
    check_outcomes(tally, total=per_agent * AGENTS)


def inject_faults(servers: list[DaphneServer], redis: RedisServer, tally: Tally, total: int) -> None:
    """Kill server 0 once a third of the prompts resolved; restart Redis at two thirds."""
    started = time.monotonic()
    wait_for(lambda: tally.resolved() >= total // 3)
    servers[0].kill()
    tally.faults.append(f"SIGKILL of a server at {tally.resolved()} resolved, {time.monotonic() - started:.0f} s in")
    servers[0].start()
    wait_for(lambda: tally.resolved() >= 2 * total // 3)
    redis.stop()
    tally.faults.append(f"Redis restarted at {tally.resolved()} resolved, {time.monotonic() - started:.0f} s in")
    redis.start()
    wait_for(lambda: tally.resolved() >= total)
    tally.faults.append(f"all {total} resolved {time.monotonic() - started:.0f} s in")


def wait_for(condition, within: float = 240) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the soak stopped making progress"
        time.sleep(0.05)


def report(tally: Tally) -> None:
    outcomes = Counter(f"{p.status}/{p.reason or 'answered'}/{p.surface or '-'}" for p in Prompt.objects.all())
    print(f"\nsoak: {Prompt.objects.count()} prompts, plans {dict(Counter(tally.plans.values()))}")
    print(f"soak: outcomes {dict(outcomes)}")
    print(f"soak: faults {tally.faults}")
    print(
        f"soak: HTTP statuses {dict(tally.statuses)}, connection errors {tally.connection_errors}, "
        f"5xx {len(tally.server_errors)}"
    )


def check_outcomes(tally: Tally, total: int) -> None:
    prompts = {str(p.pk): p for p in Prompt.objects.all()}
    assert len(prompts) == total == len(tally.received)
    assert not [p for p in prompts.values() if p.status == "pending"], "a prompt was never resolved"
    events = PromptEvent.objects.filter(kind__in=PromptEvent.TERMINAL)
    terminal = Counter(str(pid) for pid in events.values_list("prompt_id", flat=True))
    doubled = [pid for pid, count in terminal.items() if count != 1]
    assert not doubled and len(terminal) == total, f"prompts without exactly one terminal event: {doubled}"
    mismatched = [pid for pid, result in tally.received.items() if result != prompts[pid].result]
    assert not mismatched, f"agents got a result other than the stored one: {mismatched[:5]}"
    late = [p.pk for p in prompts.values() if p.status == "answered" and p.resolved_at >= p.expires_at]
    assert not late, f"answers accepted after the deadline: {late}"
    check_extensions(prompts)
    assert tally.server_errors == [], tally.server_errors
    print(f"soak: lost 0, doubled 0, late answers 0, 5xx {len(tally.server_errors)}")


def check_extensions(prompts: dict[str, Prompt]) -> None:
    """More time that won was never followed by an expiry at the deadline it replaced."""
    trails: dict[str, list[PromptEvent]] = {}
    for event in PromptEvent.objects.filter(kind__in=["extended", "expired"]).order_by("at"):
        trails.setdefault(str(event.prompt_id), []).append(event)
    extended = 0
    for pid, trail in trails.items():
        moves = [e for e in trail if e.kind == "extended"]
        prompt = prompts[pid]
        assert len(moves) == prompt.extended <= 3, f"{pid}: the count and the trail differ"
        if not moves:
            continue
        extended += 1
        assert [e.kind for e in trail][: len(moves)] == ["extended"] * len(moves), f"{pid}: extended after an expiry"
        assert contract.iso(prompt.expires_at) == moves[-1].detail["deadline"], f"{pid}: the deadline is not the last"
        if prompt.reason == "expired":
            assert prompt.resolved_at == prompt.expires_at, f"{pid}: expired at an old deadline"
    print(f"soak: {extended} prompts given more time, none expired at an old deadline")
