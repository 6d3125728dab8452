"""SPEC 4.5: a coding agent's hook events posted to /api/v1/hooks get the hook output back,
through the ASGI app production serves."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import Client

from askuser_app.delivery import engine
from askuser_app.delivery.chats import core
from askuser_app.delivery.chats.telegram import SECRET_HEADER
from askuser_app.delivery.notifiers.email import mails
from askuser_app.domain import hooks, prefs, services
from askuser_app.models import Delivery, Message, Prompt
from askuser_app.runtime import realtime
from askuser_app.runtime.asyncdb import database_call
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
        {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "rm -rf build/"}], "behavior": "allow"}
    ],
}


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
    assert question.detail == "rm -rf build/ && echo '<script>alert(1)</script>'"
    assert [o.label for o in question.options.all()] == ["Allow", "Deny", "Allow and don't ask again"]
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


async def test_a_pretooluse_gets_a_permission_decision_or_ask(token, owner):
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
    unanswered = (await asyncio.wait_for(post_hook(token, event, wait=0.1), DEADLINE)).json()
    assert unanswered["hookSpecificOutput"]["permissionDecision"] == "ask"


async def test_a_second_request_while_one_is_pending_goes_to_the_terminal_at_once(token, owner):
    first = post_hook(token, BASH)
    prompt = await asked_prompt()

    second = await asyncio.wait_for(post_hook(token, {**BASH, "tool_input": {"command": "ls"}}), DEADLINE)

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
