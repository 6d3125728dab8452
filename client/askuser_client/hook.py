"""``askuser hook``: a coding agent's hook event on stdin, askuser's decision on stdout.

The agent runs this as a command hook. It posts the event, as it came, to the
server's ``POST /api/v1/hooks?wait=N`` with the token from ``ASKUSER_TOKEN``,
and prints the hook output the server answers, in the shape the agent reads:

- Claude Code reads the server's output as it is.
- Codex fails closed on fields it does not support yet (``updatedPermissions``,
  ``updatedInput``) and honours only a PreToolUse ``deny``: what it would
  refuse or ignore is left out, so "Allow and don't ask again" is a plain allow.

Whatever goes wrong (no token, the server down or too slow, a refusal, an answer
that is not hook output) prints nothing and exits 0, with one line on stderr:
the agent then decides as if there were no hook, and the person is never
denied what they did not deny.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx

DEFAULT_URL = "http://127.0.0.1:8000"  # what `make run` serves
DEFAULT_WAIT = 55  # the server's own default
MAX_WAIT = 590  # the server holds a hook no longer
ANSWER_MARGIN = 5.0  # seconds past ``wait`` for the answer to arrive before the hook gives up
CONNECT_TIMEOUT = 5.0
TOKEN_VARIABLE = "ASKUSER_TOKEN"
URL_VARIABLE = "ASKUSER_URL"
HOOKS_PATH = "/api/v1/hooks"

CLAUDE_CODE, CODEX = "claude-code", "codex"
AGENTS = (CLAUDE_CODE, CODEX)
# The name the server shows in the session's title ("Codex · app"); Claude Code is its default.
DISPLAY_NAMES = {CLAUDE_CODE: "Claude Code", CODEX: "Codex"}


class HookFailed(Exception):
    """Why no decision was printed: the one line the hook writes on stderr."""


@dataclass(frozen=True)
class Hook:
    """Where a hook posts its events, how long it lets the person answer, and for which agent."""

    url: str
    wait: float = DEFAULT_WAIT
    agent: str = CLAUDE_CODE

    @property
    def endpoint(self) -> str:
        """``http://host:8000/api/v1/hooks?wait=55`` (and ``&agent=Codex`` for Codex)."""
        query: dict[str, str] = {"wait": f"{self.wait:g}"}
        if self.agent != CLAUDE_CODE:
            query["agent"] = DISPLAY_NAMES[self.agent]
        return f"{self.url.rstrip('/')}{HOOKS_PATH}?{urlencode(query)}"

    def answer(self, event: bytes, token: str | None, transport: httpx.BaseTransport | None = None) -> dict[str, Any]:
        """The hook output to print for ``event`` (``{}``: print nothing); raises ``HookFailed``."""
        if not token:
            raise HookFailed(f"{TOKEN_VARIABLE} is not set in the agent's environment")
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        timeout = httpx.Timeout(self.wait + ANSWER_MARGIN, connect=CONNECT_TIMEOUT)
        try:
            with httpx.Client(timeout=timeout, follow_redirects=False, transport=transport) as http:
                reply = http.post(self.endpoint, content=event, headers=headers)
        except httpx.TimeoutException:
            raise HookFailed(f"{self.url} did not answer within {self.wait + ANSWER_MARGIN:g} s") from None
        except httpx.TransportError as error:
            raise HookFailed(f"could not reach {self.url}: {reason(error)}") from None
        return shaped(output_of(reply), self.agent)


def reason(error: httpx.TransportError) -> str:
    text = str(error)
    return "connection refused" if "refused" in text.lower() else text or type(error).__name__


def output_of(reply: httpx.Response) -> dict[str, Any]:
    """The server's hook output, or ``HookFailed`` saying why there is none."""
    if reply.is_redirect:
        where = reply.headers.get("Location", "elsewhere")
        raise HookFailed(f"{reply.request.url} redirects to {where}; hooks follow no redirect: use that URL")
    if not reply.is_success:
        raise HookFailed(f"the server refused the hook ({reply.status_code}): {refusal(reply)}")
    try:
        output = reply.json()
    except ValueError:
        output = None
    if not isinstance(output, dict):
        raise HookFailed(f"{reply.request.url} did not answer with hook output: is it askuser's address?")
    return output


def refusal(reply: httpx.Response) -> str:
    try:
        body = reply.json()
    except ValueError:
        body = None
    detail = body.get("detail") if isinstance(body, dict) else None
    return str(detail or reply.reason_phrase or "no reason given")


def shaped(output: Mapping[str, Any], agent: str) -> dict[str, Any]:
    """``output`` as ``agent`` reads it."""
    return for_codex(output) if agent == CODEX else dict(output)


def for_codex(output: Mapping[str, Any]) -> dict[str, Any]:
    """Only what Codex honours: a PermissionRequest's behavior and message, a PreToolUse deny."""
    specific = output.get("hookSpecificOutput")
    if not isinstance(specific, Mapping):
        return {}
    name = specific.get("hookEventName")
    decision = specific.get("decision")
    if name == "PermissionRequest" and isinstance(decision, Mapping) and decision.get("behavior") in ("allow", "deny"):
        kept = {key: decision[key] for key in ("behavior", "message") if key in decision}
        return {"hookSpecificOutput": {"hookEventName": name, "decision": kept}}
    if name == "PreToolUse" and specific.get("permissionDecision") == "deny":
        fields = ("hookEventName", "permissionDecision", "permissionDecisionReason")
        return {"hookSpecificOutput": {key: specific[key] for key in fields if key in specific}}
    return {}


def printed(output: Mapping[str, Any]) -> str:
    """What goes on stdout: the output as one line of JSON, or nothing for no decision."""
    return json.dumps(output, ensure_ascii=False) if output else ""
