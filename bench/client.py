"""A minimal asyncio HTTP/1.1 and WebSocket client, cheap enough to hold
ten thousand connections on the cores the server is using too."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

HOST = "127.0.0.1"


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def build_request(method: str, path: str, port: int, headers: dict[str, str] | None = None, body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{port}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def json_body(payload: Any) -> tuple[dict[str, str], bytes]:
    return {"Content-Type": "application/json"}, json.dumps(payload).encode()


def form_body(fields: dict[str, Any]) -> tuple[dict[str, str], bytes]:
    return {"Content-Type": "application/x-www-form-urlencoded"}, urlencode(fields, doseq=True).encode()


class Http:
    """One keep-alive connection; requests on it run one after another."""

    def __init__(self, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.port, self.reader, self.writer = port, reader, writer

    @classmethod
    async def open(cls, port: int, source: str | None = None) -> Http:
        reader, writer = await asyncio.open_connection(HOST, port, local_addr=(source, 0) if source else None)
        return cls(port, reader, writer)

    async def request(
        self, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
    ) -> Response:
        self.writer.write(build_request(method, path, self.port, headers, body))
        return await self.read_response()

    async def send_raw(self, raw: bytes) -> Response:
        self.writer.write(raw)
        return await self.read_response()

    async def read_response(self) -> Response:
        head = await self.reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            body = await self._chunks()
        else:
            body = await self.reader.read()
        return Response(int(status_line.split()[1]), headers, body)

    async def _chunks(self) -> bytes:
        parts = []
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
            parts.append(await self.reader.readexactly(size + 2))
            if size == 0:
                return b"".join(p[:-2] for p in parts)

    def close(self) -> None:
        self.writer.close()


async def timed(coroutine: Any) -> tuple[float, Any]:
    """The result of ``coroutine`` and the moment it came back."""
    result = await coroutine
    return time.perf_counter(), result


# --- WebSockets ----------------------------------------------------------------

OP_TEXT, OP_CLOSE, OP_PING, OP_PONG = 0x1, 0x8, 0x9, 0xA


def _masked(payload: bytes, key: bytes) -> bytes:
    if not payload:
        return payload
    size = len(payload)
    keys = (key * (size // 4 + 1))[:size]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(keys, "big")).to_bytes(size, "big")


def client_frame(opcode: int, payload: bytes = b"") -> bytes:
    """A client frame: FIN set, masked, as RFC 6455 requires from clients."""
    key = os.urandom(4)
    size = len(payload)
    if size < 126:
        header = bytes([0x80 | opcode, 0x80 | size])
    elif size < 65536:
        header = bytes([0x80 | opcode, 0x80 | 126]) + size.to_bytes(2, "big")
    else:
        header = bytes([0x80 | opcode, 0x80 | 127]) + size.to_bytes(8, "big")
    return header + key + _masked(payload, key)


class WebSocket:
    """A browser's live socket, reduced to what the benchmark needs: connect with
    a session cookie, read text messages, answer pings."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, port: int, path: str, cookie: str, source: str | None = None) -> WebSocket:
        reader, writer = await asyncio.open_connection(HOST, port, local_addr=(source, 0) if source else None)
        key = base64.b64encode(os.urandom(16)).decode()
        headers = {
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": key,
            "Sec-WebSocket-Version": "13",
            "Origin": f"http://{HOST}:{port}",
            "Cookie": cookie,
        }
        writer.write(build_request("GET", path, port, headers))
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            writer.close()
            raise ConnectionError(f"WebSocket refused: {head.splitlines()[0].decode()}")
        return cls(reader, writer)

    async def receive(self) -> str:
        """The next text message; answers pings on the way, raises on close."""
        parts: list[bytes] = []
        while True:
            first, second = await self.reader.readexactly(2)
            size = second & 0x7F
            if size == 126:
                size = int.from_bytes(await self.reader.readexactly(2), "big")
            elif size == 127:
                size = int.from_bytes(await self.reader.readexactly(8), "big")
            payload = await self.reader.readexactly(size)
            opcode = first & 0x0F
            if opcode == OP_PING:
                self.writer.write(client_frame(OP_PONG, payload))
            elif opcode == OP_CLOSE:
                raise ConnectionError(f"WebSocket closed: {int.from_bytes(payload[:2], 'big') if payload else ''}")
            elif opcode != OP_PONG:
                parts.append(payload)
                if first & 0x80:
                    return b"".join(parts).decode()

    def close(self) -> None:
        self.writer.close()
