"""``askuser doctor``: what stands between the agent's hooks and the person, in plain sentences.

It reads the agent's settings (the files ``install`` writes; for Claude Code also the
current project's ``.claude/settings.json`` and ``.claude/settings.local.json``) and
says, event by event, which askuser hook is missing, which ``timeout`` is not above
its ``wait``, and which http hook posts to an address Claude Code refuses. Then it
posts one event no agent sends to the server (``wait=0``; nothing is asked or
stored) to learn whether the server is reachable at that address and takes the token.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from askuser_client.addresses import http_hook_refusal
from askuser_client.hook import (
    AGENTS,
    CLAUDE_CODE,
    CODEX,
    CONNECT_TIMEOUT,
    DEFAULT_URL,
    DEFAULT_WAIT,
    HOOKS_PATH,
    TOKEN_VARIABLE,
    reason,
    refusal,
)
from askuser_client.install import InstallError, events, is_ours, read_settings, settings_path

PROBE = {"hook_event_name": "AskuserDoctor"}  # an event no agent sends: the server answers {} and keeps nothing


@dataclass(frozen=True)
class Finding:
    ok: bool
    text: str

    def __str__(self) -> str:
        return f"{'ok' if self.ok else 'problem'}: {self.text}"


@dataclass(frozen=True)
class Installed:
    """One askuser hook found in a settings file."""

    path: Path
    event: str
    handler: Mapping[str, Any]

    @property
    def url(self) -> str | None:
        """The server's address the hook posts to."""
        if self.handler.get("type") == "http":
            return str(self.handler.get("url", "")).partition(HOOKS_PATH)[0] or None
        return self.option("--url")

    @property
    def wait(self) -> float:
        if self.handler.get("type") == "http":
            given = parse_qs(urlsplit(str(self.handler.get("url", ""))).query).get("wait", [None])[0]
        else:
            given = self.option("--wait")
        try:
            return float(given) if given is not None else DEFAULT_WAIT
        except ValueError:
            return DEFAULT_WAIT

    def option(self, name: str) -> str | None:
        try:
            words = shlex.split(str(self.handler.get("command", "")))
        except ValueError:
            return None
        return next((words[i + 1] for i, word in enumerate(words[:-1]) if word == name), None)


def settings_files(agent: str, project: Path) -> list[Path]:
    if agent == CODEX:
        return [settings_path(CODEX)]
    project_settings = project / ".claude"
    paths = [settings_path(CLAUDE_CODE), project_settings / "settings.json", project_settings / "settings.local.json"]
    return list(dict.fromkeys(path.resolve() for path in paths))  # the project may be the home folder


def installed(agent: str, project: Path) -> tuple[list[Installed], list[Finding]]:
    """askuser's hooks in ``agent``'s settings, and what stopped a file from being read."""
    found: list[Installed] = []
    problems: list[Finding] = []
    for path in settings_files(agent, project):
        try:
            settings = read_settings(path)
        except InstallError as error:
            problems.append(Finding(False, str(error)))
            continue
        for event, groups in settings.get("hooks", {}).items():
            for handler in handlers(groups):
                if is_ours(handler):
                    found.append(Installed(path, event, handler))
    return found, problems


def handlers(groups: Any) -> Iterator[Mapping[str, Any]]:
    for group in groups if isinstance(groups, list) else []:
        listed = group.get("hooks") if isinstance(group, Mapping) else None
        yield from (h for h in listed if isinstance(h, Mapping)) if isinstance(listed, list) else ()


def settings_findings(agent: str, hooks: list[Installed]) -> Iterator[Finding]:
    where = " or ".join(sorted({str(hook.path) for hook in hooks})) or str(settings_path(agent))
    missing = [event for event in events(agent) if not any(hook.event == event for hook in hooks)]
    if missing:
        fix = f"`askuser install {agent}` adds {'it' if len(missing) == 1 else 'them'}"
        yield Finding(False, f"{where}: no askuser hook for {', '.join(missing)}: {fix}")
    for hook in hooks:
        yield from hook_findings(agent, hook)
    if hooks and not missing:
        yield Finding(True, f"{where}: askuser's hooks are there for {', '.join(events(agent))}")


def hook_findings(agent: str, hook: Installed) -> Iterator[Finding]:
    name = f"{hook.path}: {hook.event}'s hook"
    timeout = hook.handler.get("timeout")
    if not isinstance(timeout, int | float) or isinstance(timeout, bool):
        yield Finding(False, f"{name} has no timeout: give it one above its wait ({hook.wait:g} s)")
    elif timeout <= hook.wait:
        yield Finding(
            False, f"{name} has timeout {timeout:g} ≤ wait {hook.wait:g}: the agent gives up before askuser answers"
        )
    if hook.handler.get("type") == "http":
        if agent == CODEX:
            yield Finding(False, f"{name} is an http hook, and Codex runs command hooks only")
        refused = http_hook_refusal(str(hook.handler.get("url", "")))
        if refused:
            yield Finding(False, f"{name}: {refused}: use the command hook (`askuser install {agent}`, without --http)")


def server_findings(url: str, token: str | None, transport: httpx.BaseTransport | None = None) -> Iterator[Finding]:
    if not token:
        yield Finding(False, f"{TOKEN_VARIABLE} is not set here; the hooks read the agent's token from it")
    headers = {"Authorization": f"Bearer {token or ''}", "Content-Type": "application/json"}
    endpoint = f"{url.rstrip('/')}{HOOKS_PATH}?wait=0"
    try:
        with httpx.Client(timeout=httpx.Timeout(10.0, connect=CONNECT_TIMEOUT), transport=transport) as http:
            reply = http.post(endpoint, content=json.dumps(PROBE), headers=headers)
    except httpx.TransportError as error:
        yield Finding(False, f"could not reach the askuser server at {url}: {reason(error)} (is it running?)")
        return
    if reply.is_redirect:
        where = reply.headers.get("Location", "elsewhere")
        yield Finding(False, f"{url} redirects to {where}, and hooks follow no redirect: use that address")
    elif reply.status_code == 401:
        if token:
            yield Finding(False, f"the server at {url} refused the token in {TOKEN_VARIABLE}: {refusal(reply)}")
        else:
            yield Finding(True, f"the askuser server at {url} answers")
    elif reply.is_success and isinstance(_json(reply), dict):
        yield Finding(True, f"the askuser server at {url} answers and takes the token")
    else:
        yield Finding(False, f"{url} answered {reply.status_code} to a hook: is it the askuser server's address?")


def _json(reply: httpx.Response) -> Any:
    try:
        return reply.json()
    except ValueError:
        return None


def diagnose(
    agents: list[str],
    url: str | None,
    token: str | None,
    project: Path,
    transport: httpx.BaseTransport | None = None,
) -> list[Finding]:
    """Every finding about ``agents`` (all whose settings exist, if none is named) and their server."""
    checked = agents or [agent for agent in AGENTS if any(p.exists() for p in settings_files(agent, project))]
    findings: list[Finding] = []
    if not checked:
        findings.append(Finding(False, "no agent settings found: run `askuser install claude-code` or `codex`"))
    urls: list[str] = []
    for agent in checked:
        hooks, unreadable = installed(agent, project)
        findings += unreadable
        findings += settings_findings(agent, hooks)
        urls += [hook.url.rstrip("/") for hook in hooks if hook.url]
    targets = [url.rstrip("/")] if url else list(dict.fromkeys(urls)) or [DEFAULT_URL]
    for target in targets:
        findings += server_findings(target, token, transport)
    if url:
        others = sorted(set(urls) - {url.rstrip("/")})
        if others:
            findings.append(Finding(False, f"the hooks post to {', '.join(others)}, not to {url}"))
    return findings
