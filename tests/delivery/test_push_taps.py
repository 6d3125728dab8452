"""A notification's buttons: what a prompt's push offers (options a tap may choose, Mute this
session), the tap that answers or mutes with a signed, one-use, owner-bound token and nothing
else, the rule that a coding agent's hook is never allowed from one, and a muted session's pushes.
(The tap in a real service worker: tests/delivery/test_browser_push_taps.py.)"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.core import signing
from django.test import Client

from askuser_app.delivery import engine
from askuser_app.delivery.channels import links
from askuser_app.delivery.channels.chats.core import card
from askuser_app.delivery.channels.email import mails
from askuser_app.delivery.channels.push import adapter as push
from askuser_app.domain import hooks, services
from askuser_app.models import Delivery, PromptEvent, PushSubscription, Session
from tests.conftest import EXTRAS, QUESTION, ask, page

pytestmark = pytest.mark.django_db

PERMISSION = {
    "session_id": "0f3c9a52-7d1e-4c4b-9b7e-2f6a1d0e8c11",
    "cwd": "/home/alice/app",
    "hook_event_name": "PermissionRequest",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf build/", "description": "Clean"},
}
PLAN = {
    **PERMISSION,
    "tool_name": "ExitPlanMode",
    "tool_input": {"plan": "1. Refactor\n2. Test"},
}


@pytest.fixture(autouse=True)
def pushed_at_once(settings):
    """The taps follow a push that is due at once, not after the person's grace period."""
    settings.ASKUSER_PUSH_GRACE = 0


def device(user: Any, name: str = "phone") -> PushSubscription:
    return PushSubscription.objects.create(
        user=user, endpoint=f"https://push.example.com/{name}", p256dh="k", auth="a", device="Chrome on Android"
    )


def pushed(row: PushSubscription, prompt: Any) -> dict[str, Any]:
    """What this device is pushed for the prompt, buttons and all."""
    _row, message = push.ready(row.pk, card(prompt))
    return message


def tap(message: dict[str, Any], action: str, client: Client | None = None) -> Any:
    """The service worker's post of a button's token: JSON, no cookie, no CSRF token."""
    [button] = [b for b in message["actions"] if b["action"] == action]
    return post(button["url"], button["token"], client)


def post(url: str, token: str, client: Client | None = None) -> Any:
    browser = client or Client(enforce_csrf_checks=True)
    return browser.post(url, json.dumps({"token": token}), content_type="application/json")


def hook_prompt(agent: Any, event: dict[str, Any], kind: hooks.Kind) -> Any:
    request = kind.asks(event, 30, hooks.AGENT)
    hook = services.HookAsk(event=event["hook_event_name"], kind=kind.name)
    return services.ask(agent, request, hook=hook).prompt


def answered_events(prompt: Any) -> int:
    return PromptEvent.objects.filter(prompt=prompt, kind="answered").count()


# --- what a push offers ----------------------------------------------------------------------------


def test_a_single_choice_offers_its_options_then_mute(agent, owner):
    message = pushed(device(owner), ask(agent))

    assert [(b["action"], b["title"]) for b in message["actions"]] == [
        ("option-0", "Staging (Recommended)"),
        ("option-1", "Production"),
        ("mute", "Mute this session"),
    ]
    assert message["more"] == "More options in askuser."
    assert (message["requireInteraction"], message["renotify"]) == (False, False)


@pytest.mark.parametrize(
    "questions",
    [(QUESTION, EXTRAS), (EXTRAS,)],
    ids=["several questions", "multi-select"],
)
def test_other_prompts_offer_no_answer_only_mute(agent, owner, questions):
    message = pushed(device(owner), ask(agent, *questions))

    assert [b["action"] for b in message["actions"]] == ["mute"]
    assert message["more"] == ""


def test_a_hook_permission_offers_deny_never_allow_and_stays_until_acted_on(agent, owner):
    prompt = hook_prompt(agent, PERMISSION, hooks.PERMISSION)

    message = pushed(device(owner), prompt)

    assert [(b["action"], b["title"]) for b in message["actions"]] == [
        ("option-1", "Deny"),
        ("mute", "Mute this session"),
    ]
    assert message["requireInteraction"] is True and message["renotify"] is False
    assert message["body"].endswith("To allow it, open askuser.")


def test_a_plan_offers_keep_planning_never_approve(agent, owner):
    prompt = hook_prompt(agent, PLAN, hooks.PLAN)

    message = pushed(device(owner), prompt)

    assert [b["title"] for b in message["actions"]] == ["Keep planning", "Mute this session"]
    assert message["requireInteraction"] is True


def test_an_allow_token_made_anyway_is_refused_and_deny_answers(agent, owner):
    prompt = hook_prompt(agent, PERMISSION, hooks.PERMISSION)
    phone = device(owner)
    allow = links.make(push.ANSWER_SALT, prompt.pk, owner, push.holder(phone), 0)  # signed, but never offered

    refused = post("/push/answer", allow)
    denied = tap(pushed(phone, prompt), "option-1")

    assert refused.status_code == 400 and refused.json()["ok"] is False
    assert denied.status_code == 200
    prompt.refresh_from_db()
    assert prompt.result["answers"] == {"answers": {hooks.QUESTION_ID: [hooks.DENY]}}
    assert hooks.said(prompt.result).allow is False


def test_a_mail_of_a_hook_links_no_option_and_its_deny_is_the_same_rule(agent, owner):
    # One rule for every signed link: a hook's mail links no option (it cannot link all), and the
    # one a tap may choose is the refusal.
    owner.email = "alice@example.com"
    owner.save()
    prompt = hook_prompt(agent, PERMISSION, hooks.PERMISSION)
    questions = services.questions_of(prompt)

    assert links.choosable(prompt, questions) == (1,)
    assert not mails.one_tap(prompt, questions)
    assert mails.one_tap(ask(agent, session="support-43"), services.questions_of(ask(agent, session="support-44")))


# --- a tap answers ---------------------------------------------------------------------------------


def test_a_tap_answers_as_its_owner_from_a_notification_once(agent, owner, api):
    prompt = ask(agent)
    message = pushed(device(owner), prompt)

    first = tap(message, "option-1")
    second = tap(message, "option-1")

    assert first.status_code == 200
    assert first.json() == {"ok": True, "message": "Answered: Production — by alice from a notification"}
    result = api.get(f"/prompts/{prompt.pk}").json()
    assert (result["status"], result["surface"], result["resolved_by"]) == ("answered", "push", "alice")
    assert result["answers"] == {"answers": {"deploy_target": ["Production"]}}
    assert second.status_code == 409 and second.json()["ok"] is False
    assert second.json()["message"].startswith("This prompt was already answered from a notification by alice")
    assert answered_events(prompt) == 1


def test_a_tap_on_a_prompt_resolved_elsewhere_is_refused(agent, owner):
    prompt = ask(agent)
    message = pushed(device(owner), prompt)
    services.answer(prompt, {"deploy_target": "Staging (Recommended)"}, by=owner, surface="web")

    response = tap(message, "option-1")

    assert response.status_code == 409
    assert response.json()["message"].startswith("This prompt was already answered on the web by alice")
    prompt.refresh_from_db()
    assert prompt.surface == "web" and answered_events(prompt) == 1


def test_tokens_of_another_person_device_or_signer_and_tampered_ones_are_refused(agent, owner, other_user):
    prompt = ask(agent)
    phone, theirs = device(owner), device(other_user, "theirs")
    good = tap_token(pushed(phone, prompt), "option-1")
    forged = {
        "another person's": (links.make(push.ANSWER_SALT, prompt.pk, other_user, push.holder(theirs), 1), 403),
        "another person's device": (links.make(push.ANSWER_SALT, prompt.pk, owner, push.holder(theirs), 1), 403),
        "no such option": (links.make(push.ANSWER_SALT, prompt.pk, owner, push.holder(phone), 7), 400),
        "another prompt": (links.make(push.ANSWER_SALT, uuid.uuid4(), owner, push.holder(phone), 1), 404),
        "tampered": (good[:-3] + ("aaa" if not good.endswith("aaa") else "bbb"), 400),
        "a mute's": (links.make(push.MUTE_SALT, prompt.pk, owner, push.holder(phone), 1), 400),
        "a mail's": (mails.make_token(prompt.pk, owner, 1), 400),
        "unsalted": (signing.dumps([prompt.pk.hex, owner.pk, push.holder(phone), 1]), 400),
        "garbage": ("not-a-token", 400),
    }
    for name, (token, status) in forged.items():
        response = post("/push/answer", token)
        assert response.status_code == status, (name, response.status_code)
        assert response.json()["ok"] is False and response.json()["message"], name
    prompt.refresh_from_db()
    assert prompt.is_pending and answered_events(prompt) == 0


def tap_token(message: dict[str, Any], action: str) -> str:
    [button] = [b for b in message["actions"] if b["action"] == action]
    return str(button["token"])


def test_a_removed_device_answers_nothing(agent, owner):
    prompt = ask(agent)
    phone = device(owner)
    message = pushed(phone, prompt)
    phone.delete()

    response = tap(message, "option-0")

    assert response.status_code == 403
    assert response.json()["message"] == "This notification is not for this device any more. Open askuser to answer."
    prompt.refresh_from_db()
    assert prompt.is_pending


def test_an_old_token_has_expired(agent, owner, monkeypatch):
    prompt = ask(agent)
    message = pushed(device(owner), prompt)
    monkeypatch.setattr(links, "TOKEN_MARGIN", -links.max_age())

    response = tap(message, "option-0")

    assert response.status_code == 410 and "expired" in response.json()["message"]


def test_only_a_post_is_taken_and_only_there_without_csrf(agent, owner):
    prompt = ask(agent)
    token = tap_token(pushed(device(owner), prompt), "option-0")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)

    assert browser.get("/push/answer", {"token": token}).status_code == 405
    assert browser.post("/s/support-42/mute", {"muted": "1"}).status_code == 403  # the page's switch keeps CSRF
    assert post("/push/answer", token, browser).status_code == 200


def test_with_push_turned_off_a_tap_says_so(agent, owner, settings):
    prompt = ask(agent)
    token = tap_token(pushed(device(owner), prompt), "option-0")
    settings.ASKUSER_PUSH = False

    response = post("/push/answer", token)

    assert response.status_code == 404
    prompt.refresh_from_db()
    assert prompt.is_pending


# --- mute ------------------------------------------------------------------------------------------


def push_rows(session_key: str) -> int:
    return Delivery.objects.filter(channel="push", prompt__session__key=session_key).count()


def test_mute_from_a_notification_stops_that_sessions_pushes_only(agent, owner):
    device(owner)
    prompt = ask(agent)
    message = pushed(PushSubscription.objects.get(), prompt)

    muted = tap(message, "mute")
    again = tap(message, "mute")

    assert muted.status_code == 200 and "No more notifications from support-42" in muted.json()["message"]
    assert again.status_code == 409 and again.json()["message"] == "support-42 is muted already."
    services.skip_all(prompt, by=owner, surface="web")
    ask(agent)
    ask(agent, session="support-43")
    assert push_rows("support-42") == 1  # the first prompt's, from before the mute
    assert push_rows("support-43") == 1


def test_a_push_waiting_when_its_session_is_muted_is_dropped(agent, owner):
    device(owner)
    prompt = ask(agent)  # no loop runs: its push waits
    session = Session.objects.get(key="support-42")

    services.mute_session(session, by=owner)

    assert engine.claim_due(8) == []
    row = Delivery.objects.get(prompt=prompt, channel="push")
    assert row.state == "dropped" and "muted" in row.last_error


def test_the_session_page_mutes_and_unmutes(agent, owner, other_user):
    device(owner)
    ask(agent)
    browser = Client()
    browser.force_login(owner)
    stranger = Client()
    stranger.force_login(other_user)

    shown = page(browser.get("/s/support-42/"))
    muted = browser.post("/s/support-42/mute", {"muted": "1"}, headers={"HX-Request": "true"})
    not_theirs = stranger.post("/s/support-42/mute", {"muted": "0"})

    assert "Mute notifications" in shown
    assert muted.status_code == 200 and "Notifications muted" in muted.content.decode()
    assert not_theirs.status_code == 404
    assert Session.objects.get(key="support-42").muted_at is not None
    services.skip_all(services.prompt_for_owner(owner.pk, pending_id()), by=owner, surface="web")
    ask(agent)
    assert push_rows("support-42") == 1  # muted: the second prompt pushed nothing

    unmuted = browser.post("/s/support-42/mute", {"muted": "0"})

    assert unmuted.status_code == 302
    assert "Mute notifications" in page(browser.get("/s/support-42/"))
    services.skip_all(services.prompt_for_owner(owner.pk, pending_id()), by=owner, surface="web")
    ask(agent)
    assert push_rows("support-42") == 2


def pending_id() -> str:
    return str(Session.objects.get(key="support-42").prompts.get(status="pending").pk)


def test_without_a_channel_that_heeds_it_the_page_has_no_mute(agent, owner, settings):
    settings.ASKUSER_PUSH = False
    ask(agent)
    browser = Client()
    browser.force_login(owner)

    assert "session-mute" not in page(browser.get("/s/support-42/"))
