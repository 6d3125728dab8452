"""``python -m bench.compare`` (or ``make bench BENCH_ARGS=--compare``): create
throughput side by side in one run: askuser (SQLite, embedded default),
awaithumans 0.1.12's own ``awaithumans dev`` server, and the trivial ASGI app on
Daphne as the floor. 16 clients, one question per prompt, 10 s each, every
server measured ``--rounds`` times in turn; prints, writes nothing. Errors are
counted by HTTP status, 0 for a connection the server reset.

awaithumans is not a dependency: it is run from a virtualenv of its own,
``AWAITHUMANS_VENV`` (default /tmp/awaithumans-venv), made with
``python -m venv /tmp/awaithumans-venv && /tmp/awaithumans-venv/bin/pip install 'awaithumans[server]==0.1.12'``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import servers, throughput
from .client import build_request
from .create import cpu_seconds
from .floors import http_throughput
from .payload import QUESTIONS, agent_headers
from .stats import Latency

CLIENTS = 16
AWAITHUMANS_TOKEN = "bench-admin-token"
QUESTION = QUESTIONS[0]  # one question per prompt: the benchmark's first


def askuser_request(port: int, token: str, n: str) -> bytes:
    body = json.dumps({"session": f"cmp-{n}", "questions": [QUESTION], "timeoutSeconds": 3600}).encode()
    headers = {**agent_headers(token), "Content-Type": "application/json"}
    return build_request("POST", "/api/v1/prompts", port, headers, body)


def awaithumans_request(port: int, token: str, n: str) -> bytes:
    """The same question as awaithumans' SDK sends it: a task with a one-field response schema."""
    body = json.dumps(
        {
            "task": QUESTION["question"],
            "payload": {},
            "payload_schema": {},
            "response_schema": {
                "type": "object",
                "properties": {"deploy_target": {"type": "string", "enum": ["Staging (Recommended)", "Production"]}},
                "required": ["deploy_target"],
            },
            "timeout_seconds": 3600,
            "idempotency_key": f"cmp-{n}",
        }
    ).encode()
    headers = {**agent_headers(token), "Content-Type": "application/json"}
    return build_request("POST", "/api/tasks", port, headers, body)


async def creates(
    port: int, token: str, seconds: float, tag: str, make: Callable[[int, str, str], bytes]
) -> tuple[int, float, Latency, dict[int, int]]:
    """``CLIENTS`` agents on keep-alive connections, each creating as fast as it can."""
    measured = await throughput.run(port, token, CLIENTS, seconds, tag, make)
    return measured.created, measured.per_second, measured.latency, measured.errors


class Awaithumans(servers.Server):
    """``awaithumans dev`` on a free port with a database in the run's folder."""

    def __init__(self, env: dict[str, str], venv: Path) -> None:
        super().__init__(env, ready="/api/health")
        data = Path(env["ASKUSER_DATA_DIR"])
        self.env = {**env, "AWAITHUMANS_ADMIN_API_TOKEN": AWAITHUMANS_TOKEN}
        self.name = "awaithumans"
        self.cwd = data  # it keeps a .awaithumans folder where it starts: in the run's folder, not the checkout
        self.command = [
            str(venv / "bin" / "awaithumans"),
            "dev",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--db-path",
            str(data / "awaithumans.db"),
            "--log-level",
            "WARNING",
        ]


def line(label: str, created: int, rate: float, lat: Latency, cpu: float | None, errors: dict[int, int]) -> str:
    per = f", server CPU {1000 * cpu / max(created, 1):.2f} ms per create" if cpu is not None else ""
    return (
        f"{label}: {CLIENTS} clients {rate:.0f}/s, p50 {lat.p50:.1f} ms, p99 {lat.p99:.1f} ms{per}, "
        f"errors {errors or 'none'}"
    )


def run(seconds: float, rounds: int) -> int:
    venv = Path(os.environ.get("AWAITHUMANS_VENV", "/tmp/awaithumans-venv"))
    data = Path(tempfile.mkdtemp(prefix="askuser-bench-compare-"))
    print(f"load average at start {os.getloadavg()[0]:.2f}", flush=True)
    try:
        env = servers.base_env(data / "sqlite")
        token = str(servers.prepare(env)["token"])
        askuser = servers.Server(env).start()
        trivial = servers.Server(servers.base_env(data / "trivial"), app="bench.trivial:application", ready="/").start()
        theirs: servers.Server | None = None
        if (venv / "bin" / "awaithumans").exists():
            try:
                theirs = Awaithumans(servers.base_env(data / "awaithumans"), venv).start()
            except RuntimeError as error:
                print(f"awaithumans: blocked: {str(error).splitlines()[-1]}", flush=True)
        else:
            print(f"awaithumans: blocked: no {venv}/bin/awaithumans", flush=True)
        # Warm each server up (imports, caches, the first database pages).
        asyncio.run(creates(askuser.port, token, 1, "warm", askuser_request))
        if theirs:
            asyncio.run(creates(theirs.port, AWAITHUMANS_TOKEN, 1, "warm", awaithumans_request))
        for r in range(1, rounds + 1):
            cpu = cpu_seconds(askuser.pid)
            mine = asyncio.run(creates(askuser.port, token, seconds, f"r{r}", askuser_request))
            print(line(f"round {r} askuser (SQLite)", *mine[:3], cpu_seconds(askuser.pid) - cpu, mine[3]), flush=True)
            if theirs:
                cpu = cpu_seconds(theirs.pid)
                other = asyncio.run(creates(theirs.port, AWAITHUMANS_TOKEN, seconds, f"r{r}", awaithumans_request))
                print(
                    line(f"round {r} awaithumans 0.1.12", *other[:3], cpu_seconds(theirs.pid) - cpu, other[3]),
                    flush=True,
                )
                print(f"round {r} askuser / awaithumans: {mine[1] / max(other[1], 0.001):.2f}x", flush=True)
            rps, lat = asyncio.run(http_throughput(trivial.port, CLIENTS, seconds))
            print(
                f"round {r} trivial app on Daphne: {CLIENTS} clients {rps:.0f}/s, p50 {lat.p50:.1f} ms, "
                f"p99 {lat.p99:.1f} ms; askuser / trivial: {mine[1] / rps:.2f}x",
                flush=True,
            )
    finally:
        servers.stop_all()
        shutil.rmtree(data, ignore_errors=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}", flush=True)
    for problem in servers.problems:
        print(problem)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    return run(args.seconds, args.rounds)


if __name__ == "__main__":
    sys.exit(main())
