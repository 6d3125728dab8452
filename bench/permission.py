"""A coding agent's permission, answered in an open tab: from the hook's
``POST /api/v1/hooks?wait=…`` (a ``PermissionRequest``, as Claude Code's http
hook sends it) to that request returning ``allow``, through the question
shown in Debian's chromium (Playwright) and a click on Allow.

A hook's panel ignores clicks for its first second (``data-quiet``, so that a
click meant for what was there before never approves), so the tab clicks
Allow the moment that second is over, with no other think time. The figures:
the whole round trip, the round trip without the quiet second (the POST until
the panel shows, plus the click until the hook returns), and those two parts.
The hook's clock is the bench's; the panel's, the page's (``performance``),
on the same machine.

    python -m bench.permission --rounds 100
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

from . import browser, servers
from .payload import agent_headers
from .stats import Latency, latency

SESSION_ID = "bench-permission-0b3c9e1a-7d44-4f0e"
WAIT = 30  # seconds the hook waits: a round whose click did not count fails instead of hanging
EVENT = {
    "session_id": SESSION_ID,
    "transcript_path": "/home/bench/.claude/projects/bench.jsonl",
    "cwd": "/home/bench/app",
    "permission_mode": "default",
}
# The askuser session of that conversation, as askuser_app.domain.hooks.session_key names it.
SESSION_KEY = "cc-" + hashlib.sha256(SESSION_ID.encode()).hexdigest()[:20]
WARM = 3  # first rounds, not counted: they warm the page and the server up

# Resolves once the panel of a prompt other than ``previous`` is shown and its quiet second is
# over, having clicked Allow at that moment as a mouse does (a press, then the click). Times are
# the page's, in milliseconds since the epoch.
ROUND = """([previous, waitMs]) => new Promise((resolve, reject) => {
  // A question the tab never shows: null once the hook has stopped waiting for it.
  window.setTimeout(() => resolve(null), waitMs);
  const at = () => performance.timeOrigin + performance.now();
  let shown = 0;
  const check = () => {
    const panel = document.querySelector("#prompt-panel[data-hook]:not([hidden])");
    if (!panel || panel.dataset.promptId === previous) return false;
    if (!shown) shown = at();
    if (panel.hasAttribute("data-quiet")) return false;
    const quietEnded = at();
    const allow = [...panel.querySelectorAll(".option")].find(
      option => option.querySelector(".option-label").textContent.trim() === "Allow");
    if (!allow) { reject(new Error("no Allow in the panel")); return true; }
    allow.dispatchEvent(new PointerEvent("pointerdown", {bubbles: true}));
    allow.querySelector("input").click();
    resolve({shown, quietEnded, clicked: at(), id: panel.dataset.promptId});
    return true;
  };
  if (check()) return;
  const observer = new MutationObserver(() => { if (check()) observer.disconnect(); });
  observer.observe(document.body, {subtree: true, childList: true, attributes: true});
})"""


@dataclass
class Permission:
    total: Latency  # hook POST sent → hook returned allow
    unquiet: Latency  # the same without the quiet second: shown + answered
    shown: Latency  # hook POST sent → panel shown in the tab
    quiet: Latency  # panel shown → quiet over (the page's 1 s)
    answered: Latency  # click on Allow → hook returned allow
    unseen: int = 0  # questions the tab never showed while their hook waited (not in the figures)


def permission_event(n: int) -> dict:
    command = f"npm run build -- --round {n}"
    return {**EVENT, "hook_event_name": "PermissionRequest", "tool_name": "Bash",
            "tool_input": {"command": command, "description": "Build the app"}}  # fmt: skip


def allowed(reply: httpx.Response) -> bool:
    decision = reply.json().get("hookSpecificOutput", {}).get("decision", {})
    return reply.status_code == 200 and decision.get("behavior") == "allow"


@dataclass
class Hooked:
    reply: httpx.Response
    sent_at: float  # the epoch's clock, as the page's is
    sent: float  # the bench's
    returned_at: float
    returned: float


def hooked(agent: httpx.Client, hook: str, event: dict) -> Hooked:
    """The hook's request, timed in the thread that sends it and reads its reply: timed in the
    main thread, its clock would also run while the pool's thread starts and, at the end, while
    the browser's driver hands back the click (``page.evaluate``) after the hook returned."""
    sent_at, sent = time.time(), time.perf_counter()
    reply = agent.post(hook, json=event)
    return Hooked(reply, sent_at, sent, time.time(), time.perf_counter())


def measure(hook_url: str, page_url: str, token: str, login: str, rounds: int) -> Permission:
    """``rounds`` permission requests, one after another, each allowed in the open session page;
    the hook posted to ``hook_url``'s server, the page served by ``page_url``'s."""
    from playwright.sync_api import sync_playwright

    agent = httpx.Client(base_url=hook_url, headers=agent_headers(token), timeout=WAIT + 30)
    hook = f"/api/v1/hooks?wait={WAIT}"
    note = {**EVENT, "hook_event_name": "Notification", "message": "Working", "notification_type": "idle"}
    assert agent.post(hook, json=note).json() == {}  # the session, before its page opens
    parts: dict[str, list[float]] = {name: [] for name in ("total", "unquiet", "shown", "quiet", "answered")}
    unseen = 0
    previous = ""
    with sync_playwright() as playwright, ThreadPoolExecutor(1) as pool:
        chromium = playwright.chromium.launch(executable_path=browser.chromium(), args=browser.ARGS)
        context = chromium.new_context(base_url=page_url, viewport={"width": 1280, "height": 800})
        context.add_cookies([{"name": "sessionid", "value": login, "url": page_url}])
        page = context.new_page()
        page.goto(f"/s/{SESSION_KEY}/")
        for n in range(rounds + WARM):
            event = permission_event(n)
            asking = pool.submit(hooked, agent, hook, event)
            seen = page.evaluate(ROUND, [previous, (WAIT + 5) * 1000])
            timed = asking.result()
            reply, sent_at, sent, returned_at, returned = (
                timed.reply, timed.sent_at, timed.sent, timed.returned_at, timed.returned)  # fmt: skip
            if seen is None:
                unseen += 1
                page.reload()  # the page as the person would see it again, for the next round
                continue
            if not allowed(reply):
                raise RuntimeError(f"round {n}: the hook returned {reply.status_code} {reply.text[:200]}")
            previous = seen["id"]
            quiet = (seen["quietEnded"] - seen["shown"]) / 1000
            total = returned - sent
            parts["total"].append(total)
            parts["unquiet"].append(total - quiet)
            parts["shown"].append(seen["shown"] / 1000 - sent_at)
            parts["quiet"].append(quiet)
            parts["answered"].append(returned_at - seen["clicked"] / 1000)
        chromium.close()
    agent.close()
    return Permission(**{name: latency(times[WARM:]) for name, times in parts.items()}, unseen=unseen)


def report(label: str, result: Permission) -> str:
    def pair(figure: Latency) -> str:
        return f"p50 {figure.p50:.1f} ms, p99 {figure.p99:.1f} ms"

    return (
        f"{label}: {result.total.n} permissions allowed in the tab, "
        f"{result.unseen} never shown there while their hook waited {WAIT} s\n"
        f"  hook POST → hook returned allow:           {pair(result.total)}\n"
        f"  the same after the quiet second:           {pair(result.unquiet)}\n"
        f"    hook POST → question shown in the tab:   {pair(result.shown)}\n"
        f"    the quiet second (shown → clickable):    {pair(result.quiet)}\n"
        f"    click on Allow → hook returned allow:    {pair(result.answered)}"
    )


def run(env: dict[str, str], rounds: int, processes: int) -> Permission:
    """One server, or (``processes`` 2, scaled) the hook parked on one and the tab on the other."""
    prepared = servers.prepare(env)
    token, login = str(prepared["token"]), str(prepared["session_key"])
    with servers.Server(env) as hooked:
        if processes == 1:
            return measure(hooked.url, hooked.url, token, login, rounds)
        with servers.Server(env) as paged:
            return measure(hooked.url, paged.url, token, login, rounds)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.permission", description=__doc__)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    args = parser.parse_args()
    if browser.chromium() is None:
        print("bench.permission: chromium is not installed", file=sys.stderr)
        return 1
    data = Path(tempfile.mkdtemp(prefix="askuser-bench-permission-"))
    print(f"load average at start {os.getloadavg()}", flush=True)
    try:
        if args.only != "postgresql":
            print(report("SQLite, in-memory layer", run(servers.base_env(data / "sqlite"), args.rounds, 1)))
        if args.only != "sqlite" and servers.scaled_missing() is None:
            servers.recreate_bench_database()
            result = run(servers.scaled_env(data / "scaled"), args.rounds, 2)
            print(report("PostgreSQL and Redis, two processes", result), flush=True)
            servers.drop_bench_database()
    finally:
        servers.stop_all()
        shutil.rmtree(data, ignore_errors=True)
    print(f"load average at the end {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
