"""``python -m bench.answer``: the human's answer request alone (the panel's
form, ``POST /s/<key>/prompts/<id>/answer`` with htmx), on SQLite and (when
it answers) PostgreSQL, one server process each: its latency, the server's
CPU per answer and the queries per answer, with an optional py-spy profile
and the answer felt in the browser. For comparing a change to the answer
path back to back with its parent, without the full run; writes nothing.

    python -m bench.answer --answers 300 --profile /tmp/prof --browser 30
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import browser, servers, throughput
from .client import Http, form_body
from .create import cpu_seconds, profiled
from .payload import ANSWER_FORM, human_headers
from .stats import Latency, latency


async def answer_all(port: int, login: str, sessions: list[str], ids: list[str]) -> Latency:
    """Answer each pending prompt through the panel's form, one after another, on one connection."""
    human = await Http.open(port)
    form_headers, form = form_body(ANSWER_FORM)
    headers = {**human_headers(login), **form_headers}
    times = []
    for session, prompt_id in zip(sessions, ids, strict=True):
        sent = time.perf_counter()
        answered = await human.request("POST", f"/s/{session}/prompts/{prompt_id}/answer", headers, form)
        times.append(time.perf_counter() - sent)
        assert answered.status == 200, answered
    human.close()
    return latency(times)


def measure(env: dict[str, str], label: str, answers: int, profile: Path | None, clicks: int) -> None:
    prepared = servers.prepare(env)
    token, login = str(prepared["token"]), str(prepared["session_key"])
    with servers.Server(env) as server:
        warm = [f"warm-{label}-{n}" for n in range(20)]
        warm_ids = asyncio.run(throughput.create_prompts(server.port, token, warm))
        asyncio.run(answer_all(server.port, login, warm, warm_ids))
        sessions = [f"answer-{label}-{n}" for n in range(answers)]
        ids = asyncio.run(throughput.create_prompts(server.port, token, sessions, clients=4))
        cpu = cpu_seconds(server.pid)
        with profiled(server, profile, label):
            result = asyncio.run(answer_all(server.port, login, sessions, ids))
        cpu = cpu_seconds(server.pid) - cpu
        felt = ""
        if clicks and browser.chromium() is not None:
            click = browser.measure(server.url, token, login, clicks)
            felt = (
                f"; in the browser p50 {click.own.p50:.1f} ms, p99 {click.own.p99:.1f} ms, "
                f"both tabs closed p50 {click.every.p50:.1f} ms, p99 {click.every.p99:.1f} ms"
            )
    print(
        f"{label}: {answers} answers, p50 {result.p50:.1f} ms, p99 {result.p99:.1f} ms, "
        f"server CPU {1000 * cpu / answers:.2f} ms per answer, {prepared['answer_queries']} queries per answer{felt}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.answer", description=__doc__)
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--browser", type=int, default=0, help="answers given in the browser too (chromium)")
    parser.add_argument("--profile", type=Path, help="a folder for py-spy's top frames of each server")
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="askuser-bench-answer-"))
    try:
        if args.only != "postgresql":
            measure(servers.base_env(data / "sqlite"), "sqlite", args.answers, args.profile, args.browser)
        if args.only != "sqlite" and servers.scaled_missing() is None:
            servers.recreate_bench_database()
            measure(servers.scaled_env(data / "scaled"), "postgresql", args.answers, args.profile, args.browser)
            servers.drop_bench_database()
    finally:
        servers.stop_all()
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
