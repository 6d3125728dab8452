"""The agent's bounded long-polls, plain ASGI applications in front of Django:

- ``GET /api/v1/prompts/{id}?wait=N``: the prompt's result, once terminal;
- ``GET /api/v1/sessions/{key}/messages?after=ID&wait=N``: the user's new messages.

Django gives every in-flight request a thread of its own: a thousand parked
waits would be a thousand threads. Here a parked wait is a coroutine and a
queue in the hub; its database reads run in short ``calls.agent_call``s before
it parks, so it holds no thread and no connection while it waits.

What one agent, one owner and one client address may hold parked at once is
capped (``ASKUSER_MAX_WAITS_PER_*``, per process): beyond it, 429.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from django.conf import settings

from askuser_app.agents import refusals
from askuser_app.agents.calls import agent_call
from askuser_app.domain import agentauth, contract, services
from askuser_app.domain.chars import ascii_int, ascii_number
from askuser_app.runtime import http, metrics, proxies
from askuser_app.runtime.realtime import Inbox, hub, prompt_group, session_group

if TYPE_CHECKING:
    from askuser_app.models import Agent, Session

# A parked wait ends within 55 s, and most much sooner: try again shortly.
RETRY_AFTER = 5


# --- what may be parked -------------------------------------------------------------


class Parked:
    """How many waits each agent, owner and client address holds parked in this process."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, object]] = Counter()

    def hold(self, agent: Agent, address: str | None) -> Holding:
        """A context manager counting one more parked wait for its block, or refusing it past a cap."""
        return Holding(self, (("agent", agent.pk), ("user", agent.owner_id), ("address", address)))

    def _check(self, key: tuple[str, object]) -> None:
        cap = CAPS[key[0]]
        limit = getattr(settings, cap.setting)
        if limit and self.counts[key] >= limit:
            detail = f"{cap.holder} already holds {limit} waits on this server; let one end, then wait again."
            raise services.RateLimited(detail, code="too_many_waits", retry_after=RETRY_AFTER)


class Holding:
    """One parked wait's place in ``Parked``'s counts: its keys only, not the agent's row
    (a generator-based context manager and the row were 0.7 KiB of each wait parked)."""

    __slots__ = ("keys", "parked")

    def __init__(self, parked: Parked, keys: tuple[tuple[str, object], ...]) -> None:
        self.parked = parked
        # A request without a client address (a Unix socket) is counted by agent and owner only.
        self.keys = keys if keys[-1][1] else keys[:-1]

    def __enter__(self) -> None:
        for key in self.keys:
            self.parked._check(key)
        self.parked.counts.update(self.keys)
        metrics.WAITS_PARKED.inc()

    def __exit__(self, *exc: object) -> None:
        metrics.WAITS_PARKED.dec()
        counts = self.parked.counts
        counts.subtract(self.keys)
        for key in self.keys:
            if counts[key] <= 0:
                del counts[key]


@dataclass(frozen=True)
class Cap:
    setting: str  # 0: no cap
    holder: str  # who holds the waits, in the refusal's sentence


CAPS = {
    "agent": Cap("ASKUSER_MAX_WAITS_PER_AGENT", "This agent"),
    "user": Cap("ASKUSER_MAX_WAITS_PER_USER", "This agent's owner (across their agents)"),
    "address": Cap("ASKUSER_MAX_WAITS_PER_ADDRESS", "This client address"),
}
parked = Parked()


# --- prompt results ----------------------------------------------------------------


async def wait_for_result(
    authorization: str | None, prompt_id: str, wait: float, address: str | None = None
) -> dict[str, Any]:
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
        agent, state = await _read_state(authorization, key)
        if state["status"] != "pending" or wait <= 0:
            return state
        end = time.time() + wait
        holding = parked.hold(agent, address)
        del agent  # the row is not kept while parked
        with holding:
            result = await _resolution(inbox, state, end)
        if result is not None:
            return result
    # Past the deadline, this read expires the prompt (or finds it moved: an
    # extension the layer did not bring); a wait that could not subscribe heard
    # nothing, so it reads too. Otherwise it is still pending.
    past_deadline = time.time() >= _deadline(state)
    return (await _read_state(authorization, key))[1] if past_deadline or inbox.deaf else state


async def _resolution(inbox: Inbox, state: dict[str, Any], end: float) -> dict[str, Any] | None:
    """The result a resolution brings before ``end`` or the deadline, whichever is first.

    An extension (``prompt.extended``) moves the deadline in ``state``, which
    the wait then runs to: a wait bounded by the old deadline goes on."""
    while True:
        event = await next_event(inbox, min(end, _deadline(state) + 0.01) - time.time())
        if event is None:
            return None
        if event["type"] == "prompt.resolved":
            result: dict[str, Any] = event["result"]
            return result
        if event["type"] == "prompt.extended" and event["extended"] > state.get("extended", 0):
            state.update(
                expires_at=contract.iso(datetime.fromisoformat(event["expires_at"])), extended=event["extended"]
            )


def _deadline(state: dict[str, Any]) -> float:
    return datetime.fromisoformat(state["expires_at"]).timestamp()


@agent_call
def _read_state(authorization: str | None, prompt_id: uuid.UUID | None) -> tuple[Agent, dict[str, Any]]:
    """The agent the token names (one read: the caps need it) and the prompt's state."""
    agent = agentauth.agent_for(authorization)
    if prompt_id is None:
        return agent, {}
    return agent, services.result_expiring_if_overdue(services.prompt_for_owner(agent.owner_id, prompt_id))


# --- session messages --------------------------------------------------------------


async def wait_for_messages(
    authorization: str | None, key: str, after: int, wait: float, address: str | None = None
) -> dict[str, Any]:
    """The user's messages after ``after``, waiting up to ``wait`` seconds for one."""
    agent, session = await _session(authorization, key)
    session_id, holding = session.pk, parked.hold(agent, address)
    del agent  # the rows are not kept while parked
    async with hub().listen(session_group(session.key)) as inbox:
        del session
        messages = await _messages_after(session_id, after)
        end = time.monotonic() + wait
        if not messages and wait > 0:
            with holding:
                messages = await _messages_arriving(inbox, session_id, after, end)
        if not messages and inbox.deaf:
            messages = await _messages_after(session_id, after)
    return {"messages": messages, "last_id": messages[-1]["id"] if messages else after}


async def _messages_arriving(inbox: Inbox, session_id: int, after: int, end: float) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while not messages and time.monotonic() < end:
        event = await next_event(inbox, end - time.monotonic())
        if event is None:
            break
        # The group is the key's: another owner's session with this key is not this one.
        mine = event.get("session_id") == session_id
        if mine and event["type"] == "message.created" and event.get("author") == "user":
            messages = await _messages_after(session_id, after)
    return messages


@agent_call
def _session(authorization: str | None, key: str) -> tuple[Agent, Session]:
    agent = agentauth.agent_for(authorization)
    return agent, services.session_for_owner(agent.owner_id, key)


@agent_call
def _messages_after(session_id: int, after: int) -> list[dict[str, Any]]:
    return [contract.message_json(m) for m in services.messages_after(session_id, after)]


def next_event(inbox: Inbox, timeout: float) -> Awaitable[dict[str, Any] | None]:
    """The inbox's next message, or None after ``timeout`` seconds."""
    return inbox.get_within(timeout)


# --- parameters ---------------------------------------------------------------------


def parse_wait(raw: str | None) -> float:
    """``wait`` in seconds: 0 by default, above 55 means 55."""
    value = ascii_number(raw) if raw not in (None, "") else 0.0
    if value is None:
        raise contract.ContractError([{"path": "wait", "message": "must be a number of seconds from 0 to 55"}])
    return min(value, contract.MAX_WAIT)


def parse_after(raw: str | None) -> int:
    value = ascii_int(raw) if raw not in (None, "") else 0
    if value is None:
        raise contract.ContractError([{"path": "after", "message": "must be a message id (an integer from 0)"}])
    return value


# --- the routes -------------------------------------------------------------------


class LongPoll:
    """One long-poll, a plain ASGI application; a client that hangs up cancels its wait.

    Not a Channels consumer: a parked wait is held by the thousand, and a
    consumer's instance, its dispatch task kept for the first message, its
    frames and its handler's were 2.4 KiB of each (askuser_app/server/README.md,
    "Waits served as plain ASGI")."""

    __slots__ = ("body", "hangup", "scope", "send")

    def __init__(self, scope: http.Scope, body: bytes) -> None:
        self.scope, self.body = scope, body

    @classmethod
    def as_asgi(cls) -> http.App:
        """The ASGI application serving this long-poll: each request its own instance."""
        return cls.serve

    @classmethod
    async def serve(cls, scope: http.Scope, receive: http.Receive, send: http.Send) -> None:
        body = await http.read_body(receive)
        if body is None:
            return  # hung up before asking
        # The wait runs in this task, and one task listens for a hang-up, which
        # cancels it: not a task of its own and a wait over both, 1.5 KiB more
        # for each of thousands parked (docs/PERFORMANCE.md, "Idle connections").
        # The listening task awaits ``receive`` itself, with no frame of ours around it.
        poll = cls(scope, body)
        waiting = asyncio.current_task()
        assert waiting is not None
        hung_up = False
        listening: asyncio.Future[dict[str, Any]]

        def heard(done: asyncio.Future[dict[str, Any]]) -> None:
            nonlocal hung_up, listening
            if hung_up or done.cancelled():
                return
            if done.exception() is None and done.result()["type"] != "http.disconnect":
                listening = asyncio.ensure_future(receive())  # not a hang-up: listen on
                listening.add_done_callback(heard)
                return
            hung_up = True
            if waiting is not None and not waiting.done():
                waiting.cancel()

        listening = asyncio.ensure_future(receive())
        listening.add_done_callback(heard)
        try:
            # Its clean-up (a hook's prompt handed back, the hub left) ends before the response.
            status, outcome, headers = 200, await poll.wait(), {}
        except refusals.REFUSED as exc:
            refusal = refusals.refusal(exc)
            status, outcome, headers = refusal.status, refusal.body, refusal.headers
        except asyncio.CancelledError:
            if hung_up and waiting.uncancel() == 0:
                return  # the client hung up: nobody to answer
            raise  # this request itself was cancelled (an in-process caller gave up)
        finally:
            # Also when cancelled: leave no task behind, and no hang-up cancels the response.
            hung_up = True
            listening.cancel()
        await http.respond(send, status, outcome, headers, scope=scope)

    def wait(self) -> Awaitable[dict[str, Any]]:
        """The wait's outcome; a subclass may return its function's coroutine, without a frame of its own."""
        raise NotImplementedError

    @property
    def authorization(self) -> str | None:
        for name, value in self.scope["headers"]:
            if name == b"authorization":
                header: str = value.decode("latin-1")
                return header
        return None

    @property
    def address(self) -> str | None:
        return proxies.client_address(self.scope)

    def param(self, name: str) -> str | None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        values: list[str | None] = query.get(name) or [None]
        return values[-1]

    def path_param(self, name: str) -> str:
        value: str = self.scope["url_route"]["kwargs"][name]
        return value


class PromptWait(LongPoll):
    """``GET /api/v1/prompts/{id}?wait=N``."""

    __slots__ = ()

    def wait(self) -> Awaitable[dict[str, Any]]:
        wait = parse_wait(self.param("wait"))
        return wait_for_result(self.authorization, self.path_param("prompt_id"), wait, self.address)


class MessagesWait(LongPoll):
    """``GET /api/v1/sessions/{key}/messages?after=ID&wait=N``."""

    __slots__ = ()

    def wait(self) -> Awaitable[dict[str, Any]]:
        after, wait = parse_after(self.param("after")), parse_wait(self.param("wait"))
        return wait_for_messages(self.authorization, self.path_param("key"), after, wait, self.address)
