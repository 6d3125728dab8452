"""The one table: every figure next to its floor and its target, printed and
written with the machine it ran on into docs/PERFORMANCE.md."""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from .servers import POSTGRES, REDIS_URL, ROOT

PACKAGES = ["Django", "channels", "channels_redis", "daphne", "Twisted", "asgiref", "redis", "psycopg"]
KEPT = "\n## Analysis"  # a hand-written section of docs/PERFORMANCE.md that runs keep


@dataclass
class Row:
    figure: str
    value: float
    unit: str = "ms"
    floor: float | None = None
    target: str = ""
    passed: bool | None = None


@dataclass
class Table:
    sections: list[tuple[str, list[Row]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def section(self, title: str) -> list[Row]:
        rows: list[Row] = []
        self.sections.append((title, rows))
        return rows

    def failures(self) -> list[str]:
        return [f"{title}: {r.figure}" for title, rows in self.sections for r in rows if r.passed is False]


def amount(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "ms":
        return f"{value:.2f} ms"
    if unit == "/s":
        return f"{value:,.0f}/s"
    if unit == "KiB":
        return f"{value:.1f} KiB"
    if unit == "s":
        return f"{value:.1f} s"
    return f"{value:,.0f}"


def times(value: float, floor: float | None) -> str:
    if not floor:
        return "—"
    ratio = value / floor
    return f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.1f}×" if ratio >= 1 else f"{ratio:.2f}×"


def cells(row: Row) -> list[str]:
    ratio = times(row.value, row.floor)
    verdict = {True: "pass", False: "FAIL", None: ""}[row.passed]
    return [row.figure, amount(row.value, row.unit), amount(row.floor, row.unit), ratio, row.target, verdict]


HEAD = ["figure", "measured", "floor", "× floor", "target", "result"]


def text_table(table: Table) -> str:
    lines = [HEAD] + [cells(r) for _, rows in table.sections for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEAD))]

    def fmt(line: list[str]) -> str:
        first, *rest = line
        return "  ".join([first.ljust(widths[0]), *(c.rjust(w) for c, w in zip(rest, widths[1:], strict=True))])

    out = [fmt(HEAD), "-" * (sum(widths) + 2 * len(widths))]
    for title, rows in table.sections:
        out.append(f"[{title}]")
        out += [fmt(cells(r)) for r in rows]
    return "\n".join(out)


def markdown_table(table: Table) -> str:
    out = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for title, rows in table.sections:
        out.append(f"| **{title}** |" + " |" * (len(HEAD) - 1))
        out += ["| " + " | ".join(cells(r)) + " |" for r in rows]
    return "\n".join(out)


# --- the machine -----------------------------------------------------------------


def _first(path: str, prefix: str) -> str:
    for line in Path(path).read_text().splitlines():
        if line.startswith(prefix):
            return line.split(":", 1)[1].strip()
    return "?"


def _server_versions() -> list[str]:
    found = []
    try:
        import psycopg

        with psycopg.connect(f"{POSTGRES}/postgres") as conn:
            found.append(f"PostgreSQL {conn.execute('SHOW server_version').fetchone()[0]}")
    except Exception as exc:
        found.append(f"PostgreSQL unreachable ({exc.__class__.__name__})")
    try:
        import redis

        found.append(f"Redis {redis.Redis.from_url(REDIS_URL).info('server')['redis_version']}")
    except Exception as exc:
        found.append(f"Redis unreachable ({exc.__class__.__name__})")
    return found


def machine() -> list[str]:
    ram = int(_first("/proc/meminfo", "MemTotal").split()[0]) / 1024 / 1024
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in PACKAGES)
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True)
    return [
        f"CPU: {_first('/proc/cpuinfo', 'model name')}, {os.cpu_count()} cores",
        f"RAM: {ram:.1f} GiB",
        f"Kernel: {platform.system()} {platform.release()}",
        f"Python: {sys.version.split()[0]} ({platform.python_implementation()})",
        f"Packages: {versions}",
        f"Servers: {', '.join(_server_versions())}",
        f"Checkout: {commit.stdout.strip() or '?'}",
    ]


def load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_seconds() -> tuple[float, float]:
    """CPU time used so far by the whole machine, and by this process and its finished children."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    busy = sum(fields) - fields[3] - fields[4]  # all but idle and iowait
    own = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return busy / os.sysconf("SC_CLK_TCK"), sum(r.ru_utime + r.ru_stime for r in own)


def sharing(start: tuple[float, float], seconds: float) -> str:
    """How much of the machine others used during the run: the figures include that interference."""
    machine, own = (now - then for now, then in zip(cpu_seconds(), start, strict=True))
    cores = os.cpu_count() or 1
    return (
        f"CPU time during the run: {own:.0f} s by the benchmark and its servers, {machine - own:.0f} s by "
        f"everything else (other work, and PostgreSQL and Redis serving the benchmark), of {seconds * cores:.0f} s "
        f"on {cores} cores"
    )


# --- the document ----------------------------------------------------------------

INTRO = """\
# Performance

Written by `make bench` (`python -m bench`); do not edit the results by hand.
Reproduce with `make bench` on a clean checkout (PostgreSQL on 127.0.0.1:5432
as user `postgres`, Redis on 127.0.0.1:6379, or `BENCH_POSTGRES` and
`BENCH_REDIS_URL`; without them only the embedded mode runs; it drops and
makes anew a database of its own there, `askuser_bench` or `BENCH_DATABASE`);
`make bench BENCH_ARGS=--quick` is a short smoke run that prints its table
and writes nothing. The benchmark starts its own Daphne processes, drives them
only over 127.0.0.1 and measures its floors in the same run; client and
servers share the machine's cores, so read absolute times as orders of
magnitude and the ratios to the floors as the result.

Every place where askuser departs from the plain Django or Channels way for
speed is listed in [askuser_app/server/README.md](../askuser_app/server/README.md),
with the default it replaces, its figure from this document, the target it
serves, its guarding test and when it can go.

What each figure is:
- **Floors**: a Redis PUBLISH until the subscribed connection reads it
  (redis-py asyncio); a keep-alive GET to a trivial ASGI app served by Daphne
  (`bench/trivial.py`) and to a bare asyncio server (`bench/rawserver.py`);
  the trivial app's throughput with 16 and 64 clients.
- **Wake latency**: a prompt is created and its `GET /api/v1/prompts/{id}?wait=30`
  is parked (counted by `/healthz` `waiting`); then the human answers through
  the panel's form (`POST /s/<key>/prompts/<id>/answer` with a logged-in
  session, CSRF and `HX-Request`), and the clock runs from that answer's
  response to the wait's response. A wait that returns before the answer's own
  response counts as 0 ms. Mode A: one process, SQLite and the in-memory
  layer. Mode B: two processes, PostgreSQL and Redis, waiting on one and
  answering on the other. The floor is the HTTP floor (plus the Redis floor in
  mode B); the target is a p99 within 5 ms of it.
- **Waiting capacity**: after a warm-up, N connections are opened and held
  (waits: `GET …?wait=55` on pending prompts, asked again when they end, on a
  fresh server per level; sockets: `/ws/sessions/<key>/?since=…` as a page
  opens it, with a session cookie, held after their first message, on one
  server climbing from level to level, its "connect ramp" the time the
  level's new sockets took; up to 50,000 waits and 25,000 sockets, each
  level cut to what the file descriptor limit holds, the client's connections
  spread over loopback addresses 127.0.0.1, .2, … for their ephemeral ports).
  Memory is the growth of VmRSS over N, its floor the trivial ASGI app on
  Daphne holding as many requests (`/hold`) or sockets at the largest level;
  threads are the process's (`/proc/<pid>/status`) while held; the trivial
  request is `GET /healthz`, its floor the same request before the load.
- **Create throughput**: N agents post valid two-question prompts, each in a
  fresh session, for a fixed time on one process. The floor is the trivial
  app's throughput with as many clients. Queries per create and per answer are
  counted in process through Django's middleware chain.
- **Push latency**: from an agent's `POST /api/v1/prompts` response to the
  panel's HTML arriving on the owner's open `/ws/sessions/<key>/`.
- **The answer in the browser**: Debian's chromium (Playwright) with the
  session page open in two tabs; for each one-question prompt, the time in the
  page (`performance.now()`) from the click on an option in one tab (a
  single-select question is answered by the choice) to the panel being hidden
  (by the page itself as the answer is sent; it comes back if the answer is not
  confirmed); and until it is hidden in the other tab too (by the push, timed
  from the pages' common `timeOrigin`). The floor is the HTTP floor.
- **A permission answered in the tab**: the round trip of a coding agent's
  permission. A `PermissionRequest` is posted to `/api/v1/hooks?wait=30` with
  the agent's token, as Claude Code's http hook sends it; the session's page is
  open in Debian's chromium (Playwright); the page clicks Allow (a press, then
  the click) the moment it is clickable, with no think time, and the clock
  stops when the hook returns `allow`. A hook's panel ignores clicks for its
  first second (`data-quiet`: a click meant for what was there before never
  approves), so the round trip is given whole and without that second, which
  is the POST until the question is shown in the tab plus the click on Allow
  until the hook returns. The hook's clock is the benchmark's, the panel's the
  page's (`performance`), on one machine. Embedded: one process; scaled: the
  hook parked on one process, the tab served by the other. The floor is the
  HTTP floor; `python -m bench.permission` measures this alone.
- **WebSocket connects**: pages opening their socket 32 at a time, each as a
  page that is up to date does (`?since=<now>&shown=<its pending prompt>`),
  on a fresh server after a warm-up; the floor is the trivial ASGI app
  accepting WebSockets. "Server CPU per connect" is the server process's
  user and system time over the connects (`/proc/<pid>/stat`), which other
  load on the machine barely changes.
- **Reconnect storm**: that many pages open, of 100 people with one session
  each (50 tabs a person at 5,000 pages, within the default cap of 200
  sockets per person), each page showing its session's pending prompt; the
  server is killed (SIGKILL) and started again on its port; the pages come
  back as the browser does (full jitter from 0.5 s doubling to 30 s,
  resuming from when they lost the socket). Meanwhile the agents of 10 of
  the people replace their session's prompt. "Every page back" is the last
  socket open again; a socket may open before the server has read its
  page's state (a page in line is let in first), so "shows its new prompt"
  is the last page of those 10 sessions showing the new prompt, and a page
  that has not within 120 s of the restart is a lost prompt. The trivial
  request is `GET /healthz`, one after another, from the restart until then
  (on a new connection, its first waits in the listening queue with the
  pages'); the storm's clients connect from 127.0.0.2.
"""


def write(path: Path, table: Table, lines: list[str], command: str, seconds: float) -> None:
    kept = ""
    if path.exists() and KEPT in path.read_text():
        kept = path.read_text()[path.read_text().index(KEPT) :]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = [
        INTRO,
        f"## Results ({stamp}, `{command}`, {seconds / 60:.1f} min)\n",
        markdown_table(table),
        "",
        *(f"- {note}" for note in table.notes),
        "",
        "## Machine\n",
        *(f"- {line}" for line in lines),
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(body).rstrip() + "\n" + kept)
