"""``POST /api/v1/hooks?wait=N``: a coding agent's hook event, answered with the hook's output.

Served in front of Django like the long-polls (``waits``), because a
permission request parks until the person answers or ``wait`` passes (55 s by
default, at most 590): parked, it is a coroutine and a queue in the hub, with
no thread and no database connection held. What the event means and what
the agent gets back is ``domain.hooks``'s; the state changes are ``services``'.

- ``PermissionRequest`` and ``PreToolUse`` ask a prompt and wait for it; a
  prompt nobody answered in time, or whose agent hung up, is handed back
  (``services.hand_back``: "Asked at the terminal instead"). Past the caps on
  parked waits, the hook is refused (429) before anything is asked.
- An event that shows the agent decided at its terminal meanwhile
  (``hooks.shows_decided``: ``PostToolUse``, ``Stop``, a newer request…)
  closes the session's hook question (``services.decided_at_terminal``): its
  waiting hook returns ``{}`` and every surface shows "Decided at the terminal".
- ``Notification`` and ``Stop`` write a line in the session's timeline, tell
  the person on their channels (a ``Stop`` only if they chose so in Settings;
  a ``Notification`` not while askuser holds the question it alerts about),
  and return ``{}`` at once; any other event returns ``{}``.
- A plan's ``PermissionRequest`` right after its ``PreToolUse`` asks nothing new: it takes that
  question's answer (``{}`` when nobody gave one), so the person is asked once.
- A session that already has a pending prompt for the same tool use answers
  ``{}`` at once: the agent's own dialog takes over, where a 409 would read as
  the hook failing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from askuser_app.agents import api
from askuser_app.agents.calls import agent_call
from askuser_app.agents.waits import LongPoll, next_event, parked
from askuser_app.domain import agentauth, contract, hooks, services
from askuser_app.domain.chars import ascii_number
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
    agent, event = await _take(authorization, body, name)
    kind = hooks.kind_of(event)
    if kind is None:
        return {}
    # Held before the prompt is asked: a hook past the caps is refused with nothing made.
    with parked.hold(agent, address) if wait > 0 else contextlib.nullcontext():
        prompt = await _ask(agent, event, kind, wait, name)
        if prompt is None:
            return {}
        async with hub().listen(prompt_group(prompt.pk)) as inbox:
            result = await _result(agent, prompt)
            try:
                if result is None and wait > 0:
                    result = await _waiting(inbox, time.monotonic() + wait)
            finally:
                if result is None:
                    # Also when the agent hung up and this wait was cancelled: the prompt must not stay open.
                    result = await asyncio.shield(_hand_back(prompt, agent))
    return kind.output(event, result)


@agent_call
def _take(authorization: str | None, body: bytes, name: str) -> tuple[Agent, Any]:
    """The token check and the event read; an event that asks nothing does here what it does."""
    agent = agentauth.agent_for(authorization)
    event = api.parse_json(body)
    if hooks.event_name(event) and hooks.kind_of(event) is None:
        _learn(agent, event, name)
    return agent, event


def _learn(agent: Agent, event: Any, name: str) -> None:
    """What an event that asks nothing tells askuser: that the terminal decided, a timeline line."""
    _close_if_decided(agent, event)
    said = hooks.line(event, name)
    if said is None:
        return
    tell = "" if _already_asking(agent, event) else hooks.tells(event)
    title = hooks.title(event, name)
    services.post_agent_note(agent, hooks.session_key(event), said, title=title, tell=tell)


def _close_if_decided(agent: Agent, event: Any) -> None:
    if hooks.event_name(event) not in hooks.DECIDING or not _has_session(event):
        return
    asked = services.open_hook_question(agent, hooks.session_key(event))
    if asked is not None and hooks.shows_decided(event, asked.hook_tool_use):
        services.decided_at_terminal(asked, agent=agent, event=hooks.event_name(event))


def _already_asking(agent: Agent, event: Any) -> bool:
    """Whether askuser holds the question this ``Notification`` alerts about: one alert is enough."""
    alerted = hooks.alerted_kinds(event)
    asked = services.open_hook_question(agent, hooks.session_key(event)) if alerted else None
    return asked is not None and asked.hook_kind in alerted


def _has_session(event: Any) -> bool:
    session_id = event.get("session_id")
    return isinstance(session_id, str) and bool(session_id.strip())


@agent_call
def _ask(agent: Agent, event: Any, kind: hooks.Kind, wait: float, name: str) -> Prompt | None:
    """The prompt ``event`` asks; None when its session holds one for the same tool use."""
    request = kind.asks(event, wait, name)
    if (first := _asked_first(agent, event, kind)) is not None:
        return first  # its answer (or its wait) is this event's too: one question, asked once
    _close_if_decided(agent, event)  # a newer request: the older one was decided at the terminal
    hook = services.HookAsk(hooks.event_name(event), kind.name, hooks.asked_use(kind, event))
    try:
        return services.ask(agent, request, hook=hook).prompt
    except services.Conflict as busy:
        if busy.code != "session_busy":
            raise
        return None  # one question at a time: the terminal's dialog asks this one


def _asked_first(agent: Agent, event: Any, kind: hooks.Kind) -> Prompt | None:
    """The question this twin event follows (AskUserQuestion's or a plan's PermissionRequest after
    its PreToolUse): the session's newest hook question, when another event of this kind asked it
    for the same tool use, whatever its state."""
    if hooks.event_name(event) not in kind.follows:
        return None
    newest = services.last_hook_question(agent, hooks.session_key(event))
    if newest is None or newest.hook_kind != kind.name or newest.hook_event == hooks.event_name(event):
        return None
    return newest if newest.hook_tool_use == hooks.asked_use(kind, event) else None


@agent_call
def _result(agent: Agent, prompt: Prompt) -> dict[str, Any] | None:
    """The prompt's result if it resolved before the wait began listening: read again, as a wait
    reads it (agents/waits.py), since an answer can land between the create's commit and the
    listening (from another tab, a chat app, another process), and its announcement then reaches
    no one; one overdue is expired first."""
    state = services.result_expiring_if_overdue(services.prompt_for_owner(agent.owner_id, prompt.pk))
    return None if state["status"] == "pending" else state


async def _waiting(inbox: Inbox, end: float) -> dict[str, Any] | None:
    while True:
        event = await next_event(inbox, end - time.monotonic())
        if event is None:
            return None
        if event["type"] == "prompt.resolved":
            result: dict[str, Any] = event["result"]
            return result


@agent_call
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

    __slots__ = ()

    async def wait(self) -> dict[str, Any]:
        wait, name = parse_wait(self.param("wait")), hooks.agent_name(self.param("agent"))
        return await answer_hook(self.authorization, self.body, wait, self.address, name)
