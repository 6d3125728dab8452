"""``askuser install claude-code|codex``: the agent's hook settings, written or merged.

Both agents read the same shape, ``{"hooks": {<event>: [{"matcher": …, "hooks": [<handler>]}]}}``:
Claude Code in ``~/.claude/settings.json`` (or ``$CLAUDE_CONFIG_DIR``, or a project's
``.claude/settings.json``), Codex in ``$CODEX_HOME/hooks.json`` (``~/.codex``).

- The events that ask the person (PermissionRequest; PreToolUse for a structured
  question or a plan; Elicitation, an MCP server's request for input) wait ``wait``
  seconds, with the agent's ``timeout`` above it; the others (a notification, and
  the events that say the agent already decided) return at once.
- The token is never written: the command hook reads ``ASKUSER_TOKEN`` from the
  agent's environment, the http form names it in ``allowedEnvVars``.
- Merging keeps every other setting and hook; askuser's own hooks (this command's,
  or any that posts to ``/api/v1/hooks``) are replaced, never doubled. The old
  file is copied beside it first (``settings.json.<time>.bak``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from askuser_client.addresses import http_hook_refusal
from askuser_client.hook import CLAUDE_CODE, CODEX, HOOKS_PATH, MAX_WAIT, TOKEN_VARIABLE, Hook

# The agent's timeout over ``wait``: time for the server's answer to reach the agent.
TIMEOUT_MARGIN = 10
TELL_TIMEOUT = 10  # for the events that return at once
# PreToolUse asks only for what has no PermissionRequest of its own to answer.
PRE_TOOL_USE_MATCHER = "AskUserQuestion|ExitPlanMode"

# The events that ask the person, and those that only tell askuser something.
ASKING = {
    CLAUDE_CODE: ("PermissionRequest", "PreToolUse", "Elicitation"),
    # Codex honours only a PreToolUse deny, so its PermissionRequest alone asks.
    CODEX: ("PermissionRequest",),
}
TELLING = {
    CLAUDE_CODE: (
        "Notification",
        "PostToolUse",
        "PostToolUseFailure",
        "PermissionDenied",
        "ElicitationResult",
        "UserPromptSubmit",
        "Stop",
    ),
    # Codex has no Notification, PostToolUseFailure or PermissionDenied event.
    CODEX: ("PostToolUse", "UserPromptSubmit", "Stop"),
}
MATCHERS = {"PreToolUse": PRE_TOOL_USE_MATCHER}


def events(agent: str) -> tuple[str, ...]:
    return ASKING[agent] + TELLING[agent]


class InstallError(Exception):
    """A setting that cannot be written as asked; nothing was changed."""


@dataclass(frozen=True)
class Plan:
    """What to install: for which agent, which server, how long to wait, and in which form."""

    agent: str
    url: str
    wait: float
    http: bool = False
    program: str = "askuser"  # how the agent starts this command, shell-quoted

    def check(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InstallError(f"{self.url!r} is not an http:// or https:// address of the askuser server")
        if parts.query or parts.fragment:
            raise InstallError(f"{self.url!r}: give the server's address alone, without ? or #")
        if not 0 <= self.wait <= MAX_WAIT:
            raise InstallError(f"--wait must be from 0 to {MAX_WAIT} seconds (the server waits no longer)")
        if self.http and self.agent == CODEX:
            raise InstallError("Codex runs command hooks only: install it without --http")
        refusal = http_hook_refusal(self.url) if self.http else None
        if refusal:
            raise InstallError(f"{refusal}: install the command hook instead (without --http)")

    def block(self) -> dict[str, list[dict[str, Any]]]:
        """The ``hooks`` settings, event by event."""
        hooks: dict[str, list[dict[str, Any]]] = {}
        for event in events(self.agent):
            asks = event in ASKING[self.agent]
            group: dict[str, Any] = {"matcher": MATCHERS[event]} if event in MATCHERS else {}
            group["hooks"] = [self.handler(self.wait if asks else 0)]
            hooks[event] = [group]
        return hooks

    def handler(self, wait: float) -> dict[str, Any]:
        hook = Hook(self.url.rstrip("/"), wait, self.agent)
        timeout = int(wait) + TIMEOUT_MARGIN if wait else TELL_TIMEOUT
        if self.http:
            return {
                "type": "http",
                "url": hook.endpoint,
                "headers": {"Authorization": f"Bearer ${TOKEN_VARIABLE}"},
                "allowedEnvVars": [TOKEN_VARIABLE],
                "timeout": timeout,
            }
        words = [self.program, "hook"]
        if self.agent != CLAUDE_CODE:
            words += ["--agent", self.agent]
        words += ["--url", shlex.quote(hook.url), "--wait", f"{wait:g}"]
        return {"type": "command", "command": " ".join(words), "timeout": timeout}

    def printed(self) -> str:
        return json.dumps({"hooks": self.block()}, indent=2)


# --- where the settings are ----------------------------------------------------------------


def settings_path(agent: str, project: str | None = None) -> Path:
    """The file ``install`` writes for ``agent``: the user's, or ``project``'s (Claude Code)."""
    if agent == CODEX:
        if project is not None:
            raise InstallError("Codex reads hooks from $CODEX_HOME/hooks.json only: install it without --project")
        return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "hooks.json"
    if project is not None:
        return Path(project) / ".claude" / "settings.json"
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "settings.json"


def read_settings(path: Path) -> dict[str, Any]:
    """The settings in ``path`` (``{}`` when there is no file); ``InstallError`` if it cannot be read as such."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise InstallError(f"{path}: {error.strerror}") from None
    try:
        settings = json.loads(text) if text.strip() else {}
    except ValueError as error:
        raise InstallError(f"{path} is not JSON ({error}): fix it or move it away; nothing was changed") from None
    if not isinstance(settings, dict) or not isinstance(settings.get("hooks", {}), dict):
        raise InstallError(f'{path}: expected an object with a "hooks" object; nothing was changed')
    return settings


# --- merging ---------------------------------------------------------------------------------


def is_ours(handler: Any) -> bool:
    """Whether ``handler`` is askuser's: this command's hook, or any that posts to the hooks endpoint."""
    if not isinstance(handler, Mapping):
        return False
    if HOOKS_PATH in str(handler.get("url", "")) or HOOKS_PATH in str(handler.get("command", "")):
        return True
    try:
        words = shlex.split(str(handler.get("command", "")))
    except ValueError:
        return False
    return len(words) >= 2 and os.path.basename(words[0]) == "askuser" and words[1] == "hook"


def without_ours(groups: Any) -> Any:
    """An event's matcher groups without askuser's handlers; a group left empty by that goes too."""
    if not isinstance(groups, list):
        return groups
    kept = []
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, Mapping) else None
        if not isinstance(handlers, list) or not any(is_ours(h) for h in handlers):
            kept.append(group)
            continue
        theirs = [h for h in handlers if not is_ours(h)]
        if theirs:
            kept.append({**group, "hooks": theirs})
    return kept


def merged(settings: Mapping[str, Any], block: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``settings`` with askuser's hooks replaced by ``block``, everything else as it was."""
    hooks = {event: without_ours(groups) for event, groups in settings.get("hooks", {}).items()}
    hooks = {event: groups for event, groups in hooks.items() if groups != []}
    for event, groups in block.items():
        existing = hooks.get(event)
        hooks[event] = [*(existing if isinstance(existing, list) else []), *groups]
    return {**settings, "hooks": hooks}


@dataclass(frozen=True)
class Installed:
    path: Path
    changed: bool  # False: askuser's hooks were already exactly these
    backup: Path | None  # the old file's copy, when there was one


def install(plan: Plan, path: Path) -> Installed:
    """Merge ``plan`` into the settings at ``path``, after copying the old file beside it."""
    plan.check()
    settings = read_settings(path)
    updated = merged(settings, plan.block())
    if path.exists() and updated == settings:
        return Installed(path, changed=False, backup=None)
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = backup_of(path) if path.exists() else None
    write_atomically(path, json.dumps(updated, indent=2) + "\n")
    return Installed(path, changed=True, backup=backup)


def backup_of(path: Path) -> Path:
    """A copy of ``path`` beside it, named for the time (and a number, never over an older backup)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path.with_name(f"{path.name}.{stamp}.bak")
    number = 1
    while backup.exists():
        number += 1
        backup = path.with_name(f"{path.name}.{stamp}-{number}.bak")
    shutil.copy2(path, backup)
    return backup


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` in one step, keeping its permissions: the agent never reads half a file."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
