"""The table's rows: each measured figure with its floor, target and verdict."""

from __future__ import annotations

from dataclasses import dataclass

from . import browser, capacity, history, permission, push, sockets, throughput, wake
from .report import Row, Table
from .stats import Latency


@dataclass
class Floors:
    http: Latency
    raw: Latency
    redis: Latency | None  # None without Redis
    rps: dict[int, tuple[float, Latency]]
    connects: sockets.Rate | None = None  # the trivial app accepting WebSockets


def floor_rows(table: Table, f: Floors) -> None:
    rows = table.section("Floors")
    if f.redis is not None:
        rows += [Row("Redis PUBLISH → subscriber p50", f.redis.p50), Row("Redis PUBLISH → subscriber p99", f.redis.p99)]
    rows += [
        Row("HTTP round trip, trivial ASGI app on Daphne p50", f.http.p50),
        Row("HTTP round trip, trivial ASGI app on Daphne p99", f.http.p99),
        Row("HTTP round trip, bare asyncio server p50", f.raw.p50),
        Row("HTTP round trip, bare asyncio server p99", f.raw.p99),
    ]
    rows += [Row(f"trivial app on Daphne, {n} clients", rps, "/s") for n, (rps, _) in f.rps.items()]
    if f.connects is not None:
        rows.append(Row("WebSocket connects, trivial ASGI app on Daphne", f.connects.per_second, "/s"))


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
    budget = 20 if held.kind == "waits" else 30  # KiB per connection (issue #35)
    rows = table.section(f"Capacity: {held.wanted:,} {what}, one process")
    rows += [
        Row("held", held.held, "", target=f"{held.wanted:,}", passed=held.held >= held.wanted and not held.failed),
        Row("connect ramp", held.ramp_seconds, "s"),
        Row("memory per connection", held.kib_per_connection, "KiB", floor=held.floor_kib,
            target=f"< {budget} KiB", passed=held.kib_per_connection < budget),
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


def search_rows(table: Table, database: str, result: dict) -> None:
    search, plain = result["search"], result["plain"]
    queries, unsearched = result["queries"], result["unsearched"]
    rows = table.section(f"Admin search over {result['prompts']:,} prompts, {database}")
    rows += [
        Row("search (count + page statements) p50", queries["p50"], floor=unsearched["p50"]),
        Row("search (count + page statements) p95", queries["p95"], floor=unsearched["p95"], target="< 100 ms",
            passed=queries["p95"] < 100),
        Row("search (count + page statements) max", queries["max"], floor=unsearched["max"]),
        Row("the prompt list searched p50", search["p50"], floor=plain["p50"]),
        Row("the prompt list searched p95", search["p95"], floor=plain["p95"]),
        Row("the prompt list searched max", search["max"], floor=plain["max"]),
    ]  # fmt: skip
    table.notes.append(
        f"admin search, {database}: floors are the same statements and the same list unsearched; {search['n']} "
        f"searches of {len(history.SEARCHES)} kinds; history filled in {result['fill_s']:.0f} s"
    )


def query_rows(table: Table, counts: dict[str, dict]) -> None:
    rows = table.section("Queries (counted in process)")
    for database, prepared in counts.items():
        rows += [
            Row(f"{database}: queries per create", prepared["create_queries"], ""),
            Row(f"{database}: queries per answer", prepared["answer_queries"], ""),
        ]


def socket_rows(table: Table, rate: sockets.Rate, storm: sockets.Storm | None, f: Floors) -> None:
    floor = f.connects
    rows = table.section("WebSocket connects and a reconnect storm, SQLite, one process")
    rows += [
        Row("socket connects (pages opening theirs, 32 at a time)", rate.per_second, "/s",
            floor=floor.per_second if floor else None, target="≥ 500/s", passed=rate.per_second >= 500),
        Row("server CPU per connect", rate.cpu_ms, floor=floor.cpu_ms if floor else None),
        Row("one connect under that load p50", rate.handshake.p50, floor=floor.handshake.p50 if floor else None),
        Row("one connect under that load p99", rate.handshake.p99, floor=floor.handshake.p99 if floor else None),
    ]  # fmt: skip
    if rate.failed:
        table.notes.append(f"socket connects: {rate.failed} refused or reset")
    if storm is None:
        return
    rows += [
        Row("storm: pages back", storm.back, "", target=f"{storm.pages:,}", passed=storm.back == storm.pages),
        Row("storm: kill → restarted server answers", storm.ready_seconds, "s"),
        Row("storm: kill → every page back", storm.all_back_seconds, "s", target="≤ 20 s",
            passed=storm.all_back_seconds <= 20),
        Row("storm: kill → every page asked anew shows its new prompt", storm.caught_up_seconds, "s",
            target="≤ 20 s", passed=storm.caught_up_seconds <= 20),
        Row("storm: prompts lost", storm.lost_prompts, "", target=f"0 of {storm.asked_pages:,} pages asked anew",
            passed=storm.lost_prompts == 0),
        Row("storm: GET /healthz p99 while pages come back", storm.trivial.p99, floor=f.http.p99, target="< 50 ms",
            passed=storm.trivial.p99 < 50),
    ]  # fmt: skip


def click_rows(table: Table, database: str, result: browser.Clicks, floor: Latency) -> None:
    rows = table.section(f"The answer in the browser (click on an option → panel closed), {database}")
    rows += [
        Row("p50", result.own.p50, floor=floor.p50),
        Row("p99", result.own.p99, floor=floor.p99, target="≤ 15 ms", passed=result.own.p99 <= 15),
        Row("max", result.own.max, floor=floor.max),
        Row("both open tabs closed p50", result.every.p50, floor=floor.p50),
        Row("both open tabs closed p99", result.every.p99, floor=floor.p99, target="≤ 15 ms",
            passed=result.every.p99 <= 15),
        Row("both open tabs closed max", result.every.max, floor=floor.max),
    ]  # fmt: skip


def permission_rows(table: Table, where: str, result: permission.Permission, floor: Latency) -> None:
    rows = table.section(f"A permission answered in the tab (hook POST → shown → Allow → hook returned), {where}")
    rows += [
        Row("round trip p50", result.total.p50),
        Row("round trip p99", result.total.p99),
        Row("round trip after the quiet second p50", result.unquiet.p50, floor=floor.p50),
        Row("round trip after the quiet second p99", result.unquiet.p99, floor=floor.p99, target="≤ 30 ms",
            passed=result.unquiet.p99 <= 30),
        Row("hook POST → question shown p50", result.shown.p50, floor=floor.p50),
        Row("hook POST → question shown p99", result.shown.p99, floor=floor.p99),
        Row("click on Allow → hook returned p50", result.answered.p50, floor=floor.p50),
        Row("click on Allow → hook returned p99", result.answered.p99, floor=floor.p99),
        Row("questions never shown in the tab", result.unseen, "", target="0", passed=result.unseen == 0),
    ]  # fmt: skip
