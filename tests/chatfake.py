"""A local stand-in for a chat platform's HTTP API, for the real SDKs to talk to.

Each platform's test points its SDK at ``fake.url`` through the documented
base-URL setting (``TELEGRAM_API_URL``, ``SLACK_API_URL``, ``DISCORD_API_URL``).
The fake records every call and answers each with what the test's route
returns, so a test asserts the exact payloads the product sent. ``down()``
makes it answer 503 (or any status) until ``up()``, to show nothing is lost
while a platform is unreachable. ``Telegram`` gives the fake the Bot API's
answers, and ``text_update``/``tap_update`` make the updates Telegram posts.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from .servers import serve_in_thread


@dataclass
class Call:
    method: str
    path: str  # without the query string
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    raw: bytes
    body: Any  # the JSON body, or the form fields (each a str), or None

    def field(self, name: str) -> Any:
        """A body field, JSON-decoded when a form field holds JSON (Slack's ``blocks``)."""
        value = (self.body or {}).get(name)
        if isinstance(value, str) and value[:1] in "[{":
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value


# A route gets the call and answers (status, JSON body) or (status, JSON body, headers).
Route = Callable[[Call], tuple[int, Any] | tuple[int, Any, dict[str, str]]]


@dataclass
class FakeAPI:
    routes: dict[tuple[str, str], Route] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    url: str = ""
    _down: int | None = None
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def route(self, method: str, path: str, answer: Route) -> None:
        """Answer ``method path`` (an exact path) with ``answer(call)``; unknown routes get 404."""
        self.routes[(method.upper(), path)] = answer

    def down(self, status: int = 503) -> None:
        self._down = status

    def up(self) -> None:
        self._down = None

    def of(self, path: str, method: str | None = None) -> list[Call]:
        with self._changed:
            return self._matching(path, method)

    def _matching(self, path: str, method: str | None) -> list[Call]:
        return [c for c in self.calls if c.path == path and (method is None or c.method == method.upper())]

    def wait_for(self, path: str, count: int = 1, *, timeout: float = 10.0, method: str | None = None) -> list[Call]:
        """Block until ``count`` calls to ``path`` arrived (an event, not a sleep); fail after ``timeout``."""
        with self._changed:
            done = self._changed.wait_for(lambda: len(self._matching(path, method)) >= count, timeout=timeout)
            calls = self._matching(path, method)
        if not done:
            seen = [f"{c.method} {c.path}" for c in self.calls]
            raise AssertionError(f"expected {count} call(s) to {path} within {timeout}s, got {len(calls)}; saw {seen}")
        return calls

    def _record(self, call: Call) -> tuple[int, Any, dict[str, str]]:
        with self._changed:
            self.calls.append(call)
            self._changed.notify_all()
        if self._down is not None:
            return self._down, {"ok": False, "error": "service unavailable"}, {}
        answer = self.routes.get((call.method, call.path))
        if answer is None:
            return 404, {"ok": False, "error": f"no route {call.method} {call.path}"}, {}
        out = answer(call)
        return (out[0], out[1], {}) if len(out) == 2 else out  # type: ignore[misc]


def _handler(fake: FakeAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            parsed = urllib.parse.urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            kind = self.headers.get("Content-Type", "")
            body: Any = None
            if raw and "json" in kind:
                body = json.loads(raw)
            elif raw and "form" in kind:
                body = {k: v[-1] for k, v in urllib.parse.parse_qs(raw.decode(), keep_blank_values=True).items()}
            call = Call(
                self.command,
                parsed.path,
                urllib.parse.parse_qs(parsed.query),
                {k.lower(): v for k, v in self.headers.items()},
                raw,
                body,
            )
            status, answer, headers = fake._record(call)
            data = b"" if answer is None else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    return Handler


@pytest.fixture
def fake_api() -> Iterator[FakeAPI]:
    """A fresh fake platform API on 127.0.0.1, stopped after the test."""
    fake = FakeAPI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    stop = serve_in_thread(server)
    try:
        yield fake
    finally:
        stop()


# --- Telegram's Bot API ------------------------------------------------------------------------

TOKEN = "123456:TEST-token"
SECRET = "s3cret-webhook-token"
CHAT = 4242  # alice's private chat with the bot (Telegram: the same number as her user id)
DEADLINE = 10


class Telegram:
    """The fake Bot API's answers, and what the tests read back from its calls."""

    def __init__(self, fake: FakeAPI) -> None:
        self.fake = fake
        self.ids = iter(range(500, 10_000))
        self.hold = threading.Event()  # cleared: each answer waits until it is set again
        self.hold.set()
        self.held = threading.Event()  # an answer is being held
        for method in ("sendMessage", "editMessageText"):
            fake.route("POST", self.path(method), self.message)
        fake.route("POST", self.path("answerCallbackQuery"), lambda call: (200, {"ok": True, "result": True}))
        me = {"id": 1, "is_bot": True, "first_name": "askuser", "username": "askuser_test_bot"}
        fake.route("POST", self.path("getMe"), lambda call: (200, {"ok": True, "result": me}))

    @staticmethod
    def path(method: str) -> str:
        return f"/bot{TOKEN}/{method}"

    def message(self, call):
        if not self.hold.is_set():
            self.held.set()
            self.hold.wait(DEADLINE)
        chat = int(call.body["chat_id"])
        result = {
            "message_id": int(call.body.get("message_id") or next(self.ids)),
            "date": 1_700_000_000,
            "chat": {"id": chat, "type": "private" if chat > 0 else "group"},
            "text": call.body["text"],
        }
        return 200, {"ok": True, "result": result}

    def calls(self, method: str):
        return self.fake.of(self.path(method))

    async def wait_for(self, method: str, count: int = 1):
        return await asyncio.to_thread(self.fake.wait_for, self.path(method), count, timeout=DEADLINE)


def user(user_id: int = CHAT, name: str = "alice") -> dict:
    return {"id": user_id, "is_bot": False, "first_name": name.title(), "username": name}


def tap_update(update_id: int, message_id: int, data: str, *, user_id: int = CHAT, chat: int = CHAT) -> dict:
    message = {"message_id": message_id, "date": 1_700_000_000, "chat": {"id": chat, "type": "private"}, "text": "…"}
    return {
        "update_id": update_id,
        "callback_query": {
            "id": f"cb-{update_id}",
            "from": user(user_id),
            "chat_instance": "ci",
            "message": message,
            "data": data,
        },
    }


def text_update(update_id: int, text: str, *, reply_to: int | None = None, user_id: int = CHAT, chat: int = CHAT):
    message = {
        "message_id": 9000 + update_id,
        "date": 1_700_000_000,
        "chat": {"id": chat, "type": "private" if chat > 0 else "group"},
        "from": user(user_id),
        "text": text,
    }
    if reply_to is not None:
        message["reply_to_message"] = {
            "message_id": reply_to,
            "date": 1_700_000_000,
            "chat": {"id": chat, "type": "private" if chat > 0 else "group"},
            "text": "…",
        }
    return {"update_id": update_id, "message": message}
