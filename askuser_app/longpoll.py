"""The agent's bounded long-poll: ``GET /api/v1/prompts/{id}?wait=N``.

Served by a small ASGI app in front of Django, because Django gives every
in-flight request a thread of its own: a thousand parked waits would be a
thousand threads. Here a parked wait is a coroutine and a queue in the hub;
its one database read runs in a short ``database_call`` before
it parks, so it holds no thread and no connection while it waits.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from . import agentauth, contract, services
from .asyncdb import database_call
from .realtime import hub, prompt_group

PROMPT_PATH = re.compile(r"^/api/v1/prompts/(?P<prompt_id>[^/]+)/?$")


async def wait_for_result(authorization: str | None, prompt_id: str, wait: float) -> dict[str, Any]:
    """The prompt's result, waiting up to ``wait`` seconds for a terminal one.

    Subscribes before reading, so an answer committed between the read and
    the wait is never missed; wakes on the channel layer, never by polling.
    """
    try:
        key = uuid.UUID(prompt_id)
    except ValueError:
        await _read_state(authorization, None)
        raise services.NotFound(f"No prompt {prompt_id} for this agent's owner.") from None
    async with hub().listen(prompt_group(key)) as inbox:
        state = await _read_state(authorization, key)
        if state["status"] != "pending" or wait <= 0:
            return state
        deadline = datetime.fromisoformat(state["expires_at"]).timestamp()
        loop = asyncio.get_running_loop()
        timeout = min(wait, deadline - _now() + 0.01)
        try:
            async with asyncio.timeout_at(loop.time() + timeout):
                return (await inbox.get())["result"]
        except TimeoutError:
            pass
    # Past the deadline, this read expires the prompt; otherwise it is still pending.
    return await _read_state(authorization, key) if _now() >= deadline else state


def _now() -> float:
    return time.time()


@database_call
def _read_state(authorization: str | None, prompt_id: uuid.UUID | None) -> dict[str, Any]:
    agent = agentauth.agent_for(authorization)
    if prompt_id is None:
        return {}
    return services.result_of(services.prompt_for_owner(agent.owner_id, prompt_id))


def parse_wait(raw: str | None) -> float:
    """``wait`` in seconds: 0 by default, above 55 means 55."""
    if raw is None or raw == "":
        return 0
    try:
        value = float(raw)
    except ValueError:
        value = -1
    if not value >= 0:  # also rejects NaN
        raise contract.ContractError([{"path": "wait", "message": "must be a number of seconds from 0 to 55"}])
    return min(value, contract.MAX_WAIT)


# --- the ASGI app ------------------------------------------------------------------


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Serve one prompt read; a client that hangs up cancels its wait."""
    headers = dict(scope["headers"])
    authorization = headers.get(b"authorization", b"").decode("latin-1")
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    waiting = asyncio.ensure_future(_outcome(authorization, scope["url_route"]["kwargs"]["prompt_id"], query))
    hangup = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait({waiting, hangup}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        # Also when this app itself is cancelled (an in-process caller gave up): leave no task behind.
        hangup.cancel()
        answered = waiting.done()
        waiting.cancel()
    if not answered:
        return
    status, body, extra = waiting.result()
    await respond(send, status, body, extra)


async def _outcome(authorization: str, prompt_id: str, query: dict[str, list[str]]) -> tuple[int, dict[str, Any], list]:
    try:
        wait = parse_wait((query.get("wait") or [None])[-1])
        return 200, await wait_for_result(authorization, prompt_id, wait), []
    except agentauth.Unauthorized as exc:
        return 401, contract.error_body("unauthorized", str(exc)), [(b"www-authenticate", b"Bearer")]
    except contract.ContractError as exc:
        return 422, contract.error_body("invalid_request", exc.sentence, errors=exc.errors), []
    except services.DomainError as exc:
        return exc.status, contract.error_body(exc.code, exc.message, **exc.extra), []


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def respond(send: Any, status: int, body: dict[str, Any], extra: list | tuple = ()) -> None:
    payload = json.dumps(body, ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store"), *extra]
    headers.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
