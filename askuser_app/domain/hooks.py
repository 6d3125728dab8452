"""Coding agents' own hooks (SPEC 4.5): a hook event as a prompt, and its result as the hook's output.

Claude Code sends a hook event's JSON to a command hook's stdin or in an http
hook's body, and reads the hook's output JSON back; Codex decides a
``PermissionRequest`` with the same shape. The field names are the hooks
reference's and the types of ``@anthropic-ai/claude-agent-sdk`` (``sdk.d.ts``:
``HOOK_EVENTS``, every ``*HookInput``; ``sdk-tools.d.ts``: each tool's input):
every event carries ``session_id``, ``cwd`` and ``hook_event_name``;
``PermissionRequest`` adds ``tool_name``, ``tool_input`` and
``permission_suggestions``; ``PreToolUse``, ``PostToolUse``,
``PostToolUseFailure`` and ``PermissionDenied`` add ``tool_name``,
``tool_input`` and ``tool_use_id``; ``Notification`` adds ``message`` and
``notification_type``; ``Stop`` ``last_assistant_message``.

What this module decides, and ``agents.hooks`` serves:

- which askuser session an agent conversation is (``session_key``, ``title``);
- which kind of question an event asks (``KINDS``, ``kind_of``): each ``Kind``
  says which events ask it, the prompt it asks and the output its answer
  becomes, and which ``Notification`` alerts the person about it; a new kind
  is one more entry;
- whether a later event shows the agent decided at its terminal meanwhile
  (``shows_decided``): the question then closes, and no late answer decides;
- what the agent gets back: the person's decision, and ``{}`` when nobody
  decided, so the agent's own dialog at the terminal asks instead; never a
  deny, nor an ``ask``, the person did not give;
- the timeline line a ``Notification`` or ``Stop`` becomes (``line``);
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from askuser_app.domain import contract, wording

DEFAULT_WAIT, MAX_WAIT = 55, 590
QUESTION_ID = "permission"
ALLOW, DENY, ALLOW_ALWAYS = "Allow", "Deny", "Allow and don't ask again"
AGENT = "Claude Code"
PERMISSION_REQUEST, PRE_TOOL_USE = "PermissionRequest", "PreToolUse"
NOTIFICATION, STOP = "Notification", "Stop"
POST_TOOL_USE, POST_TOOL_USE_FAILURE, PERMISSION_DENIED = "PostToolUse", "PostToolUseFailure", "PermissionDenied"
USER_PROMPT_SUBMIT = "UserPromptSubmit"
ELICITATION, ELICITATION_RESULT = "Elicitation", "ElicitationResult"
# Events that come only once the agent decided a tool use (or an MCP server's request for
# input): they name the one they follow.
AFTER_TOOL_USE = frozenset({POST_TOOL_USE, POST_TOOL_USE_FAILURE, PERMISSION_DENIED, ELICITATION_RESULT})
# Events that come only once the agent decided whatever it was asking: the person typed
# a new prompt at the terminal, or the agent's turn ended.
AFTER_ANY = frozenset({USER_PROMPT_SUBMIT, STOP})
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


# --- asking: a permission -------------------------------------------------------------------


def permission_request(event: Event, wait: float, agent: str = AGENT) -> contract.CreatePromptIn:
    """The prompt a permission request (or a PreToolUse) asks; ContractError naming a broken field."""
    tool = event.get("tool_name")
    if not isinstance(tool, str) or not tool.strip():
        raise contract.ContractError([{"path": "tool_name", "message": "must be the tool's name (a string)"}])
    tool_input = event.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    options: list[dict[str, str]] = [{"label": ALLOW}, {"label": DENY}]
    if rules := always_rules(event):
        options.append({"label": ALLOW_ALWAYS, "description": rules})
    question: dict[str, Any] = {
        "id": QUESTION_ID,
        "header": " ".join(contract.visible(tool).split()),
        "question": _asking(tool, tool_input, event.get("cwd")),
        "options": options,
    }
    shown = detail(tool, tool_input)
    if shown:
        question["detail"] = shown
    return _prompt(event, wait, agent, [question])


def _prompt(
    event: Event,
    wait: float,
    agent: str,
    questions: list[dict[str, Any]],
    model: type[contract.CreatePromptIn] = contract.CreatePromptIn,
) -> contract.CreatePromptIn:
    body = {
        "session": session_key(event),
        "title": title(event, agent),
        "questions": questions,
        # The hook closes the prompt when its wait ends; the deadline only backs that up.
        "timeoutSeconds": min(max(math.ceil(wait) + 5, contract.MIN_TIMEOUT), contract.MAX_TIMEOUT),
    }
    return contract.parse_create(body, model)


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


# The fields each tool's input shows first, as the person reads them (``_main``); every
# other non-empty field follows under it, these first: each widens what is allowed.
MAIN_FIELDS = {
    "Bash": ("command",),
    "WebFetch": ("url",),
    "Write": ("file_path", "content"),
    "Edit": ("file_path", "old_string", "new_string"),
    "MultiEdit": ("file_path", "edits"),
}
DANGEROUS_FIELDS = ("dangerouslyDisableSandbox", "run_in_background", "replace_all")
MAX_FIELD = 300  # characters of one more field's value shown


def detail(tool: str, tool_input: Mapping[str, Any]) -> str:
    """The tool input as the person should read it: the main part verbatim, then every other
    field; the main part is cut visibly at the contract's length, never the fields under it."""
    main = contract.visible(_main(tool, tool_input)).strip("\n").rstrip()
    more = _more_fields(tool, tool_input)
    room = contract.MAX_DETAIL - (len(more) + 2 if more else 0)
    if len(main) > room:
        keep = room - len(CUT.format(more=len(main)))
        main = main[:keep] + CUT.format(more=len(main) - keep)
    text = f"{main}\n\n{more}" if main.strip() and more else main if main.strip() else more
    return text if text.strip() else ""


def _main(tool: str, tool_input: Mapping[str, Any]) -> str:
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


def _more_fields(tool: str, tool_input: Mapping[str, Any]) -> str:
    """``name: value`` for each field the main part does not show, the dangerous ones first."""
    main = MAIN_FIELDS.get(tool)
    if main is None or not isinstance(tool_input.get(main[0]), str):  # shown whole, as JSON
        return ""
    rest = [name for name, value in tool_input.items() if name not in main and _said(value)]
    rest.sort(key=lambda name: DANGEROUS_FIELDS.index(name) if name in DANGEROUS_FIELDS else len(DANGEROUS_FIELDS))
    lines = [f"{' '.join(contract.visible(str(name)).split())[:64]}: {_value(tool_input[name])}" for name in rest]
    return "\n".join(lines)


def _said(value: Any) -> bool:
    """Not empty: ``false`` (a flag left off) is, ``0`` is not."""
    return not (value is None or value is False or (isinstance(value, str | list | dict) and not value))


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(contract.visible(text).split())
    return text if len(text) <= MAX_FIELD else text[:MAX_FIELD] + "…"


def _diff(old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=2)
    return "\n".join(line for line in lines if not line.startswith(("---", "+++")))


# "Allow and don't ask again" applies the agent's ``permission_suggestions``
# (``PermissionUpdate`` in sdk.d.ts). Only narrow ones are offered, each said as it
# will be applied; a whole tool, a mode, or the person's user settings (every
# project) are broad, and never granted by one tap.
DESTINATIONS = {
    "localSettings": "in this project's local settings",
    "projectSettings": "in this project's settings",
    "session": "for this session",
    "cliArg": "for this run",
}
WHOLE_TOOL = frozenset({"", "*", ":*", "**"})
MAX_RULES_SAID = 200  # an option's description


def suggestions(event: Event) -> list[Any]:
    """The agent's suggestions that "Allow and don't ask again" grants: the narrow ones, as given."""
    found = event.get("permission_suggestions") if event_name(event) == PERMISSION_REQUEST else None
    narrow = [update for update in found if _rule_said(update)] if isinstance(found, list) else []
    return narrow if _rules_said(narrow) else []


def always_rules(event: Event) -> str:
    """ "Allow `Bash(npm test:*)` in this project's settings": what "Allow and don't ask again"
    grants, one clause a suggestion; "" when there is nothing narrow to grant (no such option)."""
    return _rules_said(suggestions(event)) if event_name(event) == PERMISSION_REQUEST else ""


def _rules_said(updates: list[Any]) -> str:
    said = "; ".join(filter(None, (_rule_said(update) for update in updates)))
    return said if len(said) <= MAX_RULES_SAID and contract.visible(said) == said else ""


def _rule_said(update: Any) -> str:
    """One suggestion as it will be applied; "" for a broad one or one askuser cannot read."""
    where = DESTINATIONS.get(str(update.get("destination"))) if isinstance(update, dict) else None
    if where is None:  # the person's user settings (every project), or a place askuser does not know
        return ""
    if update.get("type") == "addRules" and update.get("behavior") == "allow":
        rules = update.get("rules")
        named = [_rule(rule) for rule in rules] if isinstance(rules, list) and rules else [""]
        return f"Allow {', '.join(named)} {where}" if all(named) else ""
    folders = update.get("directories")
    if update.get("type") == "addDirectories" and isinstance(folders, list) and folders:
        named = [f"`{d}`" for d in folders if isinstance(d, str) and d.strip()]
        return f"Allow working in {', '.join(named)} {where}" if len(named) == len(folders) else ""
    return ""  # a mode, a rule removed or replaced: never one tap


def _rule(rule: Any) -> str:
    if not isinstance(rule, dict) or not isinstance(tool := rule.get("toolName"), str) or not tool.strip():
        return ""
    content = rule.get("ruleContent")
    if not isinstance(content, str) or content.strip() in WHOLE_TOOL:
        return ""  # the whole tool
    return f"`{tool}({content})`"


# --- answering a permission -------------------------------------------------------------------

DENIED_BY = "Denied by {user} {where}"
DENIED = "Denied {where}"


@dataclass(frozen=True)
class Said:
    """What the person said to a permission, read from the prompt's result."""

    allow: bool
    always: bool = False
    message: str = ""


def said(result: Mapping[str, Any] | None) -> Said | None:
    """The person's decision in ``result``; None when nobody decided (skipped, expired, decided at
    the terminal…)."""
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


def permission_output(event: Event, result: Mapping[str, Any] | None) -> dict[str, Any]:
    """The hook's output for a permission's ``result``: the person's decision, or ``{}``."""
    person = said(result)
    if person is None:
        return {}
    if event_name(event) == PRE_TOOL_USE:
        return {"hookSpecificOutput": {"hookEventName": PRE_TOOL_USE, **_pre_tool_use(person)}}
    chosen: dict[str, Any] = {"behavior": "allow" if person.allow else "deny"}
    if person.always:
        chosen["updatedPermissions"] = suggestions(event)
    if not person.allow:
        chosen["message"] = person.message
    return {"hookSpecificOutput": {"hookEventName": PERMISSION_REQUEST, "decision": chosen}}


def _pre_tool_use(person: Said) -> dict[str, str]:
    if person.allow:
        return {"permissionDecision": "allow", "permissionDecisionReason": "Allowed in askuser"}
    return {"permissionDecision": "deny", "permissionDecisionReason": person.message}


# --- asking: an MCP server's request for input (an elicitation) --------------------------------
#
# ``ElicitationHookInput``: ``mcp_server_name``, ``message``, ``mode`` ("form" by default, or
# "url" with ``url`` and ``elicitation_id``) and a form's ``requested_schema``: a flat object
# of primitive properties (MCP's ``PrimitiveSchemaDefinition``). Each property becomes a
# question whose ``rule`` (``contract.typed_answer``) the answer surfaces check; the output
# (``ElicitationHookSpecificOutput``) is ``action`` accept with ``content``, or decline.

DONE, DECLINE = "Done", "Decline"
URL_QUESTION = "link"
URL_RULE = {"values": ["accept", "decline"], "labels": [DONE, DECLINE]}
TEXT_TYPES = frozenset({"string", "number", "integer"})
SNAKE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def elicitation(event: Event, wait: float, agent: str = AGENT) -> contract.CreatePromptIn:
    """The prompt an MCP server's elicitation asks: its form's fields, or its link to open."""
    if event.get("mode") == "url":
        server, message = _said_field(event, "mcp_server_name", 64), _said_field(event, "message", 3000)
        return _prompt(event, wait, agent, [_link_question(event, server, message)], model=contract.TypedPromptIn)
    return _prompt(event, wait, agent, _asked(event), model=contract.TypedPromptIn)


def _said_field(event: Event, name: str, most: int) -> str:
    value = event.get(name)
    if not isinstance(value, str) or not value.strip():
        raise contract.ContractError([{"path": name, "message": "must be a non-empty string"}])
    text = contract.visible(value.strip())
    return text if len(text) <= most else text[: most - 1] + "…"


def _link_question(event: Event, server: str, message: str) -> dict[str, Any]:
    url = event.get("url")
    if not isinstance(url, str) or not url.strip():
        raise contract.ContractError([{"path": "url", "message": "must be the link to open (a string)"}])
    return {
        "id": URL_QUESTION,
        "header": _one_line(server),
        "question": f"{_one_line(server)[:100]} asks you to open a link.",
        "detail": f"{message}\n\n{contract.visible(url.strip())[:2000]}",
        "options": [
            {"label": DONE, "description": "You opened the link and finished there"},
            {"label": DECLINE},
        ],
        "rule": URL_RULE,
    }


def _fields(event: Event) -> list[tuple[str, Mapping[str, Any]]]:
    schema = event.get("requested_schema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        message = "must be an object schema with at least one property"
        raise contract.ContractError([{"path": "requested_schema", "message": message}])
    if len(properties) > contract.MAX_QUESTIONS:
        message = f"askuser asks at most {contract.MAX_QUESTIONS} fields at once (got {len(properties)})"
        raise contract.ContractError([{"path": "requested_schema.properties", "message": message}])
    required = schema.get("required") if isinstance(schema, dict) else None
    required = set(required) if isinstance(required, list) else set()
    return [
        (str(name), {**spec, "required": name in required})
        for name, spec in properties.items()
        if isinstance(spec, dict)
    ]


def _field_question(name: str, spec: Mapping[str, Any], index: int, server: str, message: str) -> dict[str, Any]:
    title = spec["title"] if isinstance(spec.get("title"), str) and spec["title"].strip() else name
    about = spec["description"] if isinstance(spec.get("description"), str) else ""
    rule = {"name": name, "required": spec["required"], **_field_rule(name, spec)}
    labels = rule.get("labels") or []
    shown = [_one_line(f"{server} asks: {message}" if index == 0 else f"{server}: {message}")]
    if about.strip():
        shown.append(contract.visible(about.strip())[:500])
    if labels and len(labels) > 4:
        shown.append("One of: " + ", ".join(labels))
    shown.append(_limits(rule))
    return {
        "id": _question_id(name, index),
        "header": _one_line(title),
        "question": _one_line(title)[:480] + ("" if spec["required"] else " (optional)"),
        "detail": "\n\n".join(filter(None, shown))[: contract.MAX_DETAIL],
        "options": [{"label": label} for label in labels] if len(labels) <= 4 else [],
        "multiSelect": bool(rule.get("many")),
        "rule": rule,
    }


def _field_rule(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The rule an answer keeps, from the property's schema; ContractError for a kind askuser cannot ask."""
    kind = spec.get("type")
    if kind == "boolean":
        return {"type": "boolean", "values": [True, False], "labels": [contract.YES, contract.NO]}
    if kind == "array" and isinstance(spec.get("items"), dict):
        limits = {key: spec[key] for key in ("minItems", "maxItems") if isinstance(spec.get(key), int)}
        return {**_choices(name, spec["items"]), "many": True, **limits}
    if kind == "string" and (isinstance(spec.get("enum"), list) or isinstance(spec.get("oneOf"), list)):
        return _choices(name, spec)
    if kind in TEXT_TYPES:
        kept = ("minLength", "maxLength", "format") if kind == "string" else ("minimum", "maximum")
        return {"type": kind, **{key: spec[key] for key in kept if key in spec}}
    message = f"askuser cannot ask for a field of type {json.dumps(kind)[:40]}"
    raise contract.ContractError([{"path": f"requested_schema.properties.{name[:64]}", "message": message}])


def _choices(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """An enum's values and what the person reads: its titles (``oneOf``/``anyOf`` of
    ``const`` and ``title``, or the legacy ``enumNames``), else the values themselves."""
    titled = spec.get("oneOf") if isinstance(spec.get("oneOf"), list) else spec.get("anyOf")
    if isinstance(titled, list) and titled and all(isinstance(one, dict) and "const" in one for one in titled):
        values = [one["const"] for one in titled]
        labels = [str(one.get("title") or one["const"]) for one in titled]
    elif isinstance(spec.get("enum"), list) and spec["enum"]:
        values = list(spec["enum"])
        names = spec.get("enumNames")
        labels = [str(n) for n in names] if isinstance(names, list) and len(names) == len(values) else []
        labels = labels or [str(value) for value in values]
    else:
        message = "must list the values to choose from (enum, or oneOf with const and title)"
        raise contract.ContractError([{"path": f"requested_schema.properties.{name[:64]}", "message": message}])
    return {"type": "string", "values": values, "labels": [_one_line(label) for label in labels]}


LIMITS_SAID = {
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "minimum": "at least {}",
    "maximum": "at most {}",
    "minItems": "choose at least {}",
    "maxItems": "choose at most {}",
}
KINDS_SAID = {"integer": "A whole number", "number": "A number", "email": "An email address", "uri": "A web address"}


def _limits(rule: Mapping[str, Any]) -> str:
    """What an answer must be, said once under the question: "A whole number, at least 1"."""
    kind = KINDS_SAID.get(str(rule.get("format"))) or KINDS_SAID.get(str(rule.get("type")))
    kind = {"date": "A date (year-month-day)", "date-time": "A date and time"}.get(str(rule.get("format")), kind)
    said = [LIMITS_SAID[key].format(rule[key]) for key in LIMITS_SAID if key in rule]
    said = ([kind] if kind else []) + said
    return ", ".join(said) if said else ""


def _question_id(name: str, index: int) -> str:
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    snake = re.sub(r"[^a-z0-9_]+", "_", snake).strip("_")
    return snake if SNAKE.fullmatch(snake) else f"field_{index + 1}"


def _one_line(text: str) -> str:
    return " ".join(contract.visible(text).split()) or "?"


def elicitation_output(event: Event, result: Mapping[str, Any] | None) -> dict[str, Any]:
    """The hook's output: accept with the typed ``content``, decline when the person chose
    Decline or skipped the whole form, ``{}`` when nobody answered (the terminal asks)."""
    if not result or (result.get("status") == "no_answer" and result.get("reason") != "skipped"):
        return {}
    if result.get("status") != "answered":
        return _elicited("decline")
    answers: Mapping[str, list[str]] = result["answers"]["answers"]
    if event.get("mode") == "url":
        return _elicited(contract.typed_answer(URL_RULE, answers.get(URL_QUESTION, [])) or "decline")
    content = {}
    for question in _asked(event):
        if answers.get(question["id"]):
            content[question["rule"]["name"]] = contract.typed_answer(question["rule"], answers[question["id"]])
    return _elicited("accept", content)


def _asked(event: Event) -> list[dict[str, Any]]:
    """The questions the event asked, as they were asked (the same event asks the same)."""
    server, message = _said_field(event, "mcp_server_name", 64), _said_field(event, "message", 3000)
    return [_field_question(name, spec, index, server, message) for index, (name, spec) in enumerate(_fields(event))]


def _elicited(action: str, content: Mapping[str, Any] | None = None) -> dict[str, Any]:
    said: dict[str, Any] = {"hookEventName": ELICITATION, "action": action}
    if content is not None:
        said["content"] = dict(content)
    return {"hookSpecificOutput": said}


# --- the kinds of question ---------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """One kind of question a coding agent's hook asks its person."""

    name: str  # stored with the prompt (``Prompt.hook_kind``)
    events: frozenset[str]  # the hook events that ask it
    tools: frozenset[str] | None  # the tools it asks about; None: any no other kind claims
    asks: Callable[[Event, float, str], contract.CreatePromptIn]  # the prompt: (event, wait, agent)
    output: Callable[[Event, Mapping[str, Any] | None], dict[str, Any]]  # the answer (None: nobody's) as output
    alerted_by: frozenset[str]  # ``notification_type``s that alert the person of this same question
    # Events that follow this kind's question for the same tool use (its twin: Claude Code's
    # PermissionRequest after the PreToolUse that asked): they take that question's answer, or
    # ``{}`` when nobody gave one, and ask only when no event asked it first (their hook alone is
    # installed). Such a question is named by its tool input, the name both events give.
    follows: frozenset[str] = frozenset()
    # The option that gives the agent nothing it asked for (Deny): the one answer a tap outside
    # the Control UI may give, where nobody may have read what is asked (``channels.links``).
    refuses: str = ""


# --- a plan to approve (ExitPlanMode) ----------------------------------------------------------
# ``ExitPlanModeInput`` (sdk-tools.d.ts) carries the plan as ``plan`` when the model wrote its plan
# file; Claude Code fires PreToolUse, then PermissionRequest unless PreToolUse decided. It ignores a
# bare ``allow`` for this tool (its own dialog stays), and takes one with ``updatedInput``.

PLAN_TOOL, PLAN_QUESTION = "ExitPlanMode", "plan"
APPROVE, KEEP_PLANNING = "Approve", "Keep planning"
PLAN_APPROVED = "Plan approved in askuser"
KEEP_PLANNING_SAID = "The person wants you to keep planning; the plan is not approved yet."


def plan_request(event: Event, wait: float, agent: str = AGENT) -> contract.CreatePromptIn:
    """The prompt a plan asks: Approve / Keep planning, the plan (Markdown) as its detail."""
    plan = _plan(event)
    question: dict[str, Any] = {
        "id": PLAN_QUESTION,
        "header": "Plan",
        "question": "Approve this plan and start?" if plan else "Approve the plan shown at the terminal?",
        "options": [
            {"label": APPROVE, "description": "Leave plan mode and carry it out"},
            {"label": KEEP_PLANNING, "description": "Stay in plan mode; your own words tell the agent why"},
        ],
    }
    if plan:
        question["detail"] = _fit_plan(plan)
    return _prompt(event, wait, agent, [question])


def _plan(event: Event) -> str:
    tool_input = event.get("tool_input")
    plan = tool_input.get("plan") if isinstance(tool_input, dict) else None
    return contract.visible(plan).strip() if isinstance(plan, str) else ""


def _fit_plan(plan: str) -> str:
    """The plan within a detail's length, cut visibly where it is too long."""
    if len(plan) <= contract.MAX_DETAIL:
        return plan
    keep = contract.MAX_DETAIL - len(CUT.format(more=len(plan)))
    return plan[:keep] + CUT.format(more=len(plan) - keep)


def plan_output(event: Event, result: Mapping[str, Any] | None) -> dict[str, Any]:
    """Approve: ``allow`` with the input as given (a bare allow leaves the terminal's dialog up);
    Keep planning, or the person's own words: ``deny`` with them as the reason; nobody: ``{}``."""
    if not result or result.get("status") != "answered":
        return {}
    chosen = result["details"][PLAN_QUESTION]
    approved = APPROVE in chosen["options"] and not chosen["free_text"]
    reason = chosen["free_text"] or KEEP_PLANNING_SAID
    tool_input = event.get("tool_input") if isinstance(event.get("tool_input"), dict) else {}
    if event_name(event) == PRE_TOOL_USE:
        said_now: dict[str, Any] = {"permissionDecision": "deny", "permissionDecisionReason": reason}
        if approved:
            said_now = {"permissionDecision": "allow", "permissionDecisionReason": PLAN_APPROVED}
            said_now["updatedInput"] = tool_input
        return {"hookSpecificOutput": {"hookEventName": PRE_TOOL_USE, **said_now}}
    chosen_now = (
        {"behavior": "allow", "updatedInput": tool_input} if approved else {"behavior": "deny", "message": reason}
    )
    return {"hookSpecificOutput": {"hookEventName": PERMISSION_REQUEST, "decision": chosen_now}}


PLAN = Kind(
    name="plan",
    events=frozenset({PERMISSION_REQUEST, PRE_TOOL_USE}),
    tools=frozenset({PLAN_TOOL}),
    asks=plan_request,
    output=plan_output,
    alerted_by=frozenset({"permission_prompt"}),
    follows=frozenset({PERMISSION_REQUEST}),  # Claude Code's own permission for the same plan
    refuses=KEEP_PLANNING,
)

PERMISSION = Kind(
    name="permission",
    events=frozenset({PERMISSION_REQUEST, PRE_TOOL_USE}),
    tools=None,
    asks=permission_request,
    output=permission_output,
    alerted_by=frozenset({"permission_prompt"}),
    refuses=DENY,
)
ELICITATION_KIND = Kind(
    name="elicitation",
    events=frozenset({ELICITATION}),
    tools=None,
    asks=elicitation,
    output=elicitation_output,
    alerted_by=frozenset({"elicitation_dialog", "elicitation_url_dialog"}),
)
# --- a structured question (AskUserQuestion) ------------------------------------------------------
# ``sdk-tools.d.ts`` ``AskUserQuestionInput``: 1–4 questions (``question``, ``header``, 2–4
# ``options`` of ``label``, ``description``, optional ``preview``; ``multiSelect``), and
# ``answers?: {[question text]: string}``, which the tool reads instead of asking at the terminal.

ASK_USER_QUESTION = "AskUserQuestion"
MULTI_JOIN = ", "


def _cut(text: Any, limit: int) -> str:
    said = " ".join(contract.visible(text).split()) if isinstance(text, str) else ""
    return said if len(said) <= limit else said[: limit - 1] + "…"


def _asked_questions(event: Event) -> list[dict[str, Any]]:
    """The tool's questions, as given (only the well-formed ones count)."""
    tool_input = event.get("tool_input")
    found = tool_input.get("questions") if isinstance(tool_input, dict) else None
    return [q for q in found if isinstance(q, dict)] if isinstance(found, list) else []


def _options(question: Mapping[str, Any]) -> list[dict[str, Any]]:
    found = question.get("options")
    return [o for o in found if isinstance(o, dict)] if isinstance(found, list) else []


def structured_question(event: Event, wait: float, agent: str = AGENT) -> contract.CreatePromptIn:
    """AskUserQuestion's questions as one prompt: ``q1``…``q4``, descriptions kept, previews
    shown verbatim under the question (each under its option's label)."""
    questions = []
    for number, asked in enumerate(_asked_questions(event), start=1):
        options = [
            {"label": _cut(o.get("label"), 64), "description": _cut(o.get("description"), 200)} for o in _options(asked)
        ]
        question: dict[str, Any] = {
            "id": f"q{number}",
            "header": _cut(asked.get("header"), 64) or ASK_USER_QUESTION,
            "question": _cut(asked.get("question"), 500),
            "options": [{k: v for k, v in o.items() if v} for o in options],
            "multiSelect": asked.get("multiSelect") is True,
        }
        previews = [
            f"{_cut(o.get('label'), 64)}\n{contract.visible(o['preview']).strip()}"
            for o in _options(asked)
            if isinstance(o.get("preview"), str) and o["preview"].strip()
        ]
        if previews:
            shown = "\n\n".join(previews)
            question["detail"] = shown if len(shown) <= contract.MAX_DETAIL else shown[: contract.MAX_DETAIL - 1] + "…"
        questions.append(question)
    return _prompt(event, wait, agent, questions, contract.HookPromptIn)


def question_output(event: Event, result: Mapping[str, Any] | None) -> dict[str, Any]:
    """``allow`` with the tool's input plus ``answers`` (question text → the labels as the tool
    gave them, comma-joined, or the person's own words); a skipped question has no entry.
    ``{}`` when nobody answered: the terminal asks."""
    if not result or result.get("status") != "answered":
        return {}
    answers: dict[str, str] = {}
    for number, asked in enumerate(_asked_questions(event), start=1):
        chosen = result["details"].get(f"q{number}")
        if not chosen or chosen["skipped"]:
            continue
        labels = {_cut(o.get("label"), 64): o.get("label") for o in _options(asked)}
        values = [str(labels.get(label, label)) for label in chosen["options"]]
        values += [chosen["free_text"]] if chosen["free_text"] else []
        answers[str(asked.get("question"))] = MULTI_JOIN.join(values)
    tool_input = event.get("tool_input")
    updated = {**(tool_input if isinstance(tool_input, dict) else {}), "answers": answers}
    decided = {"permissionDecision": "allow", "updatedInput": updated}
    if event_name(event) == PRE_TOOL_USE:
        return {"hookSpecificOutput": {"hookEventName": PRE_TOOL_USE, **decided}}
    behaviour = {"behavior": "allow", "updatedInput": updated}
    return {"hookSpecificOutput": {"hookEventName": PERMISSION_REQUEST, "decision": behaviour}}


STRUCTURED_QUESTION = Kind(
    name="question",
    events=frozenset({PRE_TOOL_USE, PERMISSION_REQUEST}),
    tools=frozenset({ASK_USER_QUESTION}),
    asks=structured_question,
    output=question_output,
    alerted_by=frozenset(),
    follows=frozenset({PERMISSION_REQUEST}),  # Claude Code's own permission for the same question
)
KINDS = (PERMISSION, ELICITATION_KIND, PLAN, STRUCTURED_QUESTION)
ASKING = frozenset(name for kind in KINDS for name in kind.events)
# Every event that may show the agent decided its session's question at the terminal (``shows_decided``).
DECIDING = AFTER_TOOL_USE | AFTER_ANY | ASKING


def refusal(kind: str) -> str:
    """The option of a kind's question (``Prompt.hook_kind``) that refuses; "" when none does."""
    return next((known.refuses for known in KINDS if known.name == kind), "")


def kind_of(event: Event) -> Kind | None:
    """The kind of question ``event`` asks: the one made for its tool, else the one for any tool."""
    name, tool = event_name(event), event.get("tool_name")
    asking = [kind for kind in KINDS if name in kind.events]
    made_for = [kind for kind in asking if kind.tools is not None and tool in kind.tools]
    return next(iter(made_for or [kind for kind in asking if kind.tools is None]), None)


def decision(event: Event, result: Mapping[str, Any] | None) -> dict[str, Any]:
    """The hook's output for ``result``; ``{}`` when nobody decided, so the terminal asks."""
    kind = kind_of(event)
    return kind.output(event, result) if kind is not None else {}


def alerted_kinds(event: Event) -> frozenset[str]:
    """The kinds of question a ``Notification`` alerts the person about, by its ``notification_type``."""
    told = event.get("notification_type") if event_name(event) == NOTIFICATION else None
    return frozenset(kind.name for kind in KINDS if told in kind.alerted_by)


# --- decided at the terminal ---------------------------------------------------------------------


def tool_use(event: Event) -> str:
    """What names the tool use an asking event asks about, to know the events that follow it:
    its ``tool_use_id`` where it has one (``PreToolUse``), else its tool and input
    (``PermissionRequest`` has no id), or the MCP server and elicitation it answers
    (``Elicitation``); "" for an event that names no tool use."""
    return _named_by_id(event) or _named_by_input(event) or _named_elicitation(event)


def tool_uses(event: Event) -> frozenset[str]:
    """Both names an event after a tool use gives it (it carries the id and the input)."""
    return frozenset(filter(None, (_named_by_id(event), _named_by_input(event), _named_elicitation(event))))


def _named_elicitation(event: Event) -> str:
    """An elicitation and its ``ElicitationResult`` both carry the server, and in URL mode
    its ``elicitation_id`` (a form's result carries nothing more of it)."""
    if event_name(event) not in (ELICITATION, ELICITATION_RESULT) or not isinstance(event.get("mcp_server_name"), str):
        return ""
    elicitation_id = event.get("elicitation_id") if isinstance(event.get("elicitation_id"), str) else ""
    return _digest("elicitation", [event["mcp_server_name"], elicitation_id])


def _named_by_id(event: Event) -> str:
    use_id = event.get("tool_use_id")
    return _digest("id", use_id) if isinstance(use_id, str) and use_id else ""


def _named_by_input(event: Event) -> str:
    tool = event.get("tool_name")
    return _digest("input", [tool, event.get("tool_input")]) if isinstance(tool, str) and tool else ""


def _digest(what: str, value: Any) -> str:
    text = json.dumps([what, value], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def asked_use(kind: Kind, event: Event) -> str:
    """The name a question of ``kind`` asked by ``event`` is stored under (``tool_use``); a kind
    with a twin is named by the tool input, which the twin (no ``tool_use_id``) gives too."""
    return _named_by_input(event) if kind.follows else tool_use(event)


def shows_decided(event: Event, asked: str) -> bool:
    """Whether ``event`` shows the agent decided, at its terminal, the tool use named ``asked``
    (``tool_use``) that its session's hook question asks: it comes after that tool use
    (``PostToolUse``, ``PostToolUseFailure``, ``PermissionDenied``), after anything
    (``UserPromptSubmit``, ``Stop``), or it is a newer request of the main thread."""
    name = event_name(event)
    if name in AFTER_TOOL_USE:
        return asked in tool_uses(event)
    if name in AFTER_ANY:
        return True
    # A subagent's request (``agent_id``) may run beside the main thread's: it says nothing of it.
    return kind_of(event) is not None and not event.get("agent_id") and asked != tool_use(event)


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
