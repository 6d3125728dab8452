"""Server processes for the benchmark: Daphne with a chosen environment, its
database made ready in a separate process, and what /proc says about it."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
# The scaled mode's services; the benchmark creates and drops a database of its own there.
POSTGRES = os.environ.get("BENCH_POSTGRES", "postgres://postgres@127.0.0.1:5432")
# Its name: two runs beside each other (two checkouts) each need their own.
BENCH_DATABASE = os.environ.get("BENCH_DATABASE", "askuser_bench")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")

_SECRET = secrets.token_urlsafe(50)  # one per run: sessions made by bench.prepare are valid in every server
_running: list[Server] = []
problems: list[str] = []  # tracebacks the servers logged, reported under the table


FD = "{fd}"  # in a command: the listening socket's descriptor, handed to the process


def listening(port: int = 0) -> socket.socket:
    """A socket listening on 127.0.0.1 (on a free port by default), with a deep backlog."""
    listener = socket.socket()
    # A restart binds the port a killed process held; its closed connections may linger.
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(4096)
    return listener


def base_env(data_dir: Path) -> dict[str, str]:
    """SQLite and the in-memory layer, no rate limits and no caps on parked waits or
    sockets (the capacity run parks 10,000 waits of one agent from one address,
    and one login holds all 10,000 sockets), the same secret in every process."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DEBUG")}
    data_dir.mkdir(parents=True, exist_ok=True)
    env.update(
        ASKUSER_DATA_DIR=str(data_dir),
        ASKUSER_RATE_LIMIT="0",
        ASKUSER_MAX_WAITS_PER_AGENT="0",
        ASKUSER_MAX_WAITS_PER_USER="0",
        ASKUSER_MAX_WAITS_PER_ADDRESS="0",
        ASKUSER_MESSAGE_RATE_LIMIT="0",
        # One login and one address hold all 10,000 sockets of the capacity run.
        ASKUSER_MAX_SOCKETS_PER_USER="0",
        ASKUSER_MAX_SOCKETS_PER_ADDRESS="0",
        DJANGO_SETTINGS_MODULE="controlui.settings",
        SECRET_KEY=_SECRET,
        LOG_LEVEL="WARNING",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def scaled_env(data_dir: Path) -> dict[str, str]:
    """PostgreSQL (a database of the benchmark's own) and Redis under a prefix of its own."""
    return {
        **base_env(data_dir),
        "DATABASE_URL": f"{POSTGRES}/{BENCH_DATABASE}",
        "REDIS_URL": REDIS_URL,
        "ASKUSER_REDIS_PREFIX": f"askuser-bench-{os.getpid()}",
    }


def scaled_missing() -> str | None:
    """Why the scaled mode cannot run here, or None when PostgreSQL and Redis answer."""
    import psycopg
    import redis

    try:
        psycopg.connect(f"{POSTGRES}/postgres", connect_timeout=3).close()
        redis.Redis.from_url(REDIS_URL, socket_timeout=3).ping()
    except (psycopg.Error, redis.RedisError) as exc:
        return f"{exc.__class__.__name__}: {exc}".strip()
    return None


def recreate_bench_database() -> None:
    import psycopg

    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DATABASE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {BENCH_DATABASE}")


def drop_bench_database() -> None:
    import psycopg

    with contextlib.suppress(psycopg.Error), psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DATABASE} WITH (FORCE)")


def prepare(env: dict[str, str]) -> dict[str, str | int]:
    """Migrate the database and make the bench user, its agent token and a login (bench/prepare.py)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.prepare"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"preparing the database failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def search(env: dict[str, str], rounds: int) -> dict:
    """Fill the history with 100,000 prompts and time the admin's search over it (bench/search.py)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.search", str(rounds)], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the admin search bench failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class Server:
    """One server process on a free port, quiet, with a deep listen backlog: askuser as production
    starts it (``manage.py serve``, its loops running), or a bare ASGI ``app`` under Daphne."""

    def __init__(self, env: dict[str, str], app: str = "controlui.asgi:application", ready: str = "/healthz") -> None:
        self.env, self.app, self.ready = env, app, ready
        # Bound here and handed over (``--fd``), as production's systemd socket does: no other
        # program can take the port between choosing it and the server listening on it.
        self.listener: socket.socket | None = listening()
        self.port = self.listener.getsockname()[1]
        if app == "controlui.asgi:application":
            self.name = "askuser"
            self.command = [sys.executable, "manage.py", "serve", "-v", "0", "--fd", FD]
        else:
            self.name = app
            self.command = [sys.executable, "-m", "daphne", "-v", "0", "--fd", FD, app]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(env["ASKUSER_DATA_DIR"]) / f"daphne-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.cwd = ROOT  # where it runs: another server may write files where it starts

    def start(self) -> Server:
        listener = self.listener or listening(self.port)  # after a kill: its port again
        self.listener = None
        with self.log.open("ab") as log, listener:
            fd = listener.fileno()
            if FD not in self.command:  # a program that binds its port itself (a moment's race)
                listener.close()
            command = [str(fd) if part == FD else part for part in self.command]
            self.process = subprocess.Popen(
                command, cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                pass_fds=(fd,) if FD in self.command else (),
            )  # fmt: skip
        if self not in _running:  # started again after a kill
            _running.append(self)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if httpx.get(self.url + self.ready, timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.name} on {self.port} did not start:\n{self.log.read_text(errors='replace')}")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def proc_status(self) -> dict[str, int]:
        """Resident memory (KiB) and threads, from /proc/<pid>/status."""
        fields = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "Threads"):
                fields[name] = int(value.split()[0])
        return {"rss_kib": fields["VmRSS"], "threads": fields["Threads"]}

    def kill(self) -> None:
        """SIGKILL, as a crash: its sockets drop without a close frame. ``start`` brings it back on its port."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:  # its state is thrown away: no need to wait for sockets to close gracefully
                self.process.wait(3)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self in _running:
            _running.remove(self)
            self.check_log()

    def check_log(self) -> None:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        if "Traceback" in text:
            last = text[text.rindex("Traceback") :].strip().splitlines()[-1]
            problems.append(f"{self.name} on {self.port} logged {text.count('Traceback')} tracebacks, last: {last}")

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def raw_server(env: dict[str, str]) -> Server:
    """The bare asyncio HTTP server of bench/rawserver.py, for the lowest floor."""
    server = Server(env, ready="/")
    server.name, server.command = "bench.rawserver", [sys.executable, "-m", "bench.rawserver", str(server.port)]
    return server


def stop_all() -> None:
    for server in list(_running):
        server.stop()
