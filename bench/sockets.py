"""Browser sockets: how fast pages can open theirs, and a reconnect storm, a
server killed and restarted under thousands of open pages that come back
as the browser does (full-jitter backoff, resuming from where they lost it)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from .client import Http, WebSocket, build_request, json_body
from .payload import agent_headers, create_body, human_cookie
from .servers import Server
from .stats import Latency, latency

# The browser's schedule (static/askuser/app.js): full jitter, 0.5 s doubling to 30 s.
BASE, FACTOR, CAP = 0.5, 2, 30.0
HANDSHAKE_TIMEOUT = 10.0
# Where the storm's clients connect from. From the server's own address, a page trying
# again while the server is down may be given the server's port as its own and connect
# to itself (TCP's simultaneous open): the restart then cannot bind its port.
STORM_SOURCE = "127.0.0.2"


def page_socket(session: str, shown: str, since_ms: int | None = None) -> str:
    """A session page's socket as its page opens it: up to date, showing ``shown``."""
    since = since_ms if since_ms is not None else int(time.time() * 1000)
    return f"/ws/sessions/{session}/?since={since}&shown={shown}"


def reconnect_delay(retries: int) -> float:
    return random.random() * min(CAP, BASE * FACTOR**retries)


@dataclass
class Rate:
    per_second: float
    handshake: Latency  # one connect's time until the 101, under that load
    cpu_ms: float  # the server's CPU time per connect: what other load on the machine does not change
    failed: int = 0  # connects refused or reset


def cpu_seconds(pid: int) -> float:
    """User and system time of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def connect_rate(server: Server, paths: list[str], cookie: str, concurrency: int = 32) -> Rate:
    """Open one socket per path, ``concurrency`` at a time, and keep them until all are open."""
    port, cpu = server.port, cpu_seconds(server.pid)
    queue = list(reversed(paths))
    opened: list[WebSocket] = []
    times: list[float] = []

    failed = 0

    async def opener() -> None:
        nonlocal failed
        while queue:
            path = queue.pop()
            start = time.perf_counter()
            try:
                opened.append(await WebSocket.connect(port, path, cookie))
            except (OSError, asyncio.IncompleteReadError, ConnectionError):
                failed += 1
                continue
            times.append(time.perf_counter() - start)

    began = time.perf_counter()
    await asyncio.gather(*(opener() for _ in range(concurrency)))
    elapsed = time.perf_counter() - began
    await asyncio.sleep(0.2)  # the last connects' work after their 101
    used = cpu_seconds(server.pid) - cpu
    for ws in opened:
        ws.close()
    await asyncio.sleep(0.5)  # let the server see them go before the next figure
    return Rate(len(times) / elapsed, latency(times), used * 1000 / max(len(times), 1), failed)


@dataclass
class Page:
    """One open page in the storm: its session, the prompt it shows, what it heard."""

    session: str
    shown: str
    lost_ms: int = 0
    back_at: float | None = None
    heard: list[tuple[float, str]] = field(default_factory=list)  # when, and what
    ws: WebSocket | None = None


@dataclass
class Storm:
    pages: int
    back: int
    ready_seconds: float  # kill → the restarted server answers
    all_back_seconds: float  # kill → every page's socket open again
    # kill → the last page of the sessions asked again meanwhile shows the new
    # prompt: a socket may open before the server has read its page's state.
    caught_up_seconds: float
    lost_prompts: int  # pages of the sessions asked again that never showed the new prompt (in 120 s)
    asked_pages: int
    trivial: Latency  # GET /healthz while the pages come back


async def keep_page(port: int, page: Page, cookie: str, opening: asyncio.Semaphore) -> None:
    """Open the page's socket and hold it; when it drops, come back as the browser does."""
    async with opening:  # a handshake left hanging gives its place up, as browsers do
        path = page_socket(page.session, page.shown)
        page.ws = await asyncio.wait_for(WebSocket.connect(port, path, cookie, STORM_SOURCE), HANDSHAKE_TIMEOUT)
    retries = 0
    while True:
        try:
            if page.ws is None:  # a handshake left hanging is given up, as browsers do
                path = page_socket(page.session, page.shown, page.lost_ms)
                page.ws = await asyncio.wait_for(WebSocket.connect(port, path, cookie, STORM_SOURCE), HANDSHAKE_TIMEOUT)
                page.back_at = page.back_at or time.perf_counter()
                retries = 0
            while True:
                page.heard.append((time.perf_counter(), await page.ws.receive()))
        except (OSError, asyncio.IncompleteReadError, ConnectionError):
            if page.ws is not None:  # it was open: the page resumes from now
                page.lost_ms, page.ws = int(time.time() * 1000), None
            await asyncio.sleep(reconnect_delay(retries))
            retries += 1


async def trivial_during(port: int, until: asyncio.Event) -> list[float]:
    """GET /healthz one after another until ``until``, reconnecting when refused: from the
    moment the restarted server listens, each answer timed from its request's sending (a
    request on a new connection waits in the listening socket's queue with the pages')."""
    times: list[float] = []
    raw = build_request("GET", "/healthz", port)
    http: Http | None = None
    while not until.is_set():
        try:
            http = http or await Http.open(port, STORM_SOURCE)
            start = time.perf_counter()
            await http.send_raw(raw)
            times.append(time.perf_counter() - start)
        except (OSError, asyncio.IncompleteReadError, ConnectionError):
            http = None
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.01)
    if http:
        http.close()
    return times


async def storm(server: Server, people: list[dict[str, str]], count: int, asked: int) -> Storm:
    """``count`` pages over ``people`` (one session each, showing its pending
    prompt); kill the server, restart it, and while the pages come back each of
    the first ``asked`` people's agents replaces its prompt: each of their pages
    must show the new one."""
    sessions = [f"storm-{n}" for n in range(len(people))]
    tokens = [person["token"] for person in people]
    http = await Http.open(server.port)
    shown = [await ask(http, token, session) for token, session in zip(tokens, sessions, strict=True)]
    http.close()
    pages = [Page(sessions[i % len(people)], shown[i % len(people)]) for i in range(count)]
    cookies = [human_cookie(people[i % len(people)]["session_key"]) for i in range(count)]
    opening = asyncio.Semaphore(32)  # pages open a few dozen at a time, as they load
    tasks = [
        asyncio.create_task(keep_page(server.port, page, cookie, opening))
        for page, cookie in zip(pages, cookies, strict=True)
    ]
    opened_by = time.perf_counter() + 60 + count / 20
    while sum(1 for p in pages if p.ws is not None) < count:
        if time.perf_counter() > opened_by or any(t.done() for t in tasks):
            raise RuntimeError(f"only {sum(1 for p in pages if p.ws is not None)} of {count} pages opened")
        await asyncio.sleep(0.05)
    killed = time.perf_counter()
    server.kill()
    done = asyncio.Event()
    # From the restart, not from when it first answers: the pages come back meanwhile.
    trivial = asyncio.create_task(trivial_during(server.port, done))
    await asyncio.to_thread(server.start)
    ready = time.perf_counter()
    new_ids = await ask_again(server.port, tokens[:asked], sessions[:asked], shown[:asked])
    asked_pages = [p for p in pages if p.session in new_ids]
    deadline = ready + 120
    while time.perf_counter() < deadline and (
        any(p.back_at is None for p in pages) or any(showed(p, new_ids[p.session]) is None for p in asked_pages)
    ):
        await asyncio.sleep(0.05)
    done.set()
    backs = [p.back_at for p in pages if p.back_at is not None]
    all_back = (max(backs) - killed) if len(backs) == count else float("nan")
    shown_at = [showed(p, new_ids[p.session]) for p in asked_pages]
    caught_up = max(t for t in shown_at if t) - killed if all(shown_at) else float("nan")
    times = await trivial
    for task in tasks:
        task.cancel()
    for page in pages:
        if page.ws:
            page.ws.close()
    with contextlib.suppress(Exception):
        await asyncio.gather(*tasks, return_exceptions=True)
    lost = sum(1 for t in shown_at if t is None)
    return Storm(count, len(backs), ready - killed, all_back, caught_up, lost, len(asked_pages), latency(times))


async def ask(http: Http, token: str, session: str) -> str:
    """The agent of ``token`` asks in ``session``: the new prompt's id."""
    headers, body = json_body(create_body(session))
    created = await http.request("POST", "/api/v1/prompts", {**agent_headers(token), **headers}, body)
    assert created.status == 201, created
    return str(created.json()["id"])


def showed(page: Page, prompt_id: str) -> float | None:
    """When the page first showed the prompt; None if it has not."""
    return next((when for when, html in page.heard if f"panel-form-{prompt_id}" in html), None)


async def ask_again(port: int, tokens: list[str], sessions: list[str], old: list[str]) -> dict[str, str]:
    """Each agent cancels its session's shown prompt and asks a new one, as soon as the server is back."""
    http = await Http.open(port, STORM_SOURCE)
    ids = {}
    for token, session, prompt_id in zip(tokens, sessions, old, strict=True):
        await http.request("POST", f"/api/v1/prompts/{prompt_id}/cancel", agent_headers(token))
        ids[session] = await ask(http, token, session)
    http.close()
    return ids
