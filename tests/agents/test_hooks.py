"""SPEC 4.5: a coding agent's hook events posted to /api/v1/hooks get the hook output back,
through the ASGI app production serves."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import Client

from askuser_app.delivery import engine
from askuser_app.delivery.channels.chats import core
from askuser_app.delivery.channels.email import mails
from askuser_app.delivery.channels.telegram.adapter import SECRET_HEADER
from askuser_app.domain import hooks, prefs, services
from askuser_app.models import Delivery, Message, Prompt
from askuser_app.runtime import realtime
from askuser_app.runtime.asyncdb import database_call
from askuser_client import install
from tests.chatfake import CHAT, SECRET, TOKEN, FakeTelegram, tap_update
from tests.conftest import asgi_request

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 10
SESSION_ID = "5f1c2e7a-1d2b-4c11-9a3e-0b6f7f4d2e10"
BASE = {"session_id": SESSION_ID, "transcript_path": "/home/alice/.claude/projects/x.jsonl", "cwd": "/home/alice/app"}
BASH = {
    **BASE,
    "hook_event_name": "PermissionRequest",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf build/ && echo '<script>alert(1)</script>'", "description": "Clean"},
    "permission_suggestions": [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "rm -rf build/"}],
            "behavior": "allow",
            "destination": "localSettings",
        }
    ],
}
RULE_SAID = "Allow `Bash(rm -rf build/)` in this project's local settings"


def post_hook(token: str, event: dict | bytes, wait: float = 30) -> asyncio.Future:
    body = event if isinstance(event, bytes) else json.dumps(event).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    return asyncio.ensure_future(asgi_request("POST", f"/api/v1/hooks?wait={wait}", content=body, headers=headers))


@database_call
def the_prompt() -> Prompt | None:
    return Prompt.objects.select_related("session").prefetch_related("questions__options").first()


async def asked_prompt() -> Prompt:
    """The hook's prompt, once the hook call waits on it."""
    found: list[Prompt] = []

    async def read() -> None:
        prompt = await the_prompt()
        if prompt is not None and realtime.hub().inboxes.get(realtime.prompt_group(prompt.pk)):
            found.append(prompt)

    loop_end = asyncio.get_running_loop().time() + DEADLINE
    while not found:
        assert asyncio.get_running_loop().time() < loop_end, "the hook never parked"
        await read()
        await asyncio.sleep(0.01)
    return found[0]


answer = database_call(services.answer)


async def test_a_permission_request_asks_one_question_with_the_command_shown(token, owner):
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()

    [question] = prompt.questions.all()
    assert (question.header, question.text) == ("Bash", "Run this command?")
    assert question.detail == "rm -rf build/ && echo '<script>alert(1)</script>'\n\ndescription: Clean"
    assert [(o.label, o.description) for o in question.options.all()] == [
        ("Allow", ""),
        ("Deny", ""),
        ("Allow and don't ask again", RULE_SAID),
    ]
    assert prompt.session.title == "Claude Code · app"
    assert prompt.session.key.startswith("cc-") and len(prompt.session.key) == 23
    assert prompt.hook_event == "PermissionRequest"
    await answer(prompt, {"permission": "Allow"}, by=owner, surface="web")
    await asyncio.wait_for(calling, DEADLINE)


async def test_allow_in_the_panel_returns_the_allow_decision(token, owner):
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()

    await answer(prompt, {"permission": "Allow"}, by=owner, surface="web")

    response = await asyncio.wait_for(calling, DEADLINE)
    assert response.status_code == 200
    assert response.json() == {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    }


async def test_allow_and_dont_ask_again_returns_the_suggestions_as_updated_permissions(token, owner):
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()

    await answer(prompt, {"permission": "Allow and don't ask again"}, by=owner, surface="web")

    decision = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow", "updatedPermissions": BASH["permission_suggestions"]}


BROAD = [
    {"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow", "destination": "localSettings"},
    {"type": "setMode", "mode": "bypassPermissions", "destination": "session"},
    {
        "type": "addRules",
        "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
        "behavior": "allow",
        "destination": "userSettings",
    },
]


async def test_broad_suggestions_are_never_granted_by_one_tap(token, owner):
    calling = post_hook(token, {**BASH, "permission_suggestions": BROAD})
    prompt = await asked_prompt()

    assert [o.label for o in prompt.questions.all()[0].options.all()] == ["Allow", "Deny"]
    await answer(prompt, {"permission": "Allow"}, by=owner, surface="web")
    assert (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


async def test_allow_and_dont_ask_again_grants_only_the_narrow_rules_it_shows(token, owner):
    narrow = {
        "type": "addRules",
        "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
        "behavior": "allow",
        "destination": "projectSettings",
    }
    calling = post_hook(token, {**BASH, "permission_suggestions": [*BROAD, narrow]})
    prompt = await asked_prompt()

    always = prompt.questions.all()[0].options.all()[2]
    assert (always.label, always.description) == (
        "Allow and don't ask again",
        "Allow `Bash(npm test:*)` in this project's settings",
    )
    await answer(prompt, {"permission": "Allow and don't ask again"}, by=owner, surface="web")
    decision = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow", "updatedPermissions": [narrow]}


async def test_deny_says_who_denied_and_where(token, owner):
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()

    await answer(prompt, {"permission": "Deny"}, by=owner, surface="telegram")

    decision = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "deny", "message": "Denied by alice on Telegram"}


async def test_the_persons_own_words_deny_with_those_words(token, owner):
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()

    await answer(prompt, {"permission": "Use make clean instead"}, by=owner, surface="web")

    decision = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "deny", "message": "Use make clean instead"}


async def test_no_answer_within_wait_returns_nothing_and_closes_the_prompt(token):
    response = await asyncio.wait_for(post_hook(token, BASH, wait=0.2), DEADLINE)

    assert (response.status_code, response.json()) == (200, {})
    prompt = await the_prompt()
    assert (prompt.status, prompt.reason) == ("no_answer", "terminal")
    assert realtime.hub().inboxes == {}


async def test_a_pretooluse_gets_a_permission_decision_or_nothing(token, owner):
    event = {**BASH, "hook_event_name": "PreToolUse"}
    event.pop("permission_suggestions")
    calling = post_hook(token, event)
    prompt = await asked_prompt()
    assert [o.label for o in prompt.questions.all()[0].options.all()] == ["Allow", "Deny"]

    await answer(prompt, {"permission": "Deny"}, by=owner, surface="web")

    assert (await asyncio.wait_for(calling, DEADLINE)).json() == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Denied by alice on the web",
        }
    }
    # Nobody answered: no decision at all, so the agent's own rules and dialog decide. An
    # ``ask`` would refuse even ``ls`` in a headless run, where nobody sees a dialog.
    unanswered = await asyncio.wait_for(post_hook(token, {**event, "tool_use_id": "toolu_2"}, wait=0.1), DEADLINE)
    assert (unanswered.status_code, unanswered.json()) == (200, {})


async def test_the_same_request_again_while_it_is_pending_goes_to_the_terminal_at_once(token, owner):
    first = post_hook(token, BASH)
    prompt = await asked_prompt()

    second = await asyncio.wait_for(post_hook(token, BASH), DEADLINE)

    assert (second.status_code, second.json()) == (200, {})
    await answer(prompt, {"permission": "Allow"}, by=owner, surface="web")
    assert (await asyncio.wait_for(first, DEADLINE)).json()["hookSpecificOutput"]["decision"]["behavior"] == "allow"


@database_call
def timeline() -> list[tuple[str, str, str]]:
    return list(Message.objects.values_list("session__key", "author", "text"))


async def test_notification_and_stop_write_a_line_and_return_at_once(token):
    notified = {**BASE, "hook_event_name": "Notification", "notification_type": "idle_prompt", "message": "…"}
    last = "Done. " + "x" * 400
    stopped = {**BASE, "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": last}

    for event in (notified, stopped):
        response = await asyncio.wait_for(post_hook(token, event), DEADLINE)
        assert (response.status_code, response.json()) == (200, {})

    key = hooks.session_key(BASE)
    assert await timeline() == [
        (key, "system", "Claude Code is waiting for your input"),
        (key, "system", "Claude Code finished: " + last[:300] + "…"),
    ]


async def test_an_unknown_event_returns_nothing(token):
    response = await asyncio.wait_for(post_hook(token, {**BASE, "hook_event_name": "SessionStart"}), DEADLINE)

    assert (response.status_code, response.json()) == (200, {})
    assert await the_prompt() is None


async def test_malformed_json_is_a_400_with_the_usual_body(token):
    response = await asyncio.wait_for(post_hook(token, b"{not json"), DEADLINE)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_json"


async def test_without_a_token_it_is_401(token):
    response = await asyncio.wait_for(post_hook("nope", BASH), DEADLINE)

    assert response.status_code == 401
    assert await the_prompt() is None


def test_the_tool_input_is_cut_visibly_at_the_detail_length():
    shown = hooks.detail("Bash", {"command": "echo " + "y" * 10_000})

    assert 3990 <= len(shown) <= 4000
    assert shown.endswith("more characters)")


def test_an_edit_shows_the_file_and_the_change():
    shown = hooks.detail("Edit", {"file_path": "/a/app.py", "old_string": "x = 1", "new_string": "x = 2"})

    assert shown == "/a/app.py\n\n@@ -1 +1 @@\n-x = 1\n+x = 2"


async def test_every_other_field_of_a_command_shows_under_it_the_dangerous_ones_first(token, owner):
    tool_input = {
        "command": "npm run deploy",
        "description": "Deploy",
        "timeout": 600000,
        "run_in_background": True,
        "dangerouslyDisableSandbox": True,
    }
    calling = post_hook(token, {**BASH, "tool_input": tool_input})
    prompt = await asked_prompt()

    assert prompt.questions.all()[0].detail == (
        "npm run deploy\n\n"
        "dangerouslyDisableSandbox: true\nrun_in_background: true\ndescription: Deploy\ntimeout: 600000"
    )
    await answer(prompt, {"permission": "Deny"}, by=owner, surface="web")
    await asyncio.wait_for(calling, DEADLINE)


def test_an_edit_of_every_occurrence_and_a_fetchs_prompt_are_shown():
    edit = {"file_path": "/a/app.py", "old_string": "x", "new_string": "y", "replace_all": True}
    fetch = {"url": "https://example.com/", "prompt": "Find the token", "offset": 0}

    assert hooks.detail("Edit", edit) == "/a/app.py\n\n@@ -1 +1 @@\n-x\n+y\n\nreplace_all: true"
    assert hooks.detail("WebFetch", fetch) == "https://example.com/\n\nprompt: Find the token\noffset: 0"


def test_a_long_command_is_cut_but_never_the_fields_under_it():
    shown = hooks.detail("Bash", {"command": "echo " + "y" * 10_000, "dangerouslyDisableSandbox": True})

    assert len(shown) <= 4000
    assert shown.endswith("more characters)\n\ndangerouslyDisableSandbox: true")


# --- answered on Telegram -----------------------------------------------------------------------


@pytest.fixture
def telegram(settings, fake_api) -> FakeTelegram:
    settings.TELEGRAM_BOT_TOKEN = TOKEN
    settings.TELEGRAM_WEBHOOK_SECRET = SECRET
    settings.TELEGRAM_API_URL = fake_api.url
    settings.ASKUSER_PUBLIC_URL = "https://askuser.example.com"
    return FakeTelegram(fake_api)


async def test_a_telegram_button_decides_the_permission(telegram, owner, token):
    await database_call(core.link_by_hand)(owner, "telegram", str(CHAT), chat_id=str(CHAT), handle="@alice")
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()
    hexid = prompt.pk.hex

    tap = tap_update(1, 500, f"o:{hexid}:1")  # the second button: Deny
    headers = {SECRET_HEADER: SECRET, "Content-Type": "application/json"}
    tapped = await asyncio.wait_for(
        asgi_request("POST", "/chat/telegram/webhook", content=json.dumps(tap).encode(), headers=headers), DEADLINE
    )

    assert tapped.status_code == 200
    assert (await asyncio.wait_for(calling, DEADLINE)).json() == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "Denied by alice on Telegram"},
        }
    }


# --- news on the person's channels ---------------------------------------------------------------

STOPPED = {**BASE, "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "All tests pass."}
WAITING = {**BASE, "hook_event_name": "Notification", "notification_type": "idle_prompt", "message": "Claude is idle"}


@pytest.fixture
def linked_telegram(telegram, owner) -> FakeTelegram:
    core.link_by_hand(owner, "telegram", str(CHAT), chat_id=str(CHAT), handle="@alice")
    return telegram


@database_call
def tell_finished(user, on: bool) -> None:
    prefs.choose_tell_finished(user, on)


@database_call
def news_rows() -> list[Delivery]:
    return list(Delivery.objects.filter(prompt=None))


async def test_a_finished_agent_is_told_on_telegram_when_the_person_chose_it(linked_telegram, owner, token):
    await tell_finished(owner, True)
    assert (await asyncio.wait_for(post_hook(token, STOPPED), DEADLINE)).json() == {}
    engine.ensure_running()

    [told] = await linked_telegram.arrived("sendMessage")
    assert str(told.body["chat_id"]) == str(CHAT)
    assert told.body["text"].startswith("Claude Code · app\nClaude Code finished: All tests pass.\n\nhttps://")
    assert "parse_mode" not in told.body  # the agent's words as plain text


async def test_a_finished_agent_is_not_told_by_default(linked_telegram, owner, token):
    assert (await asyncio.wait_for(post_hook(token, STOPPED), DEADLINE)).json() == {}
    await tell_finished(owner, False)
    assert (await asyncio.wait_for(post_hook(token, STOPPED), DEADLINE)).json() == {}

    assert await news_rows() == []  # nothing for the engine to send
    assert await database_call(Message.objects.count)() == 2  # the timeline still has both lines


async def test_an_agent_waiting_for_input_is_told_on_telegram_by_default(linked_telegram, owner, token):
    assert (await asyncio.wait_for(post_hook(token, WAITING), DEADLINE)).json() == {}
    engine.ensure_running()

    [told] = await linked_telegram.arrived("sendMessage")
    assert "Claude Code is waiting for your input" in told.body["text"]


# --- which agent --------------------------------------------------------------------------------


async def test_the_hooks_agent_parameter_names_the_agent_in_the_session_title_and_its_lines(token):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    body = json.dumps(WAITING).encode()
    answered = await asgi_request("POST", "/api/v1/hooks?agent=Codex", content=body, headers=headers)

    assert answered.json() == {}
    note = await database_call(lambda: Message.objects.select_related("session").get())()
    assert (note.session.title, note.text) == ("Codex · app", "Codex is waiting for your input")


async def test_an_agent_name_that_is_not_text_is_refused_and_nothing_is_written(token):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    body = json.dumps(WAITING).encode()
    refused = await asgi_request("POST", "/api/v1/hooks?agent=%E2%80%AEx", content=body, headers=headers)

    assert refused.status_code == 422 and "agent" in refused.text
    assert await database_call(Message.objects.count)() == 0


# --- answered by email ---------------------------------------------------------------------------


async def test_a_permissions_mail_links_to_its_page_and_no_mailed_link_allows_it(owner, token):
    owner.email = "alice@example.com"
    await database_call(owner.save)(update_fields=["email"])
    await database_call(prefs.choose_email_after)(owner, 60)
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()

    mail = await database_call(mails.compose)(prompt.pk, owner.email)
    assert mail is not None
    [(html, _mime)] = mail.message.alternatives
    more_time = mails.link_url(mails.make_token(prompt.pk, owner))
    for text in (str(mail.message.body), str(html)):
        assert "/chat/email/" not in text.replace(more_time, "")  # no link names an option
        assert core.prompt_url(prompt.pk) in text and "Answer in askuser" in text
    # A link to an option, as mails made one before: it shows the page and allows nothing.
    old_link = mails.link_url(mails.make_token(prompt.pk, owner, 0))
    shown = await database_call(lambda: Client().get(old_link))()
    confirmed = await database_call(lambda: Client().post(old_link, {"action": "answer"}))()

    assert shown.status_code == 200 and "Answer in askuser" in shown.content.decode()
    assert "Your choice" not in shown.content.decode()
    assert confirmed.status_code == 400
    assert (await database_call(Prompt.objects.get)(pk=prompt.pk)).is_pending
    await answer(prompt, {hooks.QUESTION_ID: [hooks.DENY]}, by=owner)
    assert (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["decision"]["behavior"] == "deny"


# --- decided at the terminal ---------------------------------------------------------------------

TOOL_USE = {"tool_name": BASH["tool_name"], "tool_input": BASH["tool_input"], "tool_use_id": "toolu_01"}
AFTER = {
    "PostToolUse": {**BASE, **TOOL_USE, "hook_event_name": "PostToolUse", "tool_response": {"stdout": ""}},
    "PostToolUseFailure": {**BASE, **TOOL_USE, "hook_event_name": "PostToolUseFailure", "error": "exit 1"},
    "PermissionDenied": {**BASE, **TOOL_USE, "hook_event_name": "PermissionDenied", "reason": "denied"},
    "UserPromptSubmit": {**BASE, "hook_event_name": "UserPromptSubmit", "prompt": "use make clean"},
    "Stop": STOPPED,
}


@database_call
def stored(prompt: Prompt) -> Prompt:
    return Prompt.objects.get(pk=prompt.pk)


@pytest.mark.parametrize("event", sorted(AFTER))
async def test_an_event_after_the_decision_closes_the_question_as_decided_at_the_terminal(token, owner, event):
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()

    told = await asyncio.wait_for(post_hook(token, AFTER[event]), DEADLINE)

    assert (told.status_code, told.json()) == (200, {})
    assert (await asyncio.wait_for(calling, DEADLINE)).json() == {}  # the terminal decided: askuser says nothing
    closed = await stored(prompt)
    assert (closed.status, closed.reason, closed.result["reason"]) == ("no_answer", "decided", "decided")
    with pytest.raises(services.AlreadyResolved, match=r"^Decided at the terminal at .*; this answer was not recorded"):
        await answer(closed, {"permission": "Deny"}, by=owner, surface="web")


async def test_an_event_after_another_tool_use_leaves_the_question_open(token, owner):
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()
    other = {**AFTER["PostToolUse"], "tool_name": "Read", "tool_input": {"file_path": "/a"}, "tool_use_id": "toolu_9"}

    assert (await asyncio.wait_for(post_hook(token, other), DEADLINE)).json() == {}

    assert (await stored(prompt)).status == "pending"
    await answer(prompt, {"permission": "Allow"}, by=owner, surface="web")
    assert (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


async def test_a_pretooluse_question_closes_on_the_event_with_its_tool_use_id(token):
    asked = {**BASE, **TOOL_USE, "hook_event_name": "PreToolUse"}
    calling = post_hook(token, asked)
    prompt = await asked_prompt()
    # Another hook of the person's rewrote the input: the id still names the same tool use.
    failed = {**AFTER["PostToolUseFailure"], "tool_input": {"command": "rm -rf build/"}}

    assert (await asyncio.wait_for(post_hook(token, failed), DEADLINE)).json() == {}

    assert (await asyncio.wait_for(calling, DEADLINE)).json() == {}
    assert (await stored(prompt)).reason == "decided"


async def test_a_newer_request_closes_the_older_question_and_is_asked_itself(token, owner):
    first = post_hook(token, BASH)
    older = await asked_prompt()

    second = post_hook(token, {**BASH, "tool_input": {"command": "ls"}})

    assert (await asyncio.wait_for(first, DEADLINE)).json() == {}
    assert (await stored(older)).reason == "decided"
    newer = await asked_prompt_besides(older)
    await answer(newer, {"permission": "Allow"}, by=owner, surface="web")
    assert (await asyncio.wait_for(second, DEADLINE)).json()["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


async def test_an_answer_given_before_the_hook_listens_is_the_hooks_answer(token, owner, monkeypatch):
    """The question is on the page once its create commits, a moment before the hook listens for
    its answer; one given in that moment (another tab, a chat app, another process) is not lost."""
    listen = realtime.Hub.listen

    class AnsweredFirst:
        def __init__(self, hub: realtime.Hub, group: str) -> None:
            self.inbox = listen(hub, group)

        async def __aenter__(self) -> realtime.Inbox:
            await answer(await the_prompt(), {"permission": "Allow"}, by=owner, surface="web")
            return await self.inbox.__aenter__()

        async def __aexit__(self, *exc: object) -> None:
            await self.inbox.__aexit__(*exc)

    monkeypatch.setattr(realtime.Hub, "listen", lambda hub, group: AnsweredFirst(hub, group))

    told = await asyncio.wait_for(post_hook(token, BASH), DEADLINE)

    assert told.json()["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


async def asked_prompt_besides(older: Prompt) -> Prompt:
    pending = database_call(lambda: Prompt.objects.filter(status="pending").exclude(pk=older.pk).first())
    loop_end = asyncio.get_running_loop().time() + DEADLINE
    while (found := await pending()) is None:
        assert asyncio.get_running_loop().time() < loop_end, "the newer request was never asked"
        await asyncio.sleep(0.01)
    return found


async def test_a_subagents_request_leaves_the_main_threads_question_open(token):
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()

    subagent = {**BASH, "tool_input": {"command": "ls"}, "agent_id": "a-1", "agent_type": "general-purpose"}
    assert (await asyncio.wait_for(post_hook(token, subagent), DEADLINE)).json() == {}

    assert (await stored(prompt)).status == "pending"
    assert (await asyncio.wait_for(post_hook(token, STOPPED), DEADLINE)).json() == {}
    assert (await asyncio.wait_for(calling, DEADLINE)).json() == {}


async def test_the_web_panel_refuses_a_late_answer_and_shows_decided_at_the_terminal(token, owner):
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()
    await asyncio.wait_for(post_hook(token, AFTER["PostToolUse"]), DEADLINE)
    await asyncio.wait_for(calling, DEADLINE)

    @database_call
    def late_tap_and_page() -> tuple[str, str]:
        browser = Client()
        browser.force_login(owner)
        url = f"/s/{prompt.session.key}/prompts/{prompt.pk}/answer"
        tapped = browser.post(url, {"q-permission": "2"}, headers={"HX-Request": "true"})
        return tapped.content.decode(), browser.get(f"/s/{prompt.session.key}/").content.decode()

    tapped, page = await late_tap_and_page()
    assert "Decided at the terminal at" in tapped and "this answer was not recorded" in tapped
    assert "Decided at the terminal" in page
    assert (await stored(prompt)).reason == "decided"


async def test_decided_at_the_terminal_edits_the_open_telegram_card(linked_telegram, token):
    engine.ensure_running()
    calling = post_hook(token, BASH)
    await asked_prompt()
    [card] = await linked_telegram.arrived("sendMessage")
    assert "reply_markup" in card.body

    await asyncio.wait_for(post_hook(token, AFTER["PostToolUse"]), DEADLINE)

    assert (await asyncio.wait_for(calling, DEADLINE)).json() == {}
    [edited] = await linked_telegram.arrived("editMessageText")
    assert "Decided at the terminal" in edited.body["text"]
    assert "reply_markup" not in edited.body


# --- one alert per question ----------------------------------------------------------------------

PERMISSION_PROMPT = {
    **BASE,
    "hook_event_name": "Notification",
    "notification_type": "permission_prompt",
    "message": "Claude needs your permission to use Bash",
}


async def test_the_agents_permission_alert_alerts_nobody_while_askuser_asks_it(linked_telegram, owner, token):
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()

    assert (await asyncio.wait_for(post_hook(token, PERMISSION_PROMPT), DEADLINE)).json() == {}

    assert await news_rows() == []  # no second alert on any channel
    await answer(prompt, {"permission": "Allow"}, by=owner, surface="web")
    await asyncio.wait_for(calling, DEADLINE)
    assert (await asyncio.wait_for(post_hook(token, PERMISSION_PROMPT), DEADLINE)).json() == {}
    assert len(await news_rows()) == 1  # askuser holds no question now: the alert is the only one


# --- refused before anything is asked -------------------------------------------------------------


async def test_a_hook_past_the_cap_on_waits_is_refused_before_a_prompt_is_made(settings, token, owner):
    settings.ASKUSER_MAX_WAITS_PER_AGENT = 1
    calling = post_hook(token, BASH)
    prompt = await asked_prompt()

    refused = await asyncio.wait_for(post_hook(token, {**BASH, "session_id": "another-conversation"}), DEADLINE)

    assert refused.status_code == 429
    assert await database_call(Prompt.objects.count)() == 1
    await answer(prompt, {"permission": "Allow"}, by=owner, surface="web")
    await asyncio.wait_for(calling, DEADLINE)


# --- the recommended configuration -----------------------------------------------------------------


def test_the_installed_hooks_send_every_event_askuser_asks_or_learns_from():
    """``askuser install claude-code`` (the client) installs each event the server decides
    from, with a ``timeout`` above every ``wait``: a missing one leaves a question open after
    the terminal answered it."""
    block = install.Plan(install.CLAUDE_CODE, "http://127.0.0.1:8000", wait=55, http=True).block()

    assert set(block) >= {*hooks.DECIDING, hooks.NOTIFICATION}
    for name, [entry] in block.items():
        [call] = entry["hooks"]
        waits = float(call["url"].rsplit("wait=", 1)[1])
        assert call["timeout"] > waits, name
