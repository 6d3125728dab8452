"""``/metrics``: Prometheus' text format, for this machine or a scraper holding the token.

Two sources make one scrape. What this process counted (``runtime/metrics.py``:
loop turns and failures, delivery attempts, answer times, sockets open, waits
parked) is per process, so each server process is scraped as a target of
its own. What is the same whichever process is asked (prompts by status,
reason and surface; hosts paused) is read from the database for the scrape,
in one grouped count read off an index (``prompt_outcome_idx``) and one
count of the few paused hosts: it is right across processes, even for the
work a process that serves no HTTP did.

Served in front of Django, beside ``/healthz``, so that it reports on the
routes Django never sees (the waits, the hooks, the create) without being one
of Django's requests. A request that may not read it is handed to Django like
any path askuser does not serve, and gets Django's own 404: to anyone else
there is nothing here, not even a door that says no.

``manage.py worker`` serves no HTTP, yet counts its loops' turns and failures and
its deliveries. With ``ASKUSER_WORKER_METRICS_PORT`` (or ``--metrics-fd``, a
listening socket it inherits) it serves them there (``WorkerMetrics``, on a
thread of its own beside the worker's event loop), under the same rule
(``may_read``), as a target of its own; without the database gauges, which the
server processes report for every process.
"""

from __future__ import annotations

import hmac
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from django.conf import settings
from django.db.models import Count
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from askuser_app.models import DeliveryHost, Prompt
from askuser_app.runtime.asyncdb import OwnThread
from askuser_app.runtime.http import App, Receive, Scope, Send, header, respond_with
from askuser_app.server import edge

# A scrape's counts run on a thread of their own: they never queue a person's or an agent's
# request behind them on the thread ``database_call`` shares.
database = OwnThread("askuser-metrics-db")


class Endpoint:
    """``GET /metrics`` for a loopback client or the holder of ``ASKUSER_METRICS_TOKEN``;
    every other request goes on to ``otherwise`` (Django, which serves no such path)."""

    def __init__(self, otherwise: App) -> None:
        self.otherwise = otherwise

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD") or not may_read(scope):
            return await self.otherwise(scope, receive, send)
        stored = await database.run(Stored.read)()
        await respond_with(send, 200, exposition(stored), CONTENT_TYPE_LATEST, scope=scope)


def may_read(scope: Scope) -> bool:
    """Asked on this machine (``edge.from_loopback``: not through a proxy for someone else),
    or with the configured token as a Bearer token, compared in constant time."""
    return edge.from_loopback(scope) or _has_token(header(scope, b"authorization") or "")


def _has_token(authorization: str) -> bool:
    token = settings.ASKUSER_METRICS_TOKEN
    scheme, _, given = authorization.partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


@dataclass(frozen=True, eq=False)  # a registry keeps it by identity
class Stored:
    """What the database says, the same whichever process reads it."""

    prompts: list[tuple[str, str, str, int]]  # status, reason, surface, how many
    hosts_paused: int

    @classmethod
    def read(cls) -> Stored:
        grouped = Prompt.objects.order_by().values_list("status", "reason", "surface").annotate(n=Count("*"))
        paused = DeliveryHost.objects.filter(paused_until__gt=timezone.now()).count()
        return cls(list(grouped), paused)

    def collect(self) -> Iterator[Metric]:
        prompts = GaugeMetricFamily(
            "askuser_prompts",
            "Prompts stored, by status, reason and the surface that resolved them (all processes).",
            labels=["status", "reason", "surface"],
        )
        for status, reason, surface, count in self.prompts:
            prompts.add_metric([status, reason, surface], count)
        yield prompts
        yield GaugeMetricFamily(
            "askuser_delivery_hosts_paused",
            "Owner and host pairs whose deliveries wait out a pause after timeouts (all processes).",
            value=self.hosts_paused,
        )


def exposition(stored: Stored) -> bytes:
    """This process's metrics, then the stored ones, in Prometheus' text format."""
    scrape = CollectorRegistry(auto_describe=False)
    scrape.register(stored)
    return generate_latest(REGISTRY) + generate_latest(scrape)


# --- the worker's own ----------------------------------------------------------------------


class _Server(ThreadingMixIn, WSGIServer):
    """WSGIServer on a socket already listening (bound here or inherited), not one it binds."""

    daemon_threads = True

    def __init__(self, listener: socket.socket) -> None:
        host, port = listener.getsockname()[:2]
        super().__init__((host, port), _Quiet, bind_and_activate=False)
        self.socket.close()
        self.socket = listener
        # What HTTPServer's and WSGIServer's server_bind set, without binding again.
        self.server_name, self.server_port = str(host), int(port)
        self.setup_environ()


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # a scrape every 15 s is not news
        pass


class WorkerMetrics:
    """``GET /metrics`` of a worker, with this process's counters, on a listening socket."""

    def __init__(self, listener: socket.socket) -> None:
        self.server = _Server(listener)
        self.server.set_app(self.app)
        self.thread = threading.Thread(target=self.server.serve_forever, name="askuser-worker-metrics", daemon=True)

    @classmethod
    def on(cls, host: str, port: int) -> WorkerMetrics:
        """Listening on ``host:port``, bound here."""
        return cls(socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET))

    @classmethod
    def inherited(cls, fd: int) -> WorkerMetrics:
        """On the listening socket ``fd`` this process inherited (systemd's, a test's): the
        port is held from before the worker starts, so nothing else can take it meanwhile."""
        return cls(socket.socket(fileno=fd))

    @property
    def address(self) -> str:
        host, port = self.server.server_name, self.server.server_port
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def start(self) -> WorkerMetrics:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Served as the server's ``Endpoint`` serves; anything else, a bare 404."""
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        if method not in ("GET", "HEAD") or path != "/metrics" or not may_read(scope_of(environ)):
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"Not found.\n"]
        body = generate_latest(REGISTRY)
        start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST), ("Content-Length", str(len(body)))])
        return [b""] if method == "HEAD" else [body]


def scope_of(environ: dict[str, Any]) -> Scope:
    """What ``may_read`` reads of a request (its peer and headers), from a WSGI environ."""
    headers = [
        (key[5:].lower().replace("_", "-").encode("latin-1"), str(value).encode("latin-1"))
        for key, value in environ.items()
        if key.startswith("HTTP_")
    ]
    return {"type": "http", "headers": headers, "client": (environ.get("REMOTE_ADDR", ""), 0)}
