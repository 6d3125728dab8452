"""The floor's server: the smallest ASGI app, served by Daphne like askuser.
It answers GETs with ``ok`` and accepts every WebSocket, sending nothing;
``/hold`` sends its head and holds the request until the client hangs up, as
a parked wait is held (the capacity floors)."""

from __future__ import annotations

from typing import Any


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        while (await receive())["type"] != "websocket.disconnect":
            pass
        return
    if scope["type"] != "http":
        return
    if scope["path"] == "/hold":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b" ", "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})
