"""``askuser install`` and ``askuser doctor``: the agent's settings merged (every other setting
kept, the old file backed up, no token written), and what doctor says is wrong."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.servers import free_port

pytestmark = pytest.mark.backend_neutral

ROOT = Path(__file__).resolve().parents[2]
CLAUDE_EVENTS = {
    "PermissionRequest",
    "PreToolUse",
    "Elicitation",
    "Notification",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionDenied",
    "ElicitationResult",
    "UserPromptSubmit",
    "Stop",
}
THEIRS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}]},
}
URL = "http://127.0.0.1:8000"


def handlers(settings: dict, event: str) -> list[dict]:
    return [handler for group in settings["hooks"].get(event, []) for handler in group["hooks"]]


def test_install_merges_into_claude_codes_settings_keeping_the_rest_and_backing_up_the_old_file(askuser):
    path = askuser.home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(THEIRS))

    done = askuser.run("install", "claude-code", "--url", URL, ASKUSER_TOKEN="secret-token-value")

    assert done.returncode == 0, done.stderr
    settings = json.loads(path.read_text())
    assert (settings["model"], settings["permissions"]) == (THEIRS["model"], THEIRS["permissions"])
    assert set(settings["hooks"]) == CLAUDE_EVENTS
    assert {"type": "command", "command": "./lint.sh"} in handlers(settings, "PreToolUse")
    [asking] = handlers(settings, "PermissionRequest")
    assert asking == {"type": "command", "command": f"askuser hook --url {URL} --wait 55", "timeout": 65}
    assert "secret-token-value" not in path.read_text()
    [backup] = path.parent.glob("settings.json.*.bak")
    assert json.loads(backup.read_text()) == THEIRS


def test_installing_again_with_another_wait_replaces_askusers_hooks_instead_of_adding_more(askuser):
    askuser.run("install", "claude-code", "--url", URL)
    again = askuser.run("install", "claude-code", "--url", URL, "--wait", "300")

    assert again.returncode == 0, again.stderr
    settings = json.loads((askuser.home / ".claude" / "settings.json").read_text())
    [asking] = handlers(settings, "PermissionRequest")
    assert (asking["command"].split()[-1], asking["timeout"]) == ("300", 310)
    assert all(len(handlers(settings, event)) == 1 for event in CLAUDE_EVENTS)


def test_install_codex_writes_its_hooks_json_with_the_events_codex_has(askuser):
    codex_home = askuser.home / "codex-home"

    done = askuser.run("install", "codex", "--url", URL, CODEX_HOME=str(codex_home))

    assert done.returncode == 0, done.stderr
    settings = json.loads((codex_home / "hooks.json").read_text())
    assert set(settings) == {"hooks"}  # Codex refuses any other top-level field
    assert set(settings["hooks"]) == {"PermissionRequest", "PostToolUse", "UserPromptSubmit", "Stop"}
    [asking] = handlers(settings, "PermissionRequest")
    assert asking["command"] == f"askuser hook --agent codex --url {URL} --wait 55"


def test_a_settings_file_that_is_not_json_is_refused_and_left_as_it_was(askuser):
    path = askuser.home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{not json")

    done = askuser.run("install", "claude-code", "--url", URL)

    assert done.returncode == 1
    assert "is not JSON" in done.stderr and "nothing was changed" in done.stderr
    assert path.read_text() == "{not json"
    assert list(path.parent.iterdir()) == [path]


@pytest.mark.parametrize(
    ("address", "kind"),
    [("192.168.1.20", "a private address"), ("100.101.102.103", "Tailscale"), ("169.254.10.1", "link-local")],
)
def test_the_http_form_refuses_an_address_claude_codes_http_hooks_refuse(askuser, address, kind):
    done = askuser.run("install", "claude-code", "--http", "--url", f"http://{address}:8000")

    assert done.returncode == 1
    assert f"Claude Code's http hooks refuse {address}" in done.stderr and kind in done.stderr
    assert not (askuser.home / ".claude").exists()


def test_the_printed_settings_blocks_are_the_ones_docs_hooks_md_shows(askuser):
    page = (ROOT / "docs" / "HOOKS.md").read_text()
    shown = re.findall(r"^\$ (askuser install [^\n]*--print)\n```\n+```json\n(.*?)^```", page, re.M | re.S)

    assert len(shown) == 3  # the command hook and the http hook for Claude Code, Codex's
    for command, block in shown:
        done = askuser.run(*command.split()[1:])
        assert done.returncode == 0, done.stderr
        assert done.stdout == block, command


# --- doctor -----------------------------------------------------------------------------------

# The server process reads the token from the database (django_db(transaction=True): committed).


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_doctor_finds_nothing_wrong_with_a_fresh_install(askuser, server, token):
    askuser.run("install", "claude-code", "--url", server.url)

    done = askuser.run("doctor", "claude-code", ASKUSER_TOKEN=token)

    assert done.returncode == 0, done.stdout
    assert f"ok: the askuser server at {server.url} answers and takes the token" in done.stdout
    assert "problem" not in done.stdout


def test_doctor_says_the_server_is_unreachable(askuser):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    askuser.run("install", "claude-code", "--url", url)

    done = askuser.run("doctor", ASKUSER_TOKEN="any")

    assert done.returncode == 1
    assert f"problem: could not reach the askuser server at {url}: connection refused" in done.stdout


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_doctor_says_the_token_is_refused(askuser, server):
    askuser.run("install", "codex", "--url", server.url, CODEX_HOME=str(askuser.home / ".codex"))

    done = askuser.run("doctor", "codex", ASKUSER_TOKEN="not-a-token")

    assert done.returncode == 1
    assert f"problem: the server at {server.url} refused the token in ASKUSER_TOKEN" in done.stdout


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_doctor_names_a_missing_hook_a_timeout_not_above_wait_and_a_refused_address(askuser, server, token):
    askuser.run("install", "claude-code", "--url", server.url)
    path = askuser.home / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    del settings["hooks"]["Stop"]
    settings["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"] = 30  # wait is 55
    http = {"type": "http", "url": "http://192.168.1.20:8000/api/v1/hooks?wait=0", "timeout": 10}
    settings["hooks"]["Notification"] = [{"hooks": [http]}]
    path.write_text(json.dumps(settings))

    done = askuser.run("doctor", "claude-code", "--url", server.url, ASKUSER_TOKEN=token)

    assert done.returncode == 1
    assert f"problem: {path}: no askuser hook for Stop" in done.stdout
    assert f"problem: {path}: PermissionRequest's hook has timeout 30 ≤ wait 55" in done.stdout
    assert "Notification's hook: Claude Code's http hooks refuse 192.168.1.20, a private address" in done.stdout
