"""``python -m bench``: measure the floors, the wake-up path, the waiting
capacity, create throughput and push latency in one run; print one table and
write docs/PERFORMANCE.md."""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import capacity, floors, push, report, servers, throughput, wake
from .report import Row, Table
from .stats import Latency


@dataclass
class Plan:
    samples: int  # floors and trivial requests
    wakes: int
    pushes: int
    levels: list[int]
    socket_ramp: float  # seconds a socket level may take to connect
    seconds: float  # per throughput run


FULL = Plan(samples=1000, wakes=500, pushes=200, levels=[1000, 5000, 10000], socket_ramp=60, seconds=10)
QUICK = Plan(samples=200, wakes=50, pushes=30, levels=[200], socket_ramp=20, seconds=2)


def raise_fd_limit() -> int:
    """Up to the hard limit; the servers started from here inherit it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


@dataclass
class Floors:
    http: Latency
    raw: Latency
    redis: Latency
    rps: dict[int, tuple[float, Latency]]


def measure_floors(plan: Plan, data: Path) -> Floors:
    env = servers.base_env(data / "floors")
    with servers.Server(env, "bench.trivial:application", ready="/") as trivial:
        http = asyncio.run(floors.http_round_trip(trivial.port, plan.samples))
        rps = {n: asyncio.run(floors.http_throughput(trivial.port, n, plan.seconds / 5)) for n in (16, 64)}
    with servers.raw_server(env) as raw_server:
        raw = asyncio.run(floors.http_round_trip(raw_server.port, plan.samples))
    redis = asyncio.run(floors.redis_round_trip(servers.REDIS_URL, plan.samples))
    return Floors(http, raw, redis, rps)


def floor_rows(table: Table, f: Floors) -> None:
    rows = table.section("Floors")
    rows += [
        Row("Redis PUBLISH → subscriber p50", f.redis.p50),
        Row("Redis PUBLISH → subscriber p99", f.redis.p99),
        Row("HTTP round trip, trivial ASGI app on Daphne p50", f.http.p50),
        Row("HTTP round trip, trivial ASGI app on Daphne p99", f.http.p99),
        Row("HTTP round trip, bare asyncio server p50", f.raw.p50),
        Row("HTTP round trip, bare asyncio server p99", f.raw.p99),
    ]
    rows += [Row(f"trivial app on Daphne, {n} clients", rps, "/s") for n, (rps, _) in f.rps.items()]


def wake_rows(table: Table, title: str, result: wake.Wake, floor: Latency) -> None:
    target = f"≤ {floor.p99 + 5:.2f} ms"
    rows = table.section(title)
    rows += [
        Row("answer returned → wait returned p50", result.wake.p50, floor=floor.p50),
        Row("answer returned → wait returned p99", result.wake.p99, floor=floor.p99, target=target,
            passed=result.wake.p99 <= floor.p99 + 5),
        Row("answer returned → wait returned max", result.wake.max, floor=floor.max),
        Row("answer sent → wait returned p50", result.sent_to_wake.p50, floor=floor.p50),
        Row("answer sent → wait returned p99", result.sent_to_wake.p99, floor=floor.p99),
        Row("the answer request itself p50", result.answer.p50, floor=floor.p50),
        Row("the answer request itself p99", result.answer.p99, floor=floor.p99),
        Row("waits back before the answer's response", result.early, "", target=f"of {result.wake.n}"),
    ]  # fmt: skip


def capacity_rows(table: Table, held: capacity.Held) -> None:
    what = "agent waits" if held.kind == "waits" else "idle WebSockets"
    spare = held.threads_base + 16  # the executors' few workers, not one per connection
    rows = table.section(f"Capacity: {held.wanted:,} {what}, one process")
    rows += [
        Row("held", held.held, "", target=f"{held.wanted:,}", passed=held.held >= held.wanted and not held.failed),
        Row("connect ramp", held.ramp_seconds, "s"),
        Row("memory per connection", held.kib_per_connection, "KiB", target="< 40 KiB",
            passed=held.kib_per_connection < 40),
        Row("process threads while held", held.threads_held, "", floor=held.threads_base,
            target=f"≤ {spare} (no thread per waiter)", passed=held.threads_held <= spare),
        Row("threads by /healthz while held", held.threads_healthz, ""),
        Row("GET /healthz p50 while held", held.trivial_held.p50, floor=held.trivial_idle.p50),
        Row("GET /healthz p99 while held", held.trivial_held.p99, floor=held.trivial_idle.p99, target="< 25 ms",
            passed=held.trivial_held.p99 < 25),
    ]  # fmt: skip
    if held.failed:
        table.notes.append(f"{held.kind} at {held.wanted:,}: {held.failed} connections failed")


def throughput_rows(table: Table, database: str, results: list[throughput.Throughput], f: Floors, target: int) -> None:
    rows = table.section(f"Create throughput, {database}, one process")
    for r in results:
        rps, trivial = f.rps[r.clients]
        gate = r.clients == 16
        rows += [
            Row(f"{r.clients} clients: prompts created", r.per_second, "/s", floor=rps,
                target=f"≥ {target}/s" if gate else "", passed=r.per_second >= target if gate else None),
            Row(f"{r.clients} clients: create p50", r.latency.p50, floor=trivial.p50),
            Row(f"{r.clients} clients: create p99", r.latency.p99, floor=trivial.p99,
                target="< 150 ms" if gate and database == "SQLite" else "",
                passed=r.latency.p99 < 150 if gate and database == "SQLite" else None),
        ]  # fmt: skip
        if r.errors:
            table.notes.append(f"{database}, {r.clients} clients: refused creates {r.errors}")


def push_rows(table: Table, result: push.Push, floor: Latency) -> None:
    rows = table.section("Push latency (POST returned → panel on the owner's WebSocket), SQLite")
    rows += [
        Row("p50", result.push.p50, floor=floor.p50),
        Row("p99", result.push.p99, floor=floor.p99, target="< 20 ms", passed=result.push.p99 < 20),
        Row("max", result.push.max, floor=floor.max),
    ]


def embedded(plan: Plan, data: Path, table: Table, f: Floors) -> dict:
    """SQLite and the in-memory layer: wake mode A, push, capacity, throughput."""
    env = servers.base_env(data / "sqlite")
    prepared = servers.prepare(env)
    token, login = prepared["token"], prepared["session_key"]
    with servers.Server(env) as server:
        say(f"wake latency, mode A ({plan.wakes} prompts)")
        wake_rows(table, "Wake latency, mode A: one process, SQLite, in-memory layer",
                  asyncio.run(wake.measure(server.port, server.port, token, login, plan.wakes)), f.http)  # fmt: skip
        say(f"push latency ({plan.pushes} prompts)")
        push_rows(table, asyncio.run(push.measure(server.port, server.port, token, login, plan.pushes)), f.http)
        sessions = [f"bench-cap-{i}" for i in range(100)]
        prompt_ids = asyncio.run(throughput.create_prompts(server.port, token, sessions, clients=2))
    run_capacity(plan, env, table, token, login, sessions, prompt_ids)
    with servers.Server(env) as server:
        say("create throughput, SQLite")
        results = [asyncio.run(throughput.run(server.port, token, n, plan.seconds, f"sq{n}")) for n in (16, 64)]
    throughput_rows(table, "SQLite", results, f, 250)
    return prepared


def run_capacity(
    plan: Plan, env: dict, table: Table, token: str, login: str, sessions: list[str], ids: list[str]
) -> None:
    for kind in ("waits", "sockets"):
        for count in plan.levels:
            say(f"capacity: {count:,} {kind}")
            with servers.Server(env) as server:
                held = asyncio.run(hold_level(plan, server, kind, count, token, login, sessions, ids))
            capacity_rows(table, held)
            if held.held < count:
                table.notes.append(f"{kind}: levels above {count:,} not attempted, {count:,} was not reached")
                break


async def hold_level(
    plan: Plan,
    server: servers.Server,
    kind: str,
    count: int,
    token: str,
    login: str,
    sessions: list[str],
    ids: list[str],
) -> capacity.Held:
    await capacity.warm_up(server, ids[0], sessions[0], token, login)
    if kind == "waits":
        return await capacity.hold(
            server, kind, count, lambda i: capacity.wait_holder(server.port, ids[i % len(ids)], token), plan.samples,
            ramp_limit=60 + count / 100, connecting=128,
        )  # fmt: skip
    return await capacity.hold(
        server, kind, count, lambda i: capacity.socket_holder(server.port, sessions[i % len(sessions)], login),
        plan.samples, ramp_limit=plan.socket_ramp, connecting=32,
    )  # fmt: skip


def scaled(plan: Plan, data: Path, table: Table, f: Floors) -> dict:
    """PostgreSQL and Redis: wake mode B across two processes, throughput."""
    env = servers.scaled_env(data / "scaled")
    servers.recreate_bench_database()
    prepared = servers.prepare(env)
    token, login = prepared["token"], prepared["session_key"]
    with servers.Server(env) as waiting, servers.Server(env) as answering:
        say(f"wake latency, mode B ({plan.wakes} prompts)")
        result = asyncio.run(wake.measure(waiting.port, answering.port, token, login, plan.wakes))
        floor = Latency(0, f.http.p50 + f.redis.p50, f.http.p99 + f.redis.p99, f.http.max + f.redis.max)
        wake_rows(table, "Wake latency, mode B: two processes, PostgreSQL, Redis", result, floor)
        say("create throughput, PostgreSQL")
        results = [asyncio.run(throughput.run(waiting.port, token, n, plan.seconds, f"pg{n}")) for n in (16, 64)]
    throughput_rows(table, "PostgreSQL", results, f, 200)
    return prepared


def query_rows(table: Table, counts: dict[str, dict]) -> None:
    rows = table.section("Queries (counted in process)")
    for database, prepared in counts.items():
        rows += [
            Row(f"{database}: queries per create", prepared["create_queries"], ""),
            Row(f"{database}: queries per answer", prepared["answer_queries"], ""),
        ]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a short smoke run (one to two minutes)")
    parser.add_argument("--out", type=Path, default=servers.ROOT / "docs" / "PERFORMANCE.md")
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    started = time.monotonic()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    table = Table(notes=[f"file descriptors: {raise_fd_limit():,}; load average at start {report.load_average()}"])
    data = Path(tempfile.mkdtemp(prefix="askuser-bench-"))
    try:
        say("floors")
        f = measure_floors(plan, data)
        floor_rows(table, f)
        counts = {"SQLite": embedded(plan, data, table, f), "PostgreSQL": scaled(plan, data, table, f)}
        query_rows(table, counts)
    finally:
        servers.stop_all()
        servers.drop_bench_database()
        shutil.rmtree(data, ignore_errors=True)
    seconds = time.monotonic() - started
    table.notes += servers.problems
    table.notes.append(f"load average at the end {report.load_average()}; the run took {seconds / 60:.1f} min")
    print(report.text_table(table))
    print("\n".join(table.notes))
    command = "make bench" + (" BENCH_ARGS=--quick" if args.quick else "")
    report.write(args.out, table, report.machine(), command, seconds)
    say(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
