"""A local stand-in for a chat platform's HTTP API, for the real SDKs to talk to.

Each platform's test points its SDK at ``fake.url`` through the documented
base-URL setting (``TELEGRAM_API_URL``, ``SLACK_API_URL``, ``DISCORD_API_URL``).
The fake records every call and answers each with what the test's route
returns, so a test asserts the exact payloads the product sent. ``down()``
makes it answer 503 (or any status) until ``up()``, to show nothing is lost
while a platform is unreachable.

``FakeTelegram`` adds the Bot API's long poll (``getUpdates`` held until the
test hands it an update) and ``FakeSlack`` a Socket Mode end (``FakeSocketMode``)
beside Slack's Web API, for a server that fetches its events because it has no
public URL: ``telegram_without_url`` and ``slack_without_url`` start one, a
Daphne process in the embedded mode as ``make run`` serves it;
``text_update``/``tap_update`` make the updates Telegram posts.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import itertools
import json
import re
import socket
import struct
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.servers import DaphneServer, serve_in_thread


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
            with contextlib.suppress(ConnectionError):  # a client that hung up (a held poll, its server stopped)
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


class FakeSocketMode:
    """Slack's Socket Mode end on 127.0.0.1: a WebSocket that pushes envelopes and records the acknowledgements."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"ws://127.0.0.1:{self.server.getsockname()[1]}/link/?ticket=t1"
        self.acks: list[dict[str, Any]] = []
        self.changed = threading.Condition()
        self.peer: socket.socket | None = None
        self.ended = threading.Event()  # the client closed the socket, or the fake did
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            self._converse()
        self.ended.set()

    def _converse(self) -> None:
        peer, _address = self.server.accept()
        request = b""
        while b"\r\n\r\n" not in request:
            request += peer.recv(1024)
        key = re.search(rb"Sec-WebSocket-Key: *(\S+)", request, re.I)[1]  # type: ignore[index]
        accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
        peer.sendall(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        with self.changed:
            self.peer = peer
            self.changed.notify_all()
        while True:
            opcode, data = self._frame(peer)
            if opcode == 0x9:  # ping
                self._send(0xA, data)
            elif opcode == 0x1:
                with self.changed:
                    self.acks.append(json.loads(data))
                    self.changed.notify_all()
            elif opcode == 0x8:
                return

    @staticmethod
    def _frame(peer: socket.socket) -> tuple[int, bytes]:
        def exactly(count: int) -> bytes:
            data = b""
            while len(data) < count:
                chunk = peer.recv(count - len(data))
                if not chunk:
                    raise OSError("closed")
                data += chunk
            return data

        first, second = exactly(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", exactly(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", exactly(8))[0]
        mask = exactly(4) if second & 0x80 else b"\0\0\0\0"
        return first & 0x0F, bytes(b ^ mask[i % 4] for i, b in enumerate(exactly(length)))

    def _send(self, opcode: int, data: bytes) -> None:
        assert self.peer is not None
        size = len(data)
        head = bytes([0x80 | opcode, size]) if size < 126 else bytes([0x80 | opcode, 126]) + struct.pack("!H", size)
        self.peer.sendall(head + data)

    def connected(self, timeout: float = 10) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.peer is not None, timeout=timeout)

    def push(self, envelope: dict[str, Any]) -> None:
        assert self.connected(), "the client never connected"
        self._send(0x1, json.dumps(envelope).encode())

    def ack(self, envelope_id: str, timeout: float = 10) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            return next((a for a in self.acks if a.get("envelope_id") == envelope_id), None)

        with self.changed:
            assert self.changed.wait_for(lambda: found() is not None, timeout=timeout), f"no ack of {envelope_id}"
            return found()  # type: ignore[return-value]

    def close(self) -> None:
        """At once: the client reads the end of its socket, and the serving thread wakes up and ends."""
        for end in (self.peer, self.server):
            if end is not None:
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()


TOKEN = "123456:TEST-token"
SECRET = "s3cret-webhook-token"
CHAT = 4242  # alice's private chat with the bot (Telegram: the same number as her user id)
DEADLINE = 10
SLACK_USER, SLACK_DM = "U0ALICE", "D0ALICE"  # alice on Slack, and her direct message with the app


class FakeTelegram:
    """The Bot API methods askuser calls, on ``fake``, for the bot ``token``: messages get ids,
    and ``getUpdates`` is held, as Telegram's long poll is, until ``deliver`` gives it an
    update past the poll's offset (at most ``limit``, 100 by default), its ``timeout`` runs out,
    or ``close`` ends every poll.
    Clearing ``hold`` holds each message's answer until it is set again (``held`` tells)."""

    def __init__(self, fake: FakeAPI, token: str = TOKEN) -> None:
        self.fake, self.token = fake, token
        self.ids = itertools.count(500)
        self.updates: list[dict[str, Any]] = []
        self.closed = False
        self.changed = threading.Condition()
        self.hold = threading.Event()  # cleared: each answer waits until it is set again
        self.hold.set()
        self.held = threading.Event()  # an answer is being held
        for method in ("sendMessage", "editMessageText"):
            fake.route("POST", self.path(method), self._message)
        fake.route("POST", self.path("answerCallbackQuery"), lambda call: (200, {"ok": True, "result": True}))
        me = {"id": 1, "is_bot": True, "first_name": "askuser", "username": "askuser_test_bot"}
        fake.route("POST", self.path("getMe"), lambda call: (200, {"ok": True, "result": me}))
        fake.route("POST", self.path("getUpdates"), self._get_updates)

    def path(self, method: str) -> str:
        return f"/bot{self.token}/{method}"

    def calls(self, method: str) -> list[Call]:
        return self.fake.of(self.path(method))

    def wait_for(self, method: str, count: int = 1, timeout: float = DEADLINE) -> list[Call]:
        return self.fake.wait_for(self.path(method), count, timeout=timeout)

    async def arrived(self, method: str, count: int = 1) -> list[Call]:
        """``wait_for``, from a test's event loop."""
        return await asyncio.to_thread(self.wait_for, method, count)

    def deliver(self, update: dict[str, Any]) -> None:
        with self.changed:
            self.updates.append(update)
            self.changed.notify_all()

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def _message(self, call: Call) -> tuple[int, Any]:
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

    def polled_from(self, offset: int, timeout: float = DEADLINE) -> Call:
        """Block until a ``getUpdates`` asks from ``offset`` (every update before it was handled)."""

        def asked() -> Call | None:
            polls = self.fake._matching(self.path("getUpdates"), None)
            return next((c for c in polls if str((c.body or {}).get("offset")) == str(offset)), None)

        with self.fake._changed:
            if not self.fake._changed.wait_for(lambda: asked() is not None, timeout=timeout):
                offsets = [(c.body or {}).get("offset") for c in self.calls("getUpdates")]
                raise AssertionError(f"no getUpdates from offset {offset} within {timeout}s; asked from {offsets}")
            return asked()  # type: ignore[return-value]

    def _get_updates(self, call: Call) -> tuple[int, Any]:
        fields = call.body or {}
        offset, hold = int(fields.get("offset") or 0), float(fields.get("timeout") or 0)
        limit = int(fields.get("limit") or 100)  # Telegram's default and most

        def due() -> list[dict[str, Any]]:
            return [update for update in self.updates if update["update_id"] >= offset][:limit]

        with self.changed:
            self.changed.wait_for(lambda: self.closed or bool(due()), timeout=hold)
            return 200, {"ok": True, "result": [] if self.closed else due()}


class FakeSlack:
    """The Web API methods askuser calls, on ``fake`` under ``/api/`` (``SLACK_API_URL``), and
    the Socket Mode end that ``apps.connections.open`` names."""

    def __init__(self, fake: FakeAPI) -> None:
        self.fake = fake
        self.socket = FakeSocketMode()
        self.stamps = itertools.count(1)
        self.api_url = f"{fake.url}/api/"
        fake.route("POST", "/api/apps.connections.open", lambda call: (200, {"ok": True, "url": self.socket.url}))
        fake.route("POST", "/api/conversations.open", lambda call: (200, {"ok": True, "channel": {"id": SLACK_DM}}))
        fake.route("POST", "/api/chat.postMessage", self._posted)
        for method in ("chat.update", "chat.postEphemeral", "views.open"):
            fake.route("POST", f"/api/{method}", lambda call: (200, {"ok": True}))

    def _posted(self, call: Call) -> tuple[int, Any]:
        return 200, {"ok": True, "channel": call.body["channel"], "ts": f"1700000000.{next(self.stamps):06d}"}

    def wait_for(self, method: str, count: int = 1, timeout: float = 10.0) -> list[Call]:
        return self.fake.wait_for(f"/api/{method}", count, timeout=timeout)

    def close(self) -> None:
        self.socket.close()


SLACK_SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@dataclass
class WithoutURL:
    """A server with no public URL, in the embedded mode, and the fake chat app it fetches from."""

    server: DaphneServer
    app: Any  # FakeTelegram or FakeSlack


def embedded(env: dict[str, str]) -> dict[str, str]:
    """The test server's environment in the embedded mode (no Redis: the in-memory channel
    layer), on the tier's database; quick retries of the chat messages."""
    return {**{k: v for k, v in env.items() if k != "REDIS_URL"}, "ASKUSER_CHAT_RETRY_BASE": "0.05"}


def _started(env: dict[str, str], app: Any) -> Iterator[WithoutURL]:
    server = DaphneServer(env)
    server.env["ASKUSER_PUBLIC_URL"] = server.url
    try:
        yield WithoutURL(server.start(), app)
    finally:
        server.stop()  # first, so that nothing polls the fake once it closes
        app.close()


@pytest.fixture
def telegram_without_url(server_env, fake_api) -> Iterator[WithoutURL]:
    """``make run`` with ``TELEGRAM_BOT_TOKEN`` and no ``TELEGRAM_WEBHOOK_SECRET``."""
    app = FakeTelegram(fake_api)
    env = {**embedded(server_env), "TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_URL": fake_api.url}
    env.pop("TELEGRAM_WEBHOOK_SECRET", None)
    yield from _started(env, app)


@pytest.fixture
def slack_without_url(server_env, fake_api) -> Iterator[WithoutURL]:
    """``make run`` with Slack's bot token, signing secret and app-level token (Socket Mode)."""
    app = FakeSlack(fake_api)
    env = {**embedded(server_env), "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SLACK_SIGNING_SECRET}
    env |= {"SLACK_APP_TOKEN": "xapp-test", "SLACK_API_URL": app.api_url}
    yield from _started(env, app)

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


def slack_dm(text: str) -> dict[str, Any]:
    """The event Slack sends for alice's message ``text`` in her direct message with the app."""
    return {
        "type": "message",
        "channel_type": "im",
        "channel": SLACK_DM,
        "user": SLACK_USER,
        "text": text,
        "ts": "1800.1",
    }
