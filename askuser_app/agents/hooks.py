"""``POST /api/v1/hooks?wait=N``: a coding agent's hook event, answered with the hook's output.

Served in front of Django like the long-polls (``waits``), because a
permission request parks until the person answers or ``wait`` passes (55 s by
default, at most 590): parked, it is a coroutine and a queue in the hub, with
no thread and no database connection held. What the event means and what
the agent gets back is ``domain.hooks``'s; the state changes are ``services``'.

- ``PermissionRequest`` and ``PreToolUse`` ask a prompt and wait for it; a
  prompt nobody answered in time, or whose agent hung up, is handed back
  (``services.hand_back``: "Asked at the terminal instead").
- ``Notification`` and ``Stop`` write a line in the session's timeline, tell
  the person on their channels (a ``Stop`` only if they chose so in Settings),
  and return ``{}`` at once; any other event returns ``{}``.
- A session that already has a pending prompt answers ``{}`` at once: the
  agent's own dialog takes over, where a 409 would read as the hook failing.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from askuser_app.agents import api
from askuser_app.agents.waits import LongPoll, next_event, parked
from askuser_app.domain import agentauth, contract, hooks, services
from askuser_app.domain.chars import ascii_number
from askuser_app.runtime.asyncdb import database_call
from askuser_app.runtime.realtime import Inbox, hub, prompt_group

if TYPE_CHECKING:
    from askuser_app.models import Agent, Prompt


def parse_wait(raw: str | None) -> float:
    """``wait`` in seconds: 55 by default, above 590 means 590."""
    value = ascii_number(raw) if raw not in (None, "") else float(hooks.DEFAULT_WAIT)
    if value is None:
        message = f"must be a number of seconds from 0 to {hooks.MAX_WAIT}"
        raise contract.ContractError([{"path": "wait", "message": message}])
    return min(value, hooks.MAX_WAIT)


async def answer_hook(
    authorization: str | None, body: bytes, wait: float, address: str | None = None, name: str = hooks.AGENT
) -> dict[str, Any]:
    """The hook's output for the event in ``body``, waiting up to ``wait`` seconds for the person;
    ``name`` is the coding agent's (``?agent=``), in the session's title and its lines."""
    agent, event, prompt = await _take(authorization, body, wait, name)
    if prompt is None:
        return {}
    async with hub().listen(prompt_group(prompt.pk)) as inbox:
        result = await _result(prompt)
        try:
            if result is None and wait > 0:
                with parked.hold(agent, address):
                    result = await _waiting(inbox, time.monotonic() + wait)
        finally:
            if result is None:
                # Also when the agent hung up and this wait was cancelled: the prompt must not stay open.
                result = await asyncio.shield(_hand_back(prompt, agent))
    return hooks.decision(event, result, wait)


@database_call
def _take(authorization: str | None, body: bytes, wait: float, name: str) -> tuple[Agent, Any, Prompt | None]:
    """The token check, the event read, and what it does: a prompt asked, a line written, or nothing."""
    agent = agentauth.agent_for(authorization)
    event = api.parse_json(body)
    kind = hooks.event_name(event)
    if kind in hooks.ASKING:
        return agent, event, _ask(agent, event, wait, name)
    said = hooks.line(event, name) if kind else None
    if said is not None:
        title, tell = hooks.title(event, name), hooks.tells(event)
        services.post_agent_note(agent, hooks.session_key(event), said, title=title, tell=tell)
    return agent, event, None


def _ask(agent: Agent, event: Any, wait: float, name: str) -> Prompt | None:
    request = hooks.permission_request(event, wait, name)
    try:
        return services.ask(agent, request, hook_event=hooks.event_name(event)).prompt
    except services.Conflict as busy:
        if busy.code != "session_busy":
            raise
        return None  # one question at a time: the terminal's dialog asks this one


@database_call
def _result(prompt: Prompt) -> dict[str, Any] | None:
    """The prompt's result if it resolved before the wait began listening."""
    state = services.result_expiring_if_overdue(prompt)
    return None if state["status"] == "pending" else state


async def _waiting(inbox: Inbox, end: float) -> dict[str, Any] | None:
    while True:
        event = await next_event(inbox, end - time.monotonic())
        if event is None:
            return None
        if event["type"] == "prompt.resolved":
            result: dict[str, Any] = event["result"]
            return result


@database_call
def _hand_back(prompt: Prompt, agent: Agent) -> dict[str, Any] | None:
    """Close the prompt unanswered; an answer (or an end) that won meanwhile is the result."""
    try:
        services.hand_back(prompt, agent=agent)
    except services.AlreadyResolved as lost:
        return lost.prompt.result
    except services.Conflict:  # expiring as the wait ended, and More time moved it: close it at its deadline
        return None
    return None


class HookCall(LongPoll):
    """``POST /api/v1/hooks?wait=N``."""

    async def handle(self, body: bytes) -> None:
        self.body = body
        await super().handle(body)

    async def wait(self) -> dict[str, Any]:
        wait, name = parse_wait(self.param("wait")), hooks.agent_name(self.param("agent"))
        return await answer_hook(self.authorization, self.body, wait, self.address, name)
