"""A fake model API on loopback that plays a scripted turn to a real coding-agent CLI.

Claude Code speaks Anthropic's Messages API (``POST /v1/messages``, streamed as server-sent
events); Codex speaks OpenAI's Responses API (``POST /v1/responses``, streamed the same way).
A test writes what the model does, turn by turn::

    fake = ModelFake(listener, [[Tool("Bash", {"command": "make"})], [Say("Done.")]])

and the fake answers the agent's n-th request of its conversation with the n-th turn (the
turn is read from the request, counting the model's earlier turns in it, so a retried
request gets the same answer). After the last turn the model says "Done." and ends. What
came back to the model (a command's output, the person's reason for a deny) is in
``tool_results()``; every request is kept in ``requests``.

Requests that are not the conversation (Claude Code's title, quota and safety side
queries: no tools offered) get a short text answer, and so does anything else on any path:
nothing a CLI asks fails, and nothing of it is a turn.

The stream shapes are the APIs' published ones: ``message_start``, ``content_block_*``,
``message_delta`` (``stop_reason``) and ``message_stop`` for Messages; ``response.created``,
``response.output_item.done`` and ``response.completed`` for Responses.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.servers import serve_in_thread

MODEL = "claude-sonnet-4-5"


@dataclass(frozen=True)
class Say:
    """The model writes text."""

    text: str


@dataclass(frozen=True)
class Tool:
    """The model calls a tool: ``Tool("Bash", {"command": "make"})`` for Claude Code,
    ``Tool("shell", {"command": ["bash", "-lc", "make"]})`` for Codex (its tools' own names
    and inputs, as the request's ``tools`` lists them)."""

    name: str
    input: dict[str, Any]


Turn = Sequence[Say | Tool]
END: Turn = (Say("Done."),)


@dataclass
class Request:
    path: str
    body: dict[str, Any]

    @property
    def conversation(self) -> bool:
        """A turn of the agent's conversation: it offers the model tools."""
        return bool(self.body.get("tools"))


@dataclass
class ModelFake:
    """Serves both APIs on ``listener`` (a bound, listening socket; ``tests/agentclis.py``'s
    network namespace makes it) until ``stop()``."""

    listener: socket.socket
    script: Sequence[Turn | Callable[[Request], Turn]]
    requests: list[Request] = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        self.changed = threading.Condition()
        host, port = self.listener.getsockname()[:2]
        self.url = f"http://{host}:{port}"
        server = ThreadingHTTPServer((host, port), _handler(self), bind_and_activate=False)
        server.socket.close()
        server.socket = self.listener
        server.daemon_threads = True
        self.stop = serve_in_thread(server)

    # --- what the tests read ----------------------------------------------------------

    def conversation(self) -> list[Request]:
        with self.changed:
            return [r for r in self.requests if r.conversation]

    def wait_for(self, condition: Callable[[ModelFake], bool], within: float) -> None:
        """Until ``condition(self)`` holds, woken by each request; AssertionError after ``within`` s."""
        with self.changed:
            if not self.changed.wait_for(lambda: condition(self), within):
                raise AssertionError(f"the model fake never saw that; it got {self.paths()}")

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def tool_results(self) -> list[str]:
        """Every tool result the agent sent back in its conversation, oldest first, as text
        (both APIs): a command's output, the reason it did not run."""
        found: list[str] = []
        for request in self.conversation()[-1:]:
            for item in request.body.get("messages", []):
                for block in item.get("content", []) if isinstance(item.get("content"), list) else []:
                    if block.get("type") == "tool_result":
                        found.append(_text(block.get("content")))
            for item in request.body.get("input", []) if isinstance(request.body.get("input"), list) else []:
                if item.get("type") == "function_call_output":
                    found.append(_text(item.get("output")))
        return found

    # --- what the model says ----------------------------------------------------------

    def turn_for(self, request: Request) -> Turn:
        done = _model_turns(request.body)
        turn = self.script[done] if done < len(self.script) else END
        return turn(request) if callable(turn) else turn  # a turn written from what the agent sent

    def record(self, request: Request) -> None:
        with self.changed:
            self.requests.append(request)
            self.changed.notify_all()

    def next_id(self) -> int:
        return next(self._ids)


def _model_turns(body: dict[str, Any]) -> int:
    """How many turns the model has had in this conversation (Messages or Responses)."""
    if isinstance(body.get("messages"), list):
        return sum(1 for m in body["messages"] if m.get("role") == "assistant")
    items = body.get("input") if isinstance(body.get("input"), list) else []
    # A Responses turn that called tools is its function calls, answered by their outputs.
    calls = {i.get("call_id") for i in items if i.get("type") == "function_call"}
    spoken = sum(1 for i in items if i.get("type") == "message" and i.get("role") == "assistant")
    return len(calls) + spoken


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(c.get("text", c.get("content", ""))) for c in content if isinstance(c, dict))
    return json.dumps(content)


# --- the wire ---------------------------------------------------------------------------


def _handler(fake: ModelFake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            fake.record(Request(self.path, {}))
            self._json({"data": [{"id": MODEL, "type": "model", "display_name": MODEL}]})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            request = Request(self.path.split("?")[0], body if isinstance(body, dict) else {})
            fake.record(request)
            turn = fake.turn_for(request) if request.conversation else (Say("OK"),)
            if request.path.endswith("/count_tokens"):
                self._json({"input_tokens": 1})
            elif request.path.endswith("/messages"):
                self._stream(_messages(turn, fake.next_id()) if body.get("stream") else None, turn)
            elif request.path.endswith("/responses"):
                self._stream(_responses(turn, fake.next_id()), turn)
            else:
                self._json({})

        def _json(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, events: list[tuple[str, dict[str, Any]]] | None, turn: Turn) -> None:
            if events is None:  # a Messages request that did not ask for a stream
                self._json(_message(turn, fake.next_id()))
                return
            data = b"".join(f"event: {name}\ndata: {json.dumps(e)}\n\n".encode() for name, e in events)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


USAGE = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _blocks(turn: Turn, number: int) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": part.text}
        if isinstance(part, Say)
        else {"type": "tool_use", "id": f"toolu_{number:04d}{i:02d}", "name": part.name, "input": part.input}
        for i, part in enumerate(turn)
    ]


def _stop_reason(turn: Turn) -> str:
    return "tool_use" if any(isinstance(part, Tool) for part in turn) else "end_turn"


def _message(turn: Turn, number: int) -> dict[str, Any]:
    return {
        "id": f"msg_{number:04d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": _blocks(turn, number),
        "stop_reason": _stop_reason(turn),
        "stop_sequence": None,
        "usage": USAGE,
    }


def _messages(turn: Turn, number: int) -> list[tuple[str, dict[str, Any]]]:
    """A Messages API stream for ``turn``: each block started, given in one delta, stopped."""
    start = {**_message(turn, number), "content": [], "stop_reason": None}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(_blocks(turn, number)):
        if block["type"] == "text":
            empty, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            empty = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    stop = {"stop_reason": _stop_reason(turn), "stop_sequence": None}
    events.append(("message_delta", {"type": "message_delta", "delta": stop, "usage": {"output_tokens": 5}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _responses(turn: Turn, number: int) -> list[tuple[str, dict[str, Any]]]:
    """A Responses API stream for ``turn``: each output item done, then the response completed."""
    response_id = f"resp_{number:04d}"
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": {"id": response_id}})
    ]
    for index, part in enumerate(turn):
        if isinstance(part, Say):
            item = {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{number:04d}{index:02d}",
                "content": [{"type": "output_text", "text": part.text}],
            }
        else:
            call = f"call_{number:04d}{index:02d}"
            item = {"type": "function_call", "id": f"fc_{call}", "call_id": call, "name": part.name}
            item["arguments"] = json.dumps(part.input)
        events.append(("response.output_item.done", {"type": "response.output_item.done", "item": item}))
    usage = {
        "input_tokens": 10,
        "input_tokens_details": None,
        "output_tokens": 5,
        "output_tokens_details": None,
        "total_tokens": 15,
    }
    completed = {"type": "response.completed", "response": {"id": response_id, "usage": usage}}
    events.append(("response.completed", completed))
    return events
