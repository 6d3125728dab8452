"""New connections are let in a few per turn of the server's event loop
(askuser_app/server/admission.py): many arriving at once are all served, pages'
sockets included, and those beyond a turn's share wait unread for later turns."""

from __future__ import annotations

import base64
import os
import signal
import socket
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import log_in
from tests.servers import DaphneServer

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

AT_ONCE = 40  # within the listening socket's backlog (tests/servers.py: 128)
DEADLINE = 30


@pytest.fixture
def server(server_env):
    daphne = DaphneServer({**server_env, "ASKUSER_NEW_CONNECTIONS_PER_TURN": "1"}).start()
    yield daphne
    daphne.stop()


def held(server: DaphneServer) -> float:
    """``askuser_connections_held_total``, as this machine scrapes ``/metrics``."""
    text = httpx.get(f"{server.url}/metrics", timeout=DEADLINE).text
    return next(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "askuser_connections_held_total"
    )


def request(server: DaphneServer, path: str, headers: dict[str, str]) -> socket.socket:
    """A connection opened and its request sent; the answer is read later (``status``)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE)
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{server.port}", *(f"{k}: {v}" for k, v in headers.items())]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return sock


def status(sock: socket.socket) -> int:
    with sock:
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(4096)
            assert chunk, "closed before its status line"
            head += chunk
    return int(head.split(b" ", 2)[1])


def page_socket_headers(server: DaphneServer, login: str) -> dict[str, str]:
    return {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
        "Sec-WebSocket-Version": "13",
        "Origin": server.url,
        "Cookie": f"sessionid={login}",
    }


def test_connections_arriving_at_once_are_all_served_and_those_beyond_a_turns_share_wait(server, owner):
    login = log_in(owner)
    before = held(server)
    # Stopped, the server accepts nothing: every connection below is in its listening
    # socket's queue when it goes on, and the first turn finds them all at once.
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        with ThreadPoolExecutor(AT_ONCE) as pool:
            sockets = list(
                pool.map(
                    lambda n: (
                        request(server, "/ws/sessions/", page_socket_headers(server, login))
                        if n % 4 == 0
                        else request(server, "/healthz", {"Connection": "close"})
                    ),
                    range(AT_ONCE),
                )
            )
    finally:
        os.kill(server.process.pid, signal.SIGCONT)

    statuses = [status(sock) for sock in sockets]

    assert statuses == [101 if n % 4 == 0 else 200 for n in range(AT_ONCE)]
    # Twisted accepts them in a few calls (as many as the last call found, and 20 more);
    # in each, one is read and the others wait for later turns: most of them.
    assert held(server) - before >= AT_ONCE // 2


def test_a_connection_already_open_is_never_held(server):
    with httpx.Client(base_url=server.url, timeout=DEADLINE) as client:
        client.get("/healthz")  # opened, and its first request read
        before = held(server)
        for _ in range(20):
            assert client.get("/healthz").status_code == 200

    # The scrapes were new connections, each alone in its turn.
    assert held(server) == before
