"""Coding agents' own hooks (SPEC 4.5): a hook event as a prompt, and its result as the hook's output.

Claude Code sends a hook event's JSON to a command hook's stdin or in an http
hook's body, and reads the hook's output JSON back; Codex decides a
``PermissionRequest`` with the same shape. The field names are the hooks
reference's (code.claude.com/docs/en/hooks): every event carries
``session_id``, ``cwd`` and ``hook_event_name``; ``PermissionRequest`` and
``PreToolUse`` add ``tool_name`` and ``tool_input`` (and the first
``permission_suggestions``); ``Notification`` adds ``message`` and
``notification_type``; ``Stop`` ``last_assistant_message``.

What this module decides, and ``agents.hooks`` serves:

- which askuser session an agent conversation is (``session_key``, ``title``);
- the prompt a permission asks (``permission_request``): one single-select
  question, the tool input shown verbatim as its ``detail``;
- what the agent gets back (``decision``): allow or deny as the person said,
  and ``{}`` (PreToolUse: ``ask``) when nobody did, so the agent's own dialog
  at the terminal asks instead; never a deny the person did not give;
- the timeline line a ``Notification`` or ``Stop`` becomes (``line``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from askuser_app.domain import contract, wording

DEFAULT_WAIT, MAX_WAIT = 55, 590
QUESTION_ID = "permission"
ALLOW, DENY, ALLOW_ALWAYS = "Allow", "Deny", "Allow and don't ask again"
AGENT = "Claude Code"
PERMISSION_REQUEST, PRE_TOOL_USE = "PermissionRequest", "PreToolUse"
NOTIFICATION, STOP = "Notification", "Stop"
ASKING = frozenset({PERMISSION_REQUEST, PRE_TOOL_USE})
LAST_MESSAGE = 300  # characters of the agent's last message a Stop line shows
CUT = "\n… (cut here: {more} more characters)"
EDITS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
Event = Mapping[str, Any]


def event_name(event: Any) -> str:
    """The event's ``hook_event_name``; "" for a body that names none (answered ``{}``)."""
    name = event.get("hook_event_name") if isinstance(event, dict) else None
    return name if isinstance(name, str) else ""


def session_key(event: Event) -> str:
    """The askuser session of the agent conversation: stable, and no longer than a key may be."""
    session_id = event.get("session_id")
    if not isinstance(session_id, str) or not session_id.strip():
        raise contract.ContractError([{"path": "session_id", "message": "must be the agent's session id (a string)"}])
    return "cc-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:20]


MAX_AGENT_NAME = 40


def agent_name(raw: str | None) -> str:
    """The agent a hook's ``?agent=`` names ("Codex"); Claude Code when it names none. Its
    events carry no field that tells the agents apart, so the hook's URL says it."""
    if raw is None or raw == "":
        return AGENT
    name = " ".join(raw.split())
    if not name or len(name) > MAX_AGENT_NAME or contract.visible(name) != name:
        message = f"must be the agent's name: 1 to {MAX_AGENT_NAME} visible characters"
        raise contract.ContractError([{"path": "agent", "message": message}])
    return name


def title(event: Event, agent: str = AGENT) -> str:
    """ "Claude Code · billing-service": the agent and the last folder of its working directory."""
    cwd = event.get("cwd")
    folder = cwd.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] if isinstance(cwd, str) else ""
    folder = " ".join(contract.visible(folder).split())
    return f"{agent} · {folder}"[: contract.MAX_TITLE] if folder else agent


# --- asking ---------------------------------------------------------------------------------


def permission_request(event: Event, wait: float, agent: str = AGENT) -> contract.CreatePromptIn:
    """The prompt a permission request (or a PreToolUse) asks; ContractError naming a broken field."""
    tool = event.get("tool_name")
    if not isinstance(tool, str) or not tool.strip():
        raise contract.ContractError([{"path": "tool_name", "message": "must be the tool's name (a string)"}])
    tool_input = event.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    options = [{"label": ALLOW}, {"label": DENY}]
    if suggestions(event):
        options.append({"label": ALLOW_ALWAYS, "description": "Add the rule the agent suggests"})
    question = {
        "id": QUESTION_ID,
        "header": " ".join(contract.visible(tool).split()),
        "question": _asking(tool, tool_input, event.get("cwd")),
        "options": options,
    }
    shown = detail(tool, tool_input)
    if shown:
        question["detail"] = shown
    body = {
        "session": session_key(event),
        "title": title(event, agent),
        "questions": [question],
        # The hook closes the prompt when its wait ends; the deadline only backs that up.
        "timeoutSeconds": min(max(math.ceil(wait) + 5, contract.MIN_TIMEOUT), contract.MAX_TIMEOUT),
    }
    return contract.parse_create(body)


def _asking(tool: str, tool_input: Mapping[str, Any], cwd: Any) -> str:
    if tool == "Bash":
        return "Run this command?"
    if tool in EDITS and isinstance(path := tool_input.get("file_path") or tool_input.get("notebook_path"), str):
        shown = _relative(path, cwd)
        return f"Edit `{' '.join(contract.visible(shown).split())[:400]}`?"
    if tool == "WebFetch":
        return "Fetch this URL?"
    return f"Allow {' '.join(contract.visible(tool).split())[:400]}?"


def _relative(path: str, cwd: Any) -> str:
    if isinstance(cwd, str) and cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def detail(tool: str, tool_input: Mapping[str, Any]) -> str:
    """The tool input as the person should read it, verbatim, cut visibly at the contract's length."""
    text = _shown(tool, tool_input)
    text = contract.visible(text).strip("\n").rstrip()
    if len(text) > contract.MAX_DETAIL:
        room = contract.MAX_DETAIL - len(CUT.format(more=len(text)))
        text = text[:room] + CUT.format(more=len(text) - room)
    return text if text.strip() else ""


def _shown(tool: str, tool_input: Mapping[str, Any]) -> str:
    def given(name: str) -> str:
        value = tool_input.get(name)
        return value if isinstance(value, str) else ""

    if tool == "Bash" and given("command"):
        return given("command")
    if tool == "WebFetch" and given("url"):
        return given("url")
    if tool == "Write" and given("file_path"):
        return f"{given('file_path')}\n\n{given('content')}"
    if tool == "Edit" and given("file_path"):
        return f"{given('file_path')}\n\n{_diff(given('old_string'), given('new_string'))}"
    if tool == "MultiEdit" and given("file_path") and isinstance(tool_input.get("edits"), list):
        edits = [e for e in tool_input["edits"] if isinstance(e, dict)]
        diffs = [_diff(str(e.get("old_string", "")), str(e.get("new_string", ""))) for e in edits]
        return "\n\n".join([given("file_path"), *diffs])
    return json.dumps(tool_input, indent=2, ensure_ascii=False)


def _diff(old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=2)
    return "\n".join(line for line in lines if not line.startswith(("---", "+++")))


def suggestions(event: Event) -> list[Any]:
    found = event.get("permission_suggestions") if event.get("hook_event_name") == PERMISSION_REQUEST else None
    return found if isinstance(found, list) else []


# --- answering ------------------------------------------------------------------------------

DENIED_BY = "Denied by {user} {where}"
DENIED = "Denied {where}"
NO_ANSWER = "Nobody answered in askuser within {wait} s."


@dataclass(frozen=True)
class Said:
    """What the person said to a permission, read from the prompt's result."""

    allow: bool
    always: bool = False
    message: str = ""


def said(result: Mapping[str, Any] | None) -> Said | None:
    """The person's decision in ``result``; None when nobody decided (skipped, expired, cancelled…)."""
    if not result or result.get("status") != "answered":
        return None
    chosen = result["details"][QUESTION_ID]
    if chosen["free_text"]:  # their own words: a deny the agent reads
        return Said(allow=False, message=chosen["free_text"])
    if ALLOW_ALWAYS in chosen["options"]:
        return Said(allow=True, always=True)
    if ALLOW in chosen["options"]:
        return Said(allow=True)
    where = wording.where(result.get("surface") or "", wording.for_agent)
    user = result.get("resolved_by")
    message = DENIED_BY.format(user=user, where=where) if user else DENIED.format(where=where)
    return Said(allow=False, message=message.strip())


def decision(event: Event, result: Mapping[str, Any] | None, wait: float) -> dict[str, Any]:
    """The hook's output for ``result``: the person's decision, or none (``{}``, PreToolUse ``ask``)."""
    name, person = event_name(event), said(result)
    if name == PRE_TOOL_USE:
        return {"hookSpecificOutput": {"hookEventName": PRE_TOOL_USE, **_pre_tool_use(person, wait)}}
    if person is None:
        return {}
    chosen: dict[str, Any] = {"behavior": "allow" if person.allow else "deny"}
    if person.always:
        chosen["updatedPermissions"] = suggestions(event)
    if not person.allow:
        chosen["message"] = person.message
    return {"hookSpecificOutput": {"hookEventName": PERMISSION_REQUEST, "decision": chosen}}


def _pre_tool_use(person: Said | None, wait: float) -> dict[str, str]:
    if person is None:
        return {"permissionDecision": "ask", "permissionDecisionReason": NO_ANSWER.format(wait=f"{wait:g}")}
    if person.allow:
        return {"permissionDecision": "allow", "permissionDecisionReason": "Allowed in askuser"}
    return {"permissionDecision": "deny", "permissionDecisionReason": person.message}


# --- telling --------------------------------------------------------------------------------

WAITING = "{agent} is waiting for your input"
NEEDS_PERMISSION = "{agent} needs your permission"
FINISHED = "{agent} finished"


def line(event: Event, agent: str = AGENT) -> str | None:
    """The timeline line a ``Notification`` or ``Stop`` becomes; None for any other event."""
    name = event_name(event)
    if name == NOTIFICATION:
        kind = event.get("notification_type")
        said_line = (NEEDS_PERMISSION if kind == "permission_prompt" else WAITING).format(agent=agent)
        message = event.get("message")
        if kind not in ("permission_prompt", "idle_prompt") and isinstance(message, str) and message.strip():
            said_line = f"{agent}: {message.strip()}"
        return _fit(said_line)
    if name == STOP:
        last = event.get("last_assistant_message")
        last = " ".join(last.split()) if isinstance(last, str) else ""
        if not last:
            return FINISHED.format(agent=agent)
        cut = last[:LAST_MESSAGE] + ("…" if len(last) > LAST_MESSAGE else "")
        return _fit(f"{FINISHED.format(agent=agent)}: {cut}")
    return None


def tells(event: Event) -> Literal["", "waiting", "finished"]:
    """Whether the line is news for the person's channels too: a ``Notification`` is (it waits
    for them), a ``Stop`` is if they chose to hear of it (``finished``), anything else is not."""
    name = event_name(event)
    return "waiting" if name == NOTIFICATION else "finished" if name == STOP else ""


def _fit(text: str) -> str:
    return contract.visible(text)[:4000]
