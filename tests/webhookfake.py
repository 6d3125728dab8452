"""An agent's webhook endpoint on 127.0.0.1 for the webhook tests: it records every request and can
fail or hold its answers; and the few steps those tests share (ask with a callback, read the delivery)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from askuser_app.models import WebhookDelivery
from askuser_client.client import AskUserClient
from tests.conftest import DEADLINE, QUESTION, auth
from tests.servers import DaphneServer, serve_in_thread

RETRY_BASE = 0.3
ATTEMPTS = 3
ATTEMPT_TIMEOUT = 5.0
WEBHOOK_ENV = {
    "ASKUSER_WEBHOOK_ALLOW_PRIVATE": "1",  # the receivers listen on 127.0.0.1
    "ASKUSER_WEBHOOK_RETRY_BASE": str(RETRY_BASE),
    "ASKUSER_WEBHOOK_ATTEMPTS": str(ATTEMPTS),
    "ASKUSER_WEBHOOK_TIMEOUT": str(ATTEMPT_TIMEOUT),
}


class Receiver:
    """An agent's webhook endpoint: records every request; can fail or hold its answers."""

    def __init__(self, fail_first: int = 0) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.fail_first = fail_first
        self.arrived = threading.Event()  # a request has come
        self.release = threading.Event()
        self.release.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                receiver.arrived.set()
                receiver.release.wait(DEADLINE)
                failing = len(receiver.requests) <= receiver.fail_first
                self.send_response(500 if failing else 204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/askuser-hook"
        self.stop = serve_in_thread(self.httpd)

    def close(self) -> None:
        self.release.set()
        self.stop()


def delivery_of(prompt_id: str) -> WebhookDelivery | None:
    return WebhookDelivery.objects.filter(prompt_id=prompt_id).first()


def finished(prompt_id: str):
    return lambda: (d := delivery_of(prompt_id)) is not None and d.status != WebhookDelivery.Status.PENDING


def ask_with_callback(server: DaphneServer, token: str, url: str, session: str = "support-42") -> str:
    with AskUserClient(server.url, token) as client:
        return client.create([QUESTION], session=session, callback_url=url)["id"]


def never_answering() -> Receiver:
    silent = Receiver()
    silent.release.clear()  # holds every request past any attempt's timeout
    return silent


def cancel_over_http(server: DaphneServer, token: str, prompt_id: str) -> None:
    assert httpx.post(f"{server.url}/api/v1/prompts/{prompt_id}/cancel", headers=auth(token)).status_code == 200
