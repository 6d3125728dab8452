"""``askuser hook`` as an agent runs it: the event on stdin, against a real server; the decision
the person gave on stdout in the agent's shape, and nothing at all when askuser cannot decide."""

from __future__ import annotations

import json

import httpx
import pytest
from django.conf import settings

from askuser_app.models import Prompt
from tests.conftest import log_in, until_sync, wait_until_parked
from tests.servers import free_port

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True), pytest.mark.backend_neutral]

CSRF = "hookclientcsrftokenhookclientcsr"  # an unmasked 32-character secret
EVENT = {
    "session_id": "0c6a3f4e-5b1d-4f7e-9a2c-7d8e9f0a1b2c",
    "transcript_path": "/home/alice/.claude/projects/x.jsonl",
    "cwd": "/home/alice/app",
    "hook_event_name": "PermissionRequest",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf build/", "description": "Clean"},
    "permission_suggestions": [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "rm -rf build/"}],
            "behavior": "allow",
            "destination": "localSettings",
        }
    ],
}
ALLOW, DENY, ALLOW_ALWAYS = "0", "1", "2"  # the options' places in the permission question


def answer_in_the_browser(server, owner, choice: str) -> None:
    """The person picks an option in the panel, over the server's own answer route."""
    until_sync(lambda: Prompt.objects.filter(status="pending").exists())
    wait_until_parked(server)
    prompt = Prompt.objects.select_related("session").get(status="pending")
    cookies = f"{settings.SESSION_COOKIE_NAME}={log_in(owner)}; csrftoken={CSRF}"
    response = httpx.post(
        f"{server.url}/s/{prompt.session.key}/prompts/{prompt.pk}/answer",
        data={"q-permission": choice, "action": "answer"},
        headers={"Cookie": cookies, "X-CSRFToken": CSRF, "HX-Request": "true"},
    )
    assert response.status_code == 200, response.text


def test_allow_in_askuser_reaches_claude_code_as_the_allow_decision(server, askuser, token, owner):
    hook = askuser.start("hook", "--url", server.url, "--wait", "30", ASKUSER_TOKEN=token)
    hook.stdin.write(json.dumps(EVENT))
    hook.stdin.close()

    answer_in_the_browser(server, owner, ALLOW)

    assert hook.wait(20) == 0
    assert json.loads(hook.stdout.read()) == {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    }


def test_deny_in_askuser_reaches_codex_as_a_deny_with_who_denied_it(server, askuser, token, owner):
    hook = askuser.start("hook", "--agent", "codex", "--url", server.url, "--wait", "30", ASKUSER_TOKEN=token)
    hook.stdin.write(json.dumps(EVENT))
    hook.stdin.close()

    answer_in_the_browser(server, owner, DENY)

    assert hook.wait(20) == 0
    decision = json.loads(hook.stdout.read())["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    assert "alice" in decision["message"]
    assert Prompt.objects.get().session.title == "Codex · app"


def test_allow_and_dont_ask_again_reaches_codex_as_a_plain_allow(server, askuser, token, owner):
    # Codex fails closed on updatedPermissions: the rules it cannot take must not turn an allow into a deny.
    hook = askuser.start("hook", "--agent", "codex", "--url", server.url, "--wait", "30", ASKUSER_TOKEN=token)
    hook.stdin.write(json.dumps(EVENT))
    hook.stdin.close()

    answer_in_the_browser(server, owner, ALLOW_ALWAYS)

    assert hook.wait(20) == 0
    assert json.loads(hook.stdout.read()) == {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    }


def test_a_notification_prints_nothing_and_lands_in_the_timeline(server, askuser, token):
    event = {**EVENT, "hook_event_name": "Notification", "notification_type": "idle_prompt", "message": "Idle"}

    done = askuser.run("hook", "--url", server.url, "--wait", "0", stdin=json.dumps(event), ASKUSER_TOKEN=token)

    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_with_the_server_down_the_hook_prints_nothing_and_exits_0(askuser):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there

    done = askuser.run("hook", "--url", url, stdin=json.dumps(EVENT), ASKUSER_TOKEN="any")

    assert (done.returncode, done.stdout) == (0, "")
    assert f"could not reach {url}: connection refused" in done.stderr


def test_a_bad_token_prints_nothing_and_says_why_on_stderr(server, askuser):

    done = askuser.run("hook", "--url", server.url, stdin=json.dumps(EVENT), ASKUSER_TOKEN="not-a-token")

    assert (done.returncode, done.stdout) == (0, "")
    assert "refused the hook (401)" in done.stderr
    assert not Prompt.objects.exists()


def test_without_a_token_the_hook_asks_nothing_and_says_so(server, askuser):

    done = askuser.run("hook", "--url", server.url, stdin=json.dumps(EVENT))

    assert (done.returncode, done.stdout) == (0, "")
    assert "ASKUSER_TOKEN is not set" in done.stderr
