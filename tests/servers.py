"""Real server processes for tests that need one (restarts, two processes), started as
production starts them: ``manage.py serve`` (Daphne, its loops started when it listens) and
``manage.py worker``.

Each process uses the test database (a file for SQLite, the test database on
PostgreSQL) and the channel layer the environment selects; data a test
creates must be committed (``transactional_db``) for a server to see it.
"""

from __future__ import annotations

import os
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
import pytest

STARTS_WITHIN = 30.0  # seconds a Django process may take to start and answer, two test workers a core

ROOT = Path(__file__).resolve().parent.parent
# How a server process starts, before the listening socket it is handed (``--fd N``).
SERVE = ("manage.py", "serve", "-v", "0")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_in_thread(server: socketserver.BaseServer) -> Callable[[], None]:
    """Serve a fake (an ``http.server``) on a daemon thread; the function returned stops and closes it.

    ``shutdown()`` returns when ``serve_forever`` next looks, every ``poll_interval``:
    0.5 s by default, paid by every test that stops a fake; 0.02 s here."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return stop


def database_url() -> str:
    from django.db import connection

    settings = connection.settings_dict
    if settings["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(settings['NAME']).resolve()}"
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    return f"postgres://{settings['USER']}{password}@{settings['HOST']}:{settings['PORT'] or 5432}/{settings['NAME']}"


class DaphneServer:
    """A ``manage.py serve`` process on 127.0.0.1, serving on a socket this process binds and hands over.

    The port is held from the moment the server is made (no other worker's free port can
    take it meanwhile), and a request made while Daphne starts waits in the socket's queue
    until it is served: being ready is the answer to one request, not a poll.

    ``also``: more listening sockets it serves too (tests/agentclis.py's, bound inside a
    network namespace); they stay the caller's to close. ``command``: Python's arguments
    that serve (deploy/'s command, in tests/server/test_deploy.py), ``manage.py serve``'s by default."""

    def __init__(
        self,
        env: dict[str, str],
        port: int | None = None,
        also: Sequence[socket.socket] = (),
        command: Sequence[str] = SERVE,
    ) -> None:
        self.env = env
        self.also = list(also)
        self.command = list(command)
        self.listener: socket.socket | None = self._listen(port or 0)
        self.port: int = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(tempfile.mkstemp(prefix=f"daphne-{self.port}-", suffix=".log")[1])
        self.process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def _listen(port: int) -> socket.socket:
        listener = socket.socket()
        # A restart binds the port a killed process held; its closed connections may linger.
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        return listener

    def start(self, *, asked: bool = True) -> DaphneServer:
        """Start serving; unless ``asked`` is false, return once a request is answered.

        Not asked, nothing is sent to the server: its loops must start by themselves."""
        listener = self.listener or self._listen(self.port)
        self.listener = None
        fd = listener.fileno()
        command = [sys.executable, *self.command, "--fd", str(fd)]
        command += [f"--endpoint=fd:fileno={other.fileno()}" for other in self.also]
        passed = (fd, *(other.fileno() for other in self.also))
        with self.log.open("ab") as log, listener:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, pass_fds=passed
            )
        # Only the server holds the socket now: if it dies, the request below is refused, not left waiting.
        if asked:
            self.wait_ready()
        return self

    def wait_ready(self, within: float = STARTS_WITHIN) -> None:
        # Behind a TLS proxy (ASKUSER_HTTPS=1) a request is asked as the proxy asks, or it is redirected.
        headers = {"X-Forwarded-Proto": "https"} if self.env.get("ASKUSER_HTTPS") else {}
        try:
            if httpx.get(f"{self.url}/api/v1/tool", headers=headers, timeout=within).status_code == 200:
                return
        except httpx.TransportError:
            pass
        raise RuntimeError(f"The server on {self.port} did not start:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as in a crash."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


class Worker:
    """A ``manage.py worker`` process: the background loops without serving.

    ``metrics``: serve ``/metrics`` (``--metrics-fd``) on a socket this process binds and
    hands over, as DaphneServer serves: its port (``metrics_url``) is held from the moment
    the worker is made, so no other test's free port can take it before the worker listens."""

    def __init__(self, env: dict[str, str], *, metrics: bool = False) -> None:
        self.env = env
        self.log = Path(tempfile.mkstemp(prefix="worker-", suffix=".log")[1])
        self.process: subprocess.Popen[bytes] | None = None
        self.metrics = socket.create_server(("127.0.0.1", 0)) if metrics else None
        self.metrics_url = f"http://127.0.0.1:{self.metrics.getsockname()[1]}" if self.metrics else None

    def start(self) -> Worker:
        command = [sys.executable, "manage.py", "worker"]
        passed: tuple[int, ...] = ()
        if self.metrics is not None:
            command += ["--metrics-fd", str(self.metrics.fileno())]
            passed = (self.metrics.fileno(),)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, pass_fds=passed
            )
        if self.metrics is not None:  # only the worker holds it now
            self.metrics.close()
        return self

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int | None:
        """SIGTERM, as systemd stops it; its exit status."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        return self.process.returncode if self.process else None


class RedisServer:
    """A Redis server of a test's own: restarting it disturbs nobody else, and what it
    counts (connections, keys) is that test's alone, whatever other workers do meanwhile."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        ping = ["redis-cli", "-p", str(self.port), "ping"]
        while subprocess.run(ping, capture_output=True).stdout.strip() != b"PONG":
            assert time.monotonic() < deadline, "redis did not start"
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)


@pytest.fixture(scope="session")
def server_env(django_db_setup, tmp_path_factory) -> dict[str, str]:
    from django.conf import settings

    env = dict(os.environ)
    env["DATABASE_URL"] = database_url()
    env["ASKUSER_DATA_DIR"] = str(tmp_path_factory.mktemp("server-data"))
    # The same key as this process, so sessions made here are valid there.
    env["SECRET_KEY"] = str(settings.SECRET_KEY)  # read from the data folder when first used
    return env


@pytest.fixture
def start_server(server_env):
    """Start Daphne processes for this test; all are stopped afterwards."""
    started: list[DaphneServer] = []

    def start(port: int | None = None, also: Sequence[socket.socket] = ()) -> DaphneServer:
        server = DaphneServer(server_env, port, also)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()
