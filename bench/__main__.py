"""``python -m bench``: measure the floors, the wake-up path, the waiting
capacity, create throughput and push latency in one run; print one table and
write docs/PERFORMANCE.md."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import resource
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import browser, capacity, floors, permission, push, report, servers, sockets, throughput, wake
from .payload import human_cookie
from .report import Table
from .rows import (
    Floors,
    capacity_rows,
    click_rows,
    floor_rows,
    permission_rows,
    push_rows,
    query_rows,
    search_rows,
    socket_rows,
    throughput_rows,
    wake_rows,
)
from .stats import Latency


@dataclass
class Plan:
    samples: int  # floors and trivial requests
    wakes: int
    pushes: int
    levels: list[int]  # parked waits, each level on a fresh server
    socket_levels: list[int]  # idle sockets, one server climbing
    socket_ramp: float  # seconds a socket level's new connections may take, plus 1 s per 35 of them
    seconds: float  # per throughput run
    search_rounds: int = 10  # admin searches: each kind of bench/history.py's SEARCHES this many times
    clicks: int = 50  # answers given in the browser
    permissions: int = 100  # hook permissions allowed in the browser
    connects: int = 2000  # sockets opened for the connect rate
    storm: int = 5000  # pages open when the server is killed


FULL = Plan(
    samples=1000, wakes=500, pushes=200, levels=[1000, 10000, 50000], socket_levels=[1000, 10000, 25000],
    socket_ramp=30, seconds=10,
)  # fmt: skip
QUICK = Plan(
    samples=200, wakes=50, pushes=30, levels=[200], socket_levels=[200], socket_ramp=20, seconds=2, search_rounds=3,
    clicks=10,
    permissions=10, connects=300, storm=500,
)  # fmt: skip


# The largest level's connections, both ends of each in this machine's processes
# (the client here, the server it starts), with room for the rest.
WANTED_FDS = 131_072


def raise_fd_limit() -> int:
    """To ``WANTED_FDS`` where the process may raise its hard limit (root, or a
    hard limit that high), else to the hard limit; the servers started from here
    inherit it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        wanted = max(hard, WANTED_FDS) if hard != resource.RLIM_INFINITY else hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
        return wanted
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard


def within_fd_limit(plan: Plan, fds: int, table: Table) -> Plan:
    """The plan with each capacity level cut to what ``fds`` file descriptors
    hold (each held connection is one in the server and one in the client),
    saying so under the table."""
    most = fds - 1000  # the server's own files, its database, the probes
    cut = {"waits": plan.levels, "sockets": plan.socket_levels}
    for kind, levels in cut.items():
        if levels and max(levels) > most:
            table.notes.append(
                f"{kind}: {max(levels):,} not attempted, the file descriptor limit is {fds:,} "
                f"(its hard limit; raising that needs CAP_SYS_RESOURCE): {most:,} instead"
            )
            cut[kind] = sorted({min(level, most) for level in levels})
    return dataclasses.replace(plan, levels=cut["waits"], socket_levels=cut["sockets"])


def stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def measure_floors(plan: Plan, data: Path, scaled: bool) -> Floors:
    env = servers.base_env(data / "floors")
    with servers.Server(env, "bench.trivial:application", ready="/") as trivial:
        http = asyncio.run(floors.http_round_trip(trivial.port, plan.samples))
        rps = {n: asyncio.run(floors.http_throughput(trivial.port, n, plan.seconds / 5)) for n in (16, 64)}
        connects = asyncio.run(sockets.connect_rate(trivial, ["/"] * plan.connects, ""))
    with servers.raw_server(env) as raw_server:
        raw = asyncio.run(floors.http_round_trip(raw_server.port, plan.samples))
    redis = asyncio.run(floors.redis_round_trip(servers.REDIS_URL, plan.samples)) if scaled else None
    return Floors(http, raw, redis, rps, connects)


def embedded(plan: Plan, data: Path, table: Table, f: Floors) -> dict:
    """SQLite and the in-memory layer: wake mode A, push, capacity, throughput, admin search."""
    env = servers.base_env(data / "sqlite")
    prepared = servers.prepare(env)
    token, login = prepared["token"], prepared["session_key"]
    with servers.Server(env) as server:
        say(f"wake latency, mode A ({plan.wakes} prompts)")
        wake_rows(table, "Wake latency, mode A: one process, SQLite, in-memory layer",
                  asyncio.run(wake.measure(server.port, server.port, token, login, plan.wakes)), f.http)  # fmt: skip
        say(f"push latency ({plan.pushes} prompts)")
        push_rows(table, asyncio.run(push.measure(server.port, server.port, token, login, plan.pushes)), f.http)
        answer_in_browser(plan, table, "SQLite", server, token, login, f)
        allow_in_browser(plan, table, "SQLite, one process", server, server, token, login, f)
        sessions = [f"bench-cap-{i}" for i in range(100)]
        prompt_ids = asyncio.run(throughput.create_prompts(server.port, token, sessions, clients=2))
    run_capacity(plan, env, table, token, login, sessions, prompt_ids)
    run_sockets(plan, env, table, prepared, sessions, prompt_ids, f)
    with servers.Server(env) as server:
        say("create throughput, SQLite")
        results = [asyncio.run(throughput.run(server.port, token, n, plan.seconds, f"sq{n}")) for n in (16, 64)]
    throughput_rows(table, "SQLite", results, f, 250)
    say("admin search over 100,000 prompts, SQLite")
    search_rows(table, "SQLite", servers.search(env, plan.search_rounds))
    return prepared


def answer_in_browser(
    plan: Plan, table: Table, database: str, server: servers.Server, token: str, login: str, f: Floors
) -> None:
    if browser.chromium() is None:
        table.notes.append(f"{database}: the answer in the browser not measured, chromium is not installed")
        return
    say(f"the answer in the browser, {database} ({plan.clicks} answers)")
    click_rows(table, database, browser.measure(server.url, token, login, plan.clicks), f.http)


def allow_in_browser(
    plan: Plan,
    table: Table,
    where: str,
    hooked: servers.Server,
    paged: servers.Server,
    token: str,
    login: str,
    f: Floors,
) -> None:
    if browser.chromium() is None:
        table.notes.append(f"{where}: the permission in the browser not measured, chromium is not installed")
        return
    say(f"a permission allowed in the browser, {where} ({plan.permissions} permissions)")
    result = permission.measure(hooked.url, paged.url, token, login, plan.permissions)
    permission_rows(table, where, result, f.http)


def run_sockets(
    plan: Plan, env: dict, table: Table, prepared: dict, sessions: list[str], ids: list[str], f: Floors
) -> None:
    """Pages opening their sockets (each up to date, showing its pending prompt), then the storm."""
    token, login, people = prepared["token"], prepared["session_key"], prepared["people"]
    with servers.Server(env) as server:
        say(f"socket connects ({plan.connects:,} pages)")
        asyncio.run(capacity.warm_up(server, ids[0], sessions[0], token, login))
        paths = [sockets.page_socket(sessions[i % len(sessions)], ids[i % len(ids)]) for i in range(plan.connects)]
        rate = asyncio.run(sockets.connect_rate(server, paths, human_cookie(login)))
        say(f"reconnect storm ({plan.storm:,} pages, the server killed and restarted)")
        try:
            storm = asyncio.run(sockets.storm(server, people, plan.storm, asked=10))
        except (RuntimeError, OSError, TimeoutError) as failed:
            # Reported, not raised: the other rows of the run still count.
            storm = None
            table.notes.append(f"reconnect storm not measured: {failed}")
    socket_rows(table, rate, storm, f)


def run_capacity(
    plan: Plan, env: dict, table: Table, token: str, login: str, sessions: list[str], ids: list[str]
) -> None:
    # Waits: a fresh server per level, so that levels do not share what a
    # server keeps. Sockets: one server climbing from level to level, as
    # opening them is what takes time (see docs/PERFORMANCE.md).
    measured: list[capacity.Held] = []
    for count in plan.levels:
        say(f"capacity: {count:,} waits")
        with servers.Server(env) as server:
            measured += asyncio.run(hold_levels(plan, server, "waits", [count], token, login, sessions, ids))
        if measured[-1].held < count:
            break
    levels = plan.socket_levels
    say(f"capacity: {', '.join(f'{count:,}' for count in levels)} sockets, one server")
    with servers.Server(env) as server:
        measured += asyncio.run(hold_levels(plan, server, "sockets", levels, token, login, sessions, ids))
    capacity_floors(env, measured)
    for held in measured:
        capacity_rows(table, held)
    for kind in ("waits", "sockets"):
        short = [held for held in measured if held.kind == kind and held.held < held.wanted]
        if short:
            count = short[0].wanted
            table.notes.append(f"{kind}: levels above {count:,} not attempted, {count:,} was not reached")


def capacity_floors(env: dict, measured: list[capacity.Held]) -> None:
    """The trivial app on Daphne holding as many as each kind's largest level held: the floor of its memory."""
    holders = {"waits": capacity.trivial_wait_holder, "sockets": capacity.trivial_socket_holder}
    for kind, holder in holders.items():
        held = [h for h in measured if h.kind == kind]
        if not held:
            continue
        top = max(held, key=lambda h: h.held)
        say(f"capacity floor: {top.held:,} {kind} held by the trivial app")
        with servers.Server(servers.base_env(Path(env["ASKUSER_DATA_DIR"])), "bench.trivial:application", "/") as t:
            top.floor_kib = asyncio.run(capacity.floor_kib(t, top.held, functools.partial(holder, t.port)))


async def hold_levels(
    plan: Plan,
    server: servers.Server,
    kind: str,
    levels: list[int],
    token: str,
    login: str,
    sessions: list[str],
    ids: list[str],
) -> list[capacity.Held]:
    await capacity.warm_up(server, ids[0], sessions[0], token, login)
    if kind == "waits":
        return await capacity.hold(
            server, kind, levels, lambda i: capacity.wait_holder(server.port, ids[i % len(ids)], token, i),
            plan.samples, ramp_limit=lambda new: 60 + new / 100, connecting=128,
        )  # fmt: skip
    return await capacity.hold(
        server, kind, levels, lambda i: capacity.socket_holder(server.port, sessions[i % len(sessions)], login, i),
        plan.samples, ramp_limit=lambda new: plan.socket_ramp + new / 35, connecting=32,
    )  # fmt: skip


def scaled(plan: Plan, data: Path, table: Table, f: Floors) -> dict:
    """PostgreSQL and Redis: wake mode B across two processes, throughput, admin search."""
    env = servers.scaled_env(data / "scaled")
    servers.recreate_bench_database()
    prepared = servers.prepare(env)
    token, login = prepared["token"], prepared["session_key"]
    with servers.Server(env) as waiting, servers.Server(env) as answering:
        say(f"wake latency, mode B ({plan.wakes} prompts)")
        result = asyncio.run(wake.measure(waiting.port, answering.port, token, login, plan.wakes))
        assert f.redis is not None
        floor = Latency(0, f.http.p50 + f.redis.p50, f.http.p99 + f.redis.p99, f.http.max + f.redis.max)
        wake_rows(table, "Wake latency, mode B: two processes, PostgreSQL, Redis", result, floor)
        answer_in_browser(plan, table, "PostgreSQL and Redis", answering, token, login, f)
        where = "PostgreSQL and Redis, the hook on one process, the tab on the other"
        allow_in_browser(plan, table, where, waiting, answering, token, login, f)
        say("create throughput, PostgreSQL")
        results = [asyncio.run(throughput.run(waiting.port, token, n, plan.seconds, f"pg{n}")) for n in (16, 64)]
    throughput_rows(table, "PostgreSQL", results, f, 200)
    say("admin search over 100,000 prompts, PostgreSQL")
    search_rows(table, "PostgreSQL", servers.search(env, plan.search_rounds))
    return prepared


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a short smoke run (a few minutes)")
    parser.add_argument("--out", type=Path, help="where to write the report (a full run: docs/PERFORMANCE.md)")
    parser.add_argument(
        "--compare", action="store_true", help="only create throughput beside awaithumans and the trivial app"
    )
    args = parser.parse_args()
    if args.compare:
        from . import compare

        return compare.run(10, 2)
    plan = QUICK if args.quick else FULL
    started = time.monotonic()
    for signum in (signal.SIGINT, signal.SIGTERM):
        # Our own handler, so that asyncio.run does not turn Ctrl-C into a
        # cancellation a measurement could swallow: stop, and clean up.
        signal.signal(signum, stop)
    cpu = report.cpu_seconds()
    fds = raise_fd_limit()
    table = Table(notes=[f"file descriptors: {fds:,}; load average at start {report.load_average()}"])
    plan = within_fd_limit(plan, fds, table)
    data = Path(tempfile.mkdtemp(prefix="askuser-bench-"))
    missing: str | None = "not checked"
    try:
        say("floors")
        missing = servers.scaled_missing()
        f = measure_floors(plan, data, scaled=missing is None)
        floor_rows(table, f)
        counts = {"SQLite": embedded(plan, data, table, f)}
        if missing:
            table.notes.append(f"PostgreSQL and Redis mode skipped, they did not answer: {missing}")
        else:
            counts["PostgreSQL"] = scaled(plan, data, table, f)
        query_rows(table, counts)
    finally:
        servers.stop_all()
        if not missing:
            servers.drop_bench_database()
        shutil.rmtree(data, ignore_errors=True)
    seconds = time.monotonic() - started
    table.notes += servers.problems
    table.notes.append(f"load average at the end {report.load_average()}; the run took {seconds / 60:.1f} min")
    table.notes.append(report.sharing(cpu, seconds))
    print(report.text_table(table))
    print("\n".join(table.notes))
    command = "make bench" + (" BENCH_ARGS=--quick" if args.quick else "")
    # A smoke run never replaces the recorded full run.
    out = args.out or (None if args.quick else servers.ROOT / "docs" / "PERFORMANCE.md")
    if out is not None:
        report.write(out, table, report.machine(), command, seconds)
        say(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
