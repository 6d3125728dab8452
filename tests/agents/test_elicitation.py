"""SPEC 4.5: an MCP server's request for input (Claude Code's ``Elicitation`` hook) is a prompt:
a form's fields as questions whose typed answers are checked before anything is recorded,
a link to open with Done or Decline; answered ``accept`` with ``content``, or ``decline``."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import Client

from askuser_app.delivery.channels.chats import core
from askuser_app.domain import services, textreply
from askuser_app.models import Answer, Delivery, Prompt, PromptEvent
from askuser_app.runtime import realtime
from askuser_app.runtime.asyncdb import database_call
from tests.chatfake import CHAT, SECRET, TOKEN, FakeTelegram
from tests.conftest import asgi_request

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 10
BASE = {
    "session_id": "7d1c2e7a-1d2b-4c11-9a3e-0b6f7f4d2e10",
    "transcript_path": "/home/alice/.claude/projects/x.jsonl",
    "cwd": "/home/alice/app",
}
FORM = {
    **BASE,
    "hook_event_name": "Elicitation",
    "mcp_server_name": "billing",
    "message": "Which plan should the new workspace get?",
    "mode": "form",
    "requested_schema": {
        "type": "object",
        "properties": {
            "plan": {
                "type": "string",
                "title": "Plan",
                "oneOf": [{"const": "free", "title": "Free"}, {"const": "pro", "title": "Pro <b>"}],
            },
            "seats": {"type": "integer", "title": "Seats", "minimum": 1, "maximum": 50},
            "invoiceEmail": {"type": "string", "title": "Invoice email", "format": "email"},
        },
        "required": ["plan", "seats"],
    },
}
URL = {
    **BASE,
    "hook_event_name": "Elicitation",
    "mcp_server_name": "github",
    "message": "Sign in to GitHub to continue.",
    "mode": "url",
    "url": "https://github.com/login/device?code=<x>",
    "elicitation_id": "e-42",
}


def post_hook(token: str, event: dict, wait: float = 30) -> asyncio.Future:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    body = json.dumps(event).encode()
    return asyncio.ensure_future(asgi_request("POST", f"/api/v1/hooks?wait={wait}", content=body, headers=headers))


@database_call
def the_prompt() -> Prompt | None:
    return Prompt.objects.select_related("session").prefetch_related("questions__options").first()


async def asked_prompt() -> Prompt:
    """The hook's prompt, once the hook call waits on it."""
    end = asyncio.get_running_loop().time() + DEADLINE
    while True:
        prompt = await the_prompt()
        if prompt is not None and realtime.hub().inboxes.get(realtime.prompt_group(prompt.pk)):
            return prompt
        assert asyncio.get_running_loop().time() < end, "the hook never parked"
        await asyncio.sleep(0.01)


@database_call
def submit_in_panel(owner, prompt: Prompt, form: dict) -> tuple[int, str]:
    """The panel's Submit (or Skip all), as the browser's htmx posts it."""
    browser = Client()
    browser.force_login(owner)
    url = f"/s/{prompt.session.key}/prompts/{prompt.pk}/answer"
    sent = browser.post(url, form, headers={"HX-Request": "true"})
    return sent.status_code, sent.content.decode()


@database_call
def recorded(prompt: Prompt) -> tuple[str, int, list[str]]:
    events = list(PromptEvent.objects.filter(prompt=prompt).values_list("kind", flat=True))
    return Prompt.objects.get(pk=prompt.pk).status, Answer.objects.filter(question__prompt=prompt).count(), events


async def test_a_forms_fields_become_questions_with_the_server_and_its_message_shown(token, owner):
    calling = post_hook(token, FORM)
    prompt = await asked_prompt()

    plan, seats, email = prompt.questions.all()
    assert (plan.key, plan.text, [o.label for o in plan.options.all()]) == ("plan", "Plan", ["Free", "Pro <b>"])
    assert plan.detail == "billing asks: Which plan should the new workspace get?"
    assert (seats.key, seats.text, list(seats.options.all())) == ("seats", "Seats", [])
    assert seats.detail.endswith("A whole number, at least 1, at most 50")
    assert (email.key, email.text) == ("invoice_email", "Invoice email (optional)")
    assert email.detail.endswith("An email address")
    assert prompt.session.title == "Claude Code · app"
    await database_call(services.skip_all)(prompt, by=owner, surface="web")
    await asyncio.wait_for(calling, DEADLINE)


async def test_answered_in_the_panel_the_server_gets_accept_with_typed_content(token, owner):
    calling = post_hook(token, FORM)
    prompt = await asked_prompt()

    status, _ = await submit_in_panel(
        owner, prompt, {"q-plan": "1", "q-seats-other": "12", "q-invoice_email-other": ""}
    )

    assert status == 200
    assert (await asyncio.wait_for(calling, DEADLINE)).json() == {
        "hookSpecificOutput": {
            "hookEventName": "Elicitation",
            "action": "accept",
            "content": {"plan": "pro", "seats": 12},
        }
    }


async def test_a_yes_no_field_is_answered_as_a_boolean(token, owner):
    form = {**FORM, "requested_schema": {"type": "object", "properties": {"ok": {"type": "boolean", "title": "Go?"}}}}
    calling = post_hook(token, form)
    prompt = await asked_prompt()
    [question] = prompt.questions.all()
    assert [o.label for o in question.options.all()] == ["Yes", "No"]

    await submit_in_panel(owner, prompt, {"q-ok": "1"})

    output = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]
    assert output == {"hookEventName": "Elicitation", "action": "accept", "content": {"ok": False}}


@pytest.mark.parametrize(
    ("form", "said"),
    [
        ({"q-plan": "0", "q-seats-other": "500"}, "Seats: type a number of at most 50."),
        ({"q-plan": "0", "q-seats-other": "2.5"}, "Seats: type a whole number, like 42."),
        (
            {"q-plan": "0", "q-seats-other": "3", "q-invoice_email-other": "bob at home"},
            "Invoice emai: type an email address, like name@example.com.",
        ),
        ({"q-plan": "0"}, "Seats: this question needs an answer (or skip them all)."),
        ({"q-plan-other": "enterprise", "q-seats-other": "3"}, "Plan: choose one of: Free, Pro &lt;b&gt;."),
    ],
)
async def test_an_answer_that_breaks_the_fields_limits_is_refused_and_nothing_is_recorded(token, owner, form, said):
    calling = post_hook(token, FORM)
    prompt = await asked_prompt()

    status, shown = await submit_in_panel(owner, prompt, form)

    assert status == 422
    assert said in shown
    assert await recorded(prompt) == ("pending", 0, ["created"])
    await submit_in_panel(owner, prompt, {"q-plan": "0", "q-seats-other": "3"})  # a good answer still counts
    content = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["content"]
    assert content == {"plan": "free", "seats": 3}


async def test_a_text_reply_answers_a_form_by_field_and_its_limits_hold_there_too(token, owner):
    calling = post_hook(token, FORM)
    prompt = await asked_prompt()
    post = database_call(services.post_user_message)

    refused = await post(prompt.session, owner, "plan: Pro <b>\nseats: 0\ninvoice_email: ana@example.com")
    assert refused.note.text == "Seats: type a number of at least 1."
    assert (await recorded(prompt))[:2] == ("pending", 0)
    await post(prompt.session, owner, "plan: free\nseats: 7\ninvoice_email: ana@example.com")

    content = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["content"]
    assert content == {"plan": "free", "seats": 7, "invoiceEmail": "ana@example.com"}


async def test_skip_all_declines_the_form(token, owner):
    calling = post_hook(token, FORM)
    prompt = await asked_prompt()

    await submit_in_panel(owner, prompt, {"action": "skip_all"})

    output = (await asyncio.wait_for(calling, DEADLINE)).json()
    assert output == {"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "decline"}}


async def test_no_answer_within_the_wait_returns_nothing_so_the_terminal_asks(token):
    response = await asyncio.wait_for(post_hook(token, FORM, wait=0.2), DEADLINE)

    assert response.json() == {}
    assert (await the_prompt()).reason == "terminal"


async def test_a_link_to_open_is_shown_with_its_server_and_done_accepts_it(token, owner):
    calling = post_hook(token, URL)
    prompt = await asked_prompt()

    [question] = prompt.questions.all()
    assert (question.header, question.text) == ("github", "github asks you to open a link.")
    assert question.detail == "Sign in to GitHub to continue.\n\nhttps://github.com/login/device?code=<x>"
    assert [o.label for o in question.options.all()] == ["Done", "Decline"]
    status, shown = await submit_in_panel(owner, prompt, {"q-link-other": "maybe later"})
    assert status == 422 and "github: choose one of: Done, Decline." in shown

    await submit_in_panel(owner, prompt, {"q-link": "0"})

    output = (await asyncio.wait_for(calling, DEADLINE)).json()
    assert output == {"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept"}}


async def test_decline_on_a_link_declines(token, owner):
    calling = post_hook(token, URL)
    prompt = await asked_prompt()

    await submit_in_panel(owner, prompt, {"q-link": "1"})

    output = (await asyncio.wait_for(calling, DEADLINE)).json()
    assert output == {"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "decline"}}


async def test_a_form_askuser_cannot_show_is_refused_with_the_field_named_and_nothing_asked(token):
    nested = {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}

    response = await asyncio.wait_for(post_hook(token, {**FORM, "requested_schema": nested}), DEADLINE)

    assert response.status_code == 422
    assert response.json()["detail"] == (
        'requested_schema.properties.address: askuser cannot ask for a field of type "object".'
    )
    assert await the_prompt() is None


async def test_the_elicitation_result_at_the_terminal_closes_the_question(token, owner):
    calling = post_hook(token, URL)
    prompt = await asked_prompt()
    result = {**BASE, "hook_event_name": "ElicitationResult", "mcp_server_name": "github", "elicitation_id": "e-42"}

    assert (
        await asyncio.wait_for(post_hook(token, {**result, "action": "accept", "mode": "url"}), DEADLINE)
    ).json() == {}

    assert (await asyncio.wait_for(calling, DEADLINE)).json() == {}
    assert (await recorded(prompt))[0] == "no_answer"
    assert (await the_prompt()).reason == "decided"


@pytest.fixture
def linked_telegram(settings, fake_api, owner) -> FakeTelegram:
    settings.TELEGRAM_BOT_TOKEN = TOKEN
    settings.TELEGRAM_WEBHOOK_SECRET = SECRET
    settings.TELEGRAM_API_URL = fake_api.url
    settings.ASKUSER_PUBLIC_URL = "https://askuser.example.com"
    core.link_by_hand(owner, "telegram", str(CHAT), chat_id=str(CHAT), handle="@alice")
    return FakeTelegram(fake_api)


async def test_the_agents_own_elicitation_alert_alerts_nobody_while_askuser_asks_it(linked_telegram, owner, token):
    calling = post_hook(token, FORM)
    prompt = await asked_prompt()
    alert = {**BASE, "hook_event_name": "Notification", "notification_type": "elicitation_dialog", "message": "x"}

    assert (await asyncio.wait_for(post_hook(token, alert), DEADLINE)).json() == {}

    assert await database_call(lambda: list(Delivery.objects.filter(prompt=None)))() == []
    await database_call(services.skip_all)(prompt, by=owner, surface="web")
    await asyncio.wait_for(calling, DEADLINE)


async def test_a_form_of_typed_fields_reads_as_text_with_no_options_to_number(token, owner):
    fields = {"name": {"type": "string", "title": "Name"}, "seats": {"type": "integer", "title": "Seats"}}
    calling = post_hook(token, {**FORM, "requested_schema": {"type": "object", "properties": fields}})
    prompt = await asked_prompt()

    rendered = await database_call(
        lambda: textreply.render_prompt([textreply.TextQuestion.of(q) for q in services.questions_of(prompt)])
    )()
    half = await database_call(services.post_user_message)(prompt.session, owner, "Ana")

    assert rendered.count("   Reply with your answer") == 2 and "   1. " not in rendered, rendered
    assert "“name: your answer”" in half.note.text
    await database_call(services.post_user_message)(prompt.session, owner, "name: Ana\nseats: 3")
    content = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["content"]
    assert content == {"name": "Ana", "seats": 3}
