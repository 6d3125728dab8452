"""``python -m bench.create``: create throughput alone, on SQLite and (when it
answers) PostgreSQL, one server process each, with an optional py-spy
profile of the server. For comparing a change to the create path back to back
with its parent, without the full run; writes nothing.

    python -m bench.create --seconds 10 --profile /tmp/prof
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from . import servers, throughput


@contextlib.contextmanager
def profiled(server: servers.Server, out: Path | None, name: str) -> Iterator[None]:
    """py-spy records the server while the block runs; top frames go to ``out/name.txt``."""
    if out is None:
        yield
        return
    out.mkdir(parents=True, exist_ok=True)
    raw = out / f"{name}.raw"
    spy = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("py-spy")),
            "record",
            "--nonblocking",
            "--gil",
            "-r",
            "200",
            "-f",
            "raw",
            "-o",
            str(raw),
            "-p",
            str(server.pid),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes its file on Ctrl-C
        spy.wait(30)
        if raw.exists():
            (out / f"{name}.txt").write_text(top_frames(raw.read_text()))


def top_frames(collapsed: str, count: int = 25) -> str:
    """The functions with the most samples anywhere on the stack (inclusive), and on top (self)."""
    inclusive: dict[str, int] = {}
    own: dict[str, int] = {}
    total = 0
    for line in collapsed.splitlines():
        stack, _, samples = line.rpartition(" ")
        if not samples.isdigit():
            continue
        n = int(samples)
        total += n
        frames = stack.split(";")
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + n
        own[frames[-1]] = own.get(frames[-1], 0) + n
    lines = [f"{total} samples"]
    for title, table in (("inclusive", inclusive), ("self", own)):
        lines.append(f"-- {title}")
        for frame, n in sorted(table.items(), key=lambda kv: -kv[1])[:count]:
            lines.append(f"{100 * n / total:5.1f}%  {frame}")
    return "\n".join(lines) + "\n"


def cpu_seconds(pid: int) -> float:
    """User and system CPU the process has used: unlike rates, hardly moved by a busy machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(env: dict[str, str], label: str, seconds: float, profile: Path | None) -> None:
    prepared = servers.prepare(env)
    token = str(prepared["token"])
    with servers.Server(env) as server:
        asyncio.run(throughput.run(server.port, token, 16, 1, f"warm-{label}"))
        cpu = cpu_seconds(server.pid)
        with profiled(server, profile, label):
            result = asyncio.run(throughput.run(server.port, token, 16, seconds, label))
        cpu = cpu_seconds(server.pid) - cpu
    print(
        f"{label}: 16 clients {result.per_second:.0f}/s, p50 {result.latency.p50:.1f} ms, "
        f"server CPU {1000 * cpu / max(result.created, 1):.2f} ms per create, "
        f"p99 {result.latency.p99:.1f} ms, errors {result.errors or 'none'}; "
        f"{prepared['create_queries']} queries per create",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.create", description=__doc__)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--profile", type=Path, help="a folder for py-spy's top frames of each server")
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="askuser-bench-create-"))
    try:
        if args.only != "postgresql":
            measure(servers.base_env(data / "sqlite"), "sqlite", args.seconds, args.profile)
        if args.only != "sqlite" and servers.scaled_missing() is None:
            servers.recreate_bench_database()
            measure(servers.scaled_env(data / "scaled"), "postgresql", args.seconds, args.profile)
            servers.drop_bench_database()
    finally:
        servers.stop_all()
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
