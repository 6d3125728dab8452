"""The agent's bounded long-polls, served in front of Django:

- ``GET /api/v1/prompts/{id}?wait=N``: the prompt's result, once terminal;
- ``GET /api/v1/sessions/{key}/messages?after=ID&wait=N``: the user's new messages.

Django gives every in-flight request a thread of its own: a thousand parked
waits would be a thousand threads. Here a parked wait is a coroutine and a
queue in the hub; its database reads run in short ``database_call``s before
it parks, so it holds no thread and no connection while it waits.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from . import agentauth, contract, services
from .asyncdb import database_call
from .realtime import Inbox, hub, prompt_group, session_group

Outcome = tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]


# --- prompt results ----------------------------------------------------------------


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
        event = await _next(inbox, min(wait, deadline - time.time() + 0.01))
        if event is not None:
            return event["result"]
    # Past the deadline, this read expires the prompt; a wait that could not
    # subscribe heard nothing, so it reads too. Otherwise it is still pending.
    return await _read_state(authorization, key) if time.time() >= deadline or inbox.deaf else state


@database_call
def _read_state(authorization: str | None, prompt_id: uuid.UUID | None) -> dict[str, Any]:
    agent = agentauth.agent_for(authorization)
    if prompt_id is None:
        return {}
    return services.result_expiring_if_overdue(services.prompt_for_owner(agent.owner_id, prompt_id))


# --- session messages --------------------------------------------------------------


async def wait_for_messages(authorization: str | None, key: str, after: int, wait: float) -> dict[str, Any]:
    """The user's messages after ``after``, waiting up to ``wait`` seconds for one."""
    session_id = await _session_id(authorization, key)
    async with hub().listen(session_group(session_id)) as inbox:
        messages = await _messages_after(session_id, after)
        end = time.monotonic() + wait
        while not messages and time.monotonic() < end:
            event = await _next(inbox, end - time.monotonic())
            if event is None:
                break
            if event["type"] == "message.created" and event.get("author") == "user":
                messages = await _messages_after(session_id, after)
        if not messages and inbox.deaf:
            messages = await _messages_after(session_id, after)
    return {"messages": messages, "last_id": messages[-1]["id"] if messages else after}


@database_call
def _session_id(authorization: str | None, key: str) -> int:
    agent = agentauth.agent_for(authorization)
    return services.session_for_owner(agent.owner_id, key).pk


@database_call
def _messages_after(session_id: int, after: int) -> list[dict[str, Any]]:
    return [contract.message_json(m) for m in services.messages_after(session_id, after)]


async def _next(inbox: Inbox, timeout: float) -> dict[str, Any] | None:
    try:
        async with asyncio.timeout(max(timeout, 0)):
            return await inbox.get()
    except TimeoutError:
        return None


# --- parameters and errors ---------------------------------------------------------


def parse_wait(raw: str | None) -> float:
    """``wait`` in seconds: 0 by default, above 55 means 55."""
    try:
        value = float(raw) if raw not in (None, "") else 0.0
    except ValueError:
        value = -1
    if not value >= 0:  # also rejects NaN
        raise contract.ContractError([{"path": "wait", "message": "must be a number of seconds from 0 to 55"}])
    return min(value, contract.MAX_WAIT)


def parse_after(raw: str | None) -> int:
    try:
        value = int(raw) if raw not in (None, "") else 0
    except ValueError:
        value = -1
    if value < 0:
        raise contract.ContractError([{"path": "after", "message": "must be a message id (an integer from 0)"}])
    return value


async def outcome(waiting: Callable[[], Awaitable[dict[str, Any]]]) -> Outcome:
    """Run a long-poll and turn its refusals into the API's error responses."""
    try:
        return 200, await waiting(), []
    except agentauth.Unauthorized as exc:
        return 401, contract.error_body("unauthorized", str(exc)), [(b"www-authenticate", b"Bearer")]
    except contract.ContractError as exc:
        return 422, contract.error_body("invalid_request", exc.sentence, errors=exc.errors), []
    except services.DomainError as exc:
        return exc.status, contract.error_body(exc.code, exc.message, **exc.extra), []


# --- the ASGI app ------------------------------------------------------------------

Handler = Callable[[str, dict[str, str], dict[str, list[str]]], Awaitable[dict[str, Any]]]


def _param(query: dict[str, list[str]], name: str) -> str | None:
    return (query.get(name) or [None])[-1]


async def _prompt(authorization: str, path: dict[str, str], query: dict[str, list[str]]) -> dict[str, Any]:
    return await wait_for_result(authorization, path["prompt_id"], parse_wait(_param(query, "wait")))


async def _messages(authorization: str, path: dict[str, str], query: dict[str, list[str]]) -> dict[str, Any]:
    after, wait = parse_after(_param(query, "after")), parse_wait(_param(query, "wait"))
    return await wait_for_messages(authorization, path["key"], after, wait)


ROUTES: list[tuple[re.Pattern[str], Handler]] = [
    (re.compile(r"^/api/v1/prompts/(?P<prompt_id>[^/]+)/?$"), _prompt),
    (re.compile(r"^/api/v1/sessions/(?P<key>[^/]+)/messages/?$"), _messages),
]


def route(path: str) -> tuple[Handler, dict[str, str]] | None:
    for pattern, handler in ROUTES:
        match = pattern.match(path)
        if match:
            return handler, match.groupdict()
    return None


async def serve(handler: Handler, path: dict[str, str], scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Serve one long-poll; a client that hangs up cancels its wait."""
    authorization = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    waiting = asyncio.ensure_future(outcome(lambda: handler(authorization, path, query)))
    hangup = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait({waiting, hangup}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        # Also when this app itself is cancelled (an in-process caller gave up): leave no task behind.
        hangup.cancel()
        answered = waiting.done()
        waiting.cancel()
    if answered:
        await respond(send, *waiting.result())


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


RESPONSE_HEADERS = [
    (b"content-type", b"application/json"),
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
]


async def respond(send: Any, status: int, body: dict[str, Any], extra: list | tuple = ()) -> None:
    payload = json.dumps(body, ensure_ascii=False).encode()
    headers = [*RESPONSE_HEADERS, *extra]
    headers.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
