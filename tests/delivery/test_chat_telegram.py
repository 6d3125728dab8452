"""Telegram end to end: python-telegram-bot pointed at a local fake Bot API (TELEGRAM_API_URL),
real webhook requests with the secret header, the agent's wait, the delivery engine."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import logging.handlers
import threading
from datetime import timedelta
from io import StringIO

import httpx
import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from askuser_app.delivery import engine
from askuser_app.delivery.channels.chats import core
from askuser_app.delivery.channels.telegram.adapter import SECRET_HEADER, adapter
from askuser_app.domain import services
from askuser_app.models import ChatLink, Delivery, DeliveryAttempt, LinkCode, Prompt, SeenEvent
from askuser_app.runtime.asyncdb import database_call
from tests.chatfake import CHAT, DEADLINE, SECRET, TOKEN, FakeTelegram, tap_update, text_update
from tests.conftest import EXTRAS, QUESTION, asgi_get, asgi_request, auth, payload, until_async, until_sync
from tests.servers import DaphneServer


@pytest.fixture
def telegram(settings, fake_api, served_loops):
    settings.TELEGRAM_BOT_TOKEN = TOKEN
    settings.TELEGRAM_WEBHOOK_SECRET = SECRET
    settings.TELEGRAM_API_URL = fake_api.url
    settings.ASKUSER_PUBLIC_URL = "https://askuser.example.com"
    settings.ASKUSER_CHAT_RETRY_BASE = 0.05
    return FakeTelegram(fake_api)


@pytest.fixture
def linked(owner):
    return core.link_by_hand(owner, "telegram", str(CHAT), chat_id=str(CHAT), handle="@alice")


async def create(token: str, *questions, session: str = "support-42") -> str:
    request = asgi_request("POST", "/api/v1/prompts", json=payload(*questions, session=session), headers=auth(token))
    response = await asyncio.wait_for(request, DEADLINE)
    assert response.status_code == 201, response.content
    return response.json()["id"]


def wait(token: str, prompt_id: str) -> asyncio.Future:
    return asyncio.ensure_future(asgi_get(f"/api/v1/prompts/{prompt_id}?wait=30", auth(token)))


async def post_update(update: dict, *, secret: str = SECRET, raw: bytes | None = None):
    body = raw if raw is not None else json.dumps(update).encode()
    headers = {SECRET_HEADER: secret, "Content-Type": "application/json"}
    request = asgi_request("POST", "/chat/telegram/webhook", content=body, headers=headers)
    return await asyncio.wait_for(request, DEADLINE)  # a stuck handler fails the test, never hangs it


@database_call
def prompt_of(prompt_id: str) -> Prompt:
    return Prompt.objects.get(pk=prompt_id)


@database_call
def rows(prompt_id: str) -> list[Delivery]:
    return list(Delivery.objects.filter(prompt_id=prompt_id).order_by("id"))


pytestmark = pytest.mark.django_db(transaction=True)


# --- end to end --------------------------------------------------------------------------------


async def test_a_tap_answers_the_waiting_agent_and_the_message_loses_its_buttons(telegram, linked, token):
    prompt_id = await create(token)
    hexid = prompt_id.replace("-", "")

    [sent] = await telegram.arrived("sendMessage")
    assert sent.body["chat_id"] == str(CHAT) and "parse_mode" not in sent.body
    assert sent.body["text"] == (
        "Deploy\n\nWhere should this release go first?\n\n• Staging (Recommended) — Safe, reversible\n"
        f"• Production\n\nOpen in askuser: https://askuser.example.com/p/{prompt_id}/"
    )
    assert sent.field("reply_markup") == {
        "inline_keyboard": [
            [{"text": "Staging (Recommended)", "callback_data": f"o:{hexid}:0"}],
            [{"text": "Production", "callback_data": f"o:{hexid}:1"}],
            [{"text": "Other…", "callback_data": f"x:{hexid}"}, {"text": "Skip", "callback_data": f"s:{hexid}"}],
        ]
    }
    row = await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="sent").first())
    assert row.ref == {"chat_id": CHAT, "message_id": 500}

    waiting = wait(token, prompt_id)
    response = await post_update(tap_update(1, 500, f"o:{hexid}:1"))

    assert response.status_code == 200
    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert {k: result[k] for k in ("status", "answers", "surface", "resolved_by")} == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
        "surface": "telegram",
        "resolved_by": "alice",
    }
    [notice] = telegram.calls("answerCallbackQuery")
    assert notice.body == {"callback_query_id": "cb-1", "text": "Answered: Production — by alice on Telegram"}
    [edit] = await telegram.arrived("editMessageText")
    assert (edit.body["chat_id"], edit.body["message_id"]) == (str(CHAT), "500")
    assert "reply_markup" not in edit.body  # the keyboard is gone
    assert edit.body["text"].endswith(
        f"• Production\n\nAnswered: Production — by alice on Telegram\nOpen in askuser: https://askuser.example.com/p/{prompt_id}/"
    )
    assert "parse_mode" not in edit.body
    await deliveries_settle(prompt_id)
    assert [r.state for r in await rows(prompt_id)] == ["closed"]


async def deliveries_settle(prompt_id: str) -> None:
    """Until the prompt's messages are all closed, failed or dropped."""
    live = Delivery.objects.filter(prompt_id=prompt_id, state__in=["to_send", "to_edit", "sent"])
    await until_async(lambda: None if live.exists() else True)


async def test_other_asks_with_force_reply_and_the_reply_is_the_free_text_answer(telegram, linked, token):
    prompt_id = await create(token)
    hexid = prompt_id.replace("-", "")
    await telegram.arrived("sendMessage")

    await post_update(tap_update(1, 500, f"x:{hexid}"))
    [_card, ask] = await telegram.arrived("sendMessage", 2)
    assert ask.body["text"] == "Type your own answer to “Deploy”."
    assert ask.field("reply_markup") == {"force_reply": True, "input_field_placeholder": "Your answer to Deploy"}
    assert (await prompt_of(prompt_id)).is_pending

    waiting = wait(token, prompt_id)
    await post_update(text_update(2, "2", reply_to=501))  # an own answer, even when it looks like an option number

    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert result["answers"] == {"answers": {"deploy_target": ["2"]}}
    assert result["details"]["deploy_target"]["free_text"] == "2" and result["surface"] == "telegram"
    [edit] = await telegram.arrived("editMessageText")
    assert "Answered: own answer — by alice on Telegram" in edit.body["text"]
    await deliveries_settle(prompt_id)


async def test_skip_skips_and_the_agent_hears_no_answer(telegram, linked, token):
    prompt_id = await create(token)
    await telegram.arrived("sendMessage")
    waiting = wait(token, prompt_id)

    await post_update(tap_update(1, 500, f"s:{prompt_id.replace('-', '')}"))

    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert (result["status"], result["reason"], result["surface"], result["resolved_by"]) == (
        "no_answer",
        "skipped",
        "telegram",
        "alice",
    )
    [edit] = await telegram.arrived("editMessageText")
    assert "Skipped on Telegram by alice" in edit.body["text"]
    await deliveries_settle(prompt_id)


async def test_a_multi_question_prompt_is_text_answered_by_a_plain_message(telegram, linked, token):
    prompt_id = await create(token, QUESTION, EXTRAS)
    [sent] = await telegram.arrived("sendMessage")
    assert "1. Deploy (deploy_target): Where should this release go first?" in sent.body["text"]
    assert "Reply with one line per question" in sent.body["text"]
    assert sent.field("reply_markup") == {
        "inline_keyboard": [[{"text": "Skip all", "callback_data": f"s:{prompt_id.replace('-', '')}"}]]
    }
    waiting = wait(token, prompt_id)

    await post_update(text_update(1, "Production\nDocs, Blog post"))

    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert result["answers"] == {"answers": {"deploy_target": ["Production"], "extras": ["Docs", "Blog post"]}}
    [edit] = await telegram.arrived("editMessageText")
    assert "Answered: Deploy: Production; Extras: Docs, Blog post — by alice on Telegram" in edit.body["text"]
    assert "Reply with" not in edit.body["text"]
    await deliveries_settle(prompt_id)


async def test_an_unreadable_reply_leaves_the_prompt_pending_and_the_bot_says_what_is_missing(telegram, linked, token):
    prompt_id = await create(token, QUESTION, EXTRAS)
    await telegram.arrived("sendMessage")

    await post_update(text_update(1, "extras: Docs", reply_to=500))

    [_, answer] = await telegram.arrived("sendMessage", 2)
    assert answer.body["chat_id"] == str(CHAT) and answer.body["text"].startswith(
        "Your reply did not answer 1. Deploy."
    )
    assert (await prompt_of(prompt_id)).is_pending


async def test_a_strangers_tap_is_refused_and_changes_nothing(telegram, linked, token):
    prompt_id = await create(token)
    await telegram.arrived("sendMessage")

    response = await post_update(tap_update(1, 500, f"o:{prompt_id.replace('-', '')}:0", user_id=777, chat=-100))

    assert response.status_code == 200
    [notice] = telegram.calls("answerCallbackQuery")
    assert notice.body["text"] == "This question is not yours."
    assert (await prompt_of(prompt_id)).is_pending


async def test_a_stale_tap_after_a_web_answer_gets_a_short_notice(telegram, linked, token, owner):
    prompt_id = await create(token)
    await telegram.arrived("sendMessage")
    await database_call(services.answer)(
        await prompt_of(prompt_id), {"deploy_target": "Staging (Recommended)"}, by=owner, surface="web"
    )
    [edit] = await telegram.arrived("editMessageText")
    assert "Answered: Staging (Recommended) — by alice on the web" in edit.body["text"]

    await post_update(tap_update(1, 500, f"o:{prompt_id.replace('-', '')}:1"))

    [notice] = telegram.calls("answerCallbackQuery")
    assert notice.body["text"].startswith("This prompt was already answered on the web by alice at ")
    prompt = await prompt_of(prompt_id)
    assert prompt.result["answers"] == {"answers": {"deploy_target": ["Staging (Recommended)"]}}
    await deliveries_settle(prompt_id)


async def test_a_replayed_update_is_handled_once(telegram, linked, token, other_user):
    prompt_id = await create(token)
    await telegram.arrived("sendMessage")
    update = tap_update(7, 500, f"s:{prompt_id.replace('-', '')}")

    first, again = await post_update(update), await post_update(update)

    assert first.status_code == again.status_code == 200
    assert len(telegram.calls("answerCallbackQuery")) == 1
    prompt = await prompt_of(prompt_id)
    assert await database_call(prompt.events.filter(kind="skipped").count)() == 1
    await deliveries_settle(prompt_id)


@pytest.mark.parametrize("secret", ["", "wrong", SECRET + "x"])
async def test_a_wrong_secret_is_refused_before_anything_is_read(telegram, linked, token, secret):
    prompt_id = await create(token)
    await telegram.arrived("sendMessage")

    response = await post_update(tap_update(1, 500, f"s:{prompt_id.replace('-', '')}"), secret=secret)

    assert response.status_code == 401
    assert (await prompt_of(prompt_id)).is_pending
    assert telegram.calls("answerCallbackQuery") == []
    assert not await database_call(SeenEvent.objects.exists)()


async def test_the_api_down_for_a_while_loses_nothing_and_the_edit_follows_the_send(telegram, linked, token, owner):
    telegram.fake.down(503)
    prompt_id = await create(token)
    await telegram.arrived("sendMessage", 3)  # retried, with backoff

    telegram.hold.clear()  # the send that gets through is held in flight…
    telegram.fake.up()
    assert await asyncio.to_thread(telegram.held.wait, DEADLINE)
    await database_call(services.answer)(
        await prompt_of(prompt_id), {"deploy_target": "Production"}, by=owner, surface="web"
    )  # …while the prompt is answered on the web
    telegram.hold.set()

    [edit] = await telegram.arrived("editMessageText")
    sent = telegram.calls("sendMessage")
    assert sent[-1].body["text"].startswith("Deploy\n")  # the pending message went out once it could…
    assert edit.body["message_id"] == "500"  # …and its edit came after, to that message
    assert telegram.fake.calls.index(edit) > telegram.fake.calls.index(sent[-1])
    await deliveries_settle(prompt_id)
    tries = await database_call(lambda: list(DeliveryAttempt.objects.values_list("action", "ok", "error")))()
    assert [t[:2] for t in tries][-2:] == [("send", True), ("edit", True)]
    assert all(not ok and "Telegram could not be reached" in error for _, ok, error in tries[:-2])
    assert len(tries) >= 5


async def test_a_send_refused_for_good_is_failed_and_shown_on_the_page(telegram, linked, token, owner):
    telegram.fake.route(
        "POST",
        telegram.path("sendMessage"),
        lambda call: (403, {"ok": False, "error_code": 403, "description": "Forbidden: bot was blocked by the user"}),
    )
    prompt_id = await create(token)
    await telegram.arrived("sendMessage")
    await deliveries_settle(prompt_id)

    [row] = await rows(prompt_id)
    assert (row.state, row.attempts) == ("failed", 1)
    assert row.last_error == "Forbidden: Forbidden: bot was blocked by the user"

    def page() -> str:
        browser = Client()
        browser.force_login(owner)
        return browser.get("/s/support-42/").content.decode()

    assert "This question could not be sent to Telegram" in await database_call(page)()


async def test_a_message_recorded_while_no_loop_ran_is_sent_once_one_runs(telegram, linked, agent):
    from askuser_app.domain import contract

    prompt = await database_call(services.ask)(agent, contract.parse_create(payload()))
    assert [r.state for r in await rows(prompt.prompt.pk)] == ["to_send"]

    engine.ensure_running()

    [sent] = await telegram.arrived("sendMessage")
    assert sent.body["chat_id"] == str(CHAT)
    await until_async(lambda: Delivery.objects.filter(prompt=prompt.prompt, state="sent").first())


# --- linking -------------------------------------------------------------------------------------


async def test_start_with_a_code_links_and_stop_unlinks(telegram, owner):
    code = await database_call(core.new_code)(owner, "telegram")

    await post_update(text_update(1, f"/start {code}", user_id=555, chat=555))
    [linked_notice] = await telegram.arrived("sendMessage")
    link = await database_call(ChatLink.objects.select_related("user").get)()

    await post_update(text_update(2, f"/start {code}", user_id=556, chat=556))  # the code again
    [_, reused] = await telegram.arrived("sendMessage", 2)
    await post_update(text_update(3, "/stop", user_id=555, chat=555))
    [*_, stopped] = await telegram.arrived("sendMessage", 3)

    assert linked_notice.body["text"] == "Linked to askuser as alice: questions for you will arrive here."
    assert (link.user, link.external_id, link.chat_id, link.handle) == (owner, "555", "555", "@alice")
    assert reused.body["text"].startswith("This code is not valid or has expired.")
    assert stopped.body["text"] == "Unlinked: askuser will send no more questions here."
    assert not await database_call(ChatLink.objects.exists)()


async def test_an_expired_code_links_nothing(telegram, owner):
    code = await database_call(core.new_code)(owner, "telegram")
    await database_call(LinkCode.objects.filter(code=code).update)(expires_at=timezone.now() - timedelta(seconds=1))

    await post_update(text_update(1, f"/start {code}", user_id=555, chat=555))

    [notice] = await telegram.arrived("sendMessage")
    assert notice.body["text"].startswith("This code is not valid or has expired.")
    assert not await database_call(ChatLink.objects.exists)()


# --- bad input ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"\xff\xfe not utf-8", 400),
        (b"{not json", 400),
        (b"[1, 2]", 400),
        (b'{"update_id": "one"}', 400),
        (b'{"update_id": 1, "callback_query": {"id": "x"}}', 400),  # not a callback query FakeTelegram would send
        (b" " * (300 * 1024), 413),
    ],
)
async def test_a_bad_body_gets_a_clear_error_and_nothing_is_stored(telegram, raw, status):
    response = await post_update({}, raw=raw)

    assert response.status_code == status
    assert not await database_call(SeenEvent.objects.exists)()


async def test_an_update_of_another_kind_is_a_silent_200(telegram):
    response = await post_update({"update_id": 3, "edited_message": text_update(3, "x")["message"]})

    assert response.status_code == 200 and telegram.fake.calls == []


async def test_the_endpoint_is_absent_while_telegram_is_off(settings):
    settings.TELEGRAM_BOT_TOKEN = ""

    assert (await post_update(tap_update(1, 1, "s:00"))).status_code == 404


# --- commands, the settings page ------------------------------------------------------------------------


def test_linkchat_links_and_unlinks_by_hand(owner):
    out = StringIO()

    call_command("linkchat", "telegram", "4242", "--user", "alice", stdout=out)
    link = ChatLink.objects.get()
    call_command("linkchat", "telegram", "4242", "--user", "alice", "--unlink", stdout=out)

    assert (link.user, link.channel, link.external_id, link.chat_id) == (owner, "telegram", "4242", "4242")
    assert not ChatLink.objects.exists()
    assert "Linked telegram user 4242 to alice." in out.getvalue()


def test_linkchat_refuses_an_unknown_channel_or_user(owner):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="No user nobody"):
        call_command("linkchat", "telegram", "1", "--user", "nobody")
    with pytest.raises(CommandError):
        call_command("linkchat", "icq", "1", "--user", "alice")
    assert not ChatLink.objects.exists()


def test_chat_poll_says_a_channel_without_polling_needs_its_public_url(settings):
    from django.core.management import CommandError

    settings.TELEGRAM_BOT_TOKEN = ""
    with pytest.raises(CommandError, match="not set up"):
        call_command("chat_poll", "telegram")


def test_the_settings_page_gives_a_code_with_the_step_to_take_and_unlinks(telegram, owner, linked):
    browser = Client()
    browser.force_login(owner)

    page = browser.get("/settings/chat/").content.decode()
    response = browser.post("/settings/chat/", {"channel": "telegram", "action": "code"})
    code = LinkCode.objects.get(user=owner).code
    unlinked = browser.post("/settings/chat/", {"channel": "telegram", "action": "unlink"}, follow=True)

    assert "Linked as @alice." in page and "Get a link code" in page and "Not set up on this server." in page
    body = response.content.decode()
    assert response.status_code == 200 and code in body
    assert f"Open t.me/askuser_test_bot?start={code}, or send /start {code} to the bot." in body
    assert not ChatLink.objects.exists() and "Unlinked from Telegram." in unlinked.content.decode()


def test_how_to_link_falls_back_to_the_plain_step_when_telegram_cannot_say(settings, fake_api):
    settings.TELEGRAM_BOT_TOKEN = "999:unknown"
    settings.TELEGRAM_API_URL = fake_api.url  # no getMe route: 404

    assert adapter.how_to_link("ABCDEFGH") == "Send /start ABCDEFGH to the bot."


async def test_polling_reads_updates_without_a_public_url(telegram, linked, token):
    prompt_id = await create(token)
    await telegram.arrived("sendMessage")
    served = threading.Event()

    def updates(call):
        if served.is_set():  # a long poll with nothing new: held until the test ends
            telegram.hold.wait(DEADLINE)
            return 200, {"ok": True, "result": []}
        served.set()
        return 200, {"ok": True, "result": [tap_update(11, 500, f"s:{prompt_id.replace('-', '')}")]}

    telegram.fake.route("POST", telegram.path("getUpdates"), updates)
    telegram.hold.clear()
    polling = asyncio.ensure_future(adapter.poll())
    try:
        [notice] = await telegram.arrived("answerCallbackQuery")
        [first, then] = await telegram.arrived("getUpdates", 2)
    finally:
        polling.cancel()
        telegram.hold.set()
    assert notice.body["text"] == "Skipped on Telegram by alice"
    assert then.body["offset"] == "12" and first.body.get("timeout") == "25"
    assert (await prompt_of(prompt_id)).reason == "skipped"
    await deliveries_settle(prompt_id)


@contextlib.asynccontextmanager
async def polling(telegram: FakeTelegram):
    """``adapter.poll`` running, as the server's loop runs it; stopped (and the fake's polls ended) after."""
    task = asyncio.ensure_future(adapter.poll())
    try:
        yield task
    finally:
        task.cancel()
        telegram.hold.set()
        await asyncio.wait([task])


async def test_an_update_the_sdk_cannot_read_is_skipped_and_the_next_restart_goes_on_after_it(telegram, linked, token):
    prompt_id = await create(token)
    await telegram.arrived("sendMessage")
    said = logging.handlers.BufferingHandler(capacity=1000)  # after the app's first request set logging up
    logging.getLogger("askuser").addHandler(said)
    unreadable = {"update_id": 20, "message": {"message_id": 1, "text": "no date, no chat"}}
    telegram.deliver(unreadable)
    telegram.deliver(tap_update(21, 500, f"s:{prompt_id.replace('-', '')}"))

    async with polling(telegram):
        [notice] = await telegram.arrived("answerCallbackQuery")
        await asyncio.to_thread(telegram.polled_from, 22)
    logging.getLogger("askuser").removeHandler(said)
    async with polling(telegram):  # a restart: Telegram is asked from where the last process stopped
        await telegram.arrived("getUpdates", len(telegram.calls("getUpdates")) + 1)

    assert notice.body["text"] == "Skipped on Telegram by alice"
    assert (await prompt_of(prompt_id)).reason == "skipped"
    first_after_restart = telegram.calls("getUpdates")[-1]
    assert first_after_restart.body["offset"] == "22"
    assert "Skipped a Telegram update askuser cannot read (20)." in [r.getMessage() for r in said.buffer]
    await deliveries_settle(prompt_id)


STRANGERS = 100


async def test_a_flood_of_strangers_never_delays_a_tap_and_each_stranger_is_told_once(telegram, linked, token):
    prompt_id = await create(token)
    await telegram.arrived("sendMessage")
    strangers = [10_000 + i for i in range(STRANGERS)]
    for round_ in range(2):  # each stranger writes twice: two batches of 100, as Telegram hands them out
        for i, stranger in enumerate(strangers):
            telegram.deliver(text_update(1 + round_ * STRANGERS + i, "hello?", user_id=stranger, chat=stranger))
    tap_id = 2 * STRANGERS + 1
    telegram.deliver(tap_update(tap_id, 500, f"s:{prompt_id.replace('-', '')}"))
    telegram.hold.clear()  # every message sent, a stranger's reply too, is held until the tap is answered

    async with polling(telegram):
        [notice] = await telegram.arrived("answerCallbackQuery")
        replied_before_the_tap = len(telegram.calls("sendMessage")) - 1  # the card was the first
        telegram.hold.set()
        await asyncio.to_thread(telegram.polled_from, tap_id + 1)
        sent = await telegram.arrived("sendMessage", 1 + STRANGERS)

    assert notice.body["text"] == "Skipped on Telegram by alice"
    # Handled one at a time, each stranger's reply first, the tap would wait for all 100 replies.
    assert replied_before_the_tap < STRANGERS // 4
    told = [int(call.body["chat_id"]) for call in sent[1:]]
    assert sorted(told) == strangers  # each once, not twice
    assert {call.body["text"] for call in sent[1:]} == {
        "This chat is not linked to askuser. Open Chat apps in askuser, get a link code and send it here."
    }
    await deliveries_settle(prompt_id)


@pytest.mark.live
def test_a_send_cut_off_by_a_crash_is_made_again_after_the_restart(server_env, fake_api, linked, token):
    telegram = FakeTelegram(fake_api)
    env = {**server_env, "TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_WEBHOOK_SECRET": SECRET}
    env |= {"TELEGRAM_API_URL": fake_api.url, "ASKUSER_CHAT_TIMEOUT": "1"}
    telegram.hold.clear()  # the first send is held in flight…
    first = DaphneServer(env).start()
    try:
        created = httpx.post(f"{first.url}/api/v1/prompts", json=payload(), headers=auth(token))
        assert telegram.held.wait(DEADLINE)
        first.kill()  # …when its server dies
        telegram.hold.set()
        second = DaphneServer(env, port=first.port).start()  # started with its loops, as serve starts them
        try:
            sent = fake_api.wait_for(telegram.path("sendMessage"), 2, timeout=DEADLINE)
            prompt_id = created.json()["id"]
            until_sync(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="sent").exists())
        finally:
            second.stop()
    finally:
        first.stop()

    assert sent[-1].body["text"].startswith("Deploy\n") and sent[-1].body["chat_id"] == str(CHAT)
    [message] = Delivery.objects.filter(prompt_id=prompt_id)
    assert message.ref == {"chat_id": CHAT, "message_id": 501}  # the send that landed: the held one never did
    assert [(t.action, t.ok) for t in message.tries.all()] == [("send", True)]  # the dead process recorded none


def test_the_chat_apps_page_makes_no_link_code_for_email_or_push(owner):
    browser = Client()
    browser.force_login(owner)

    for channel in ("email", "push"):
        refused = browser.post("/settings/chat/", {"channel": channel, "action": "code"}, follow=True)
        assert "This chat app is not set up on this server." in refused.content.decode()
    assert not LinkCode.objects.exists()
