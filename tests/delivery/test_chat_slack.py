"""Slack: cards drawn as Block Kit, sent and edited through slack_sdk against a local fake of Slack's Web API,
and Slack's signed requests (events, taps, modals, commands) refused or read."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import threading
import time
import urllib.parse
import uuid
from datetime import UTC, datetime
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from askuser_app.delivery.channels.base import Action, Button, Card, Closed, Permanent, Temporary
from askuser_app.delivery.channels.chats import core
from askuser_app.delivery.channels.slack import adapter as slack
from askuser_app.domain import contract, services
from askuser_app.domain.textreply import TextQuestion
from askuser_app.models import ChatLink, Delivery, DeliveryAttempt, LinkCode, Prompt, SeenEvent
from askuser_app.runtime.asyncdb import database_call
from tests.chatfake import Call, FakeAPI, FakeSocketMode
from tests.conftest import EXTRAS, QUESTION, asgi_get, asgi_request, auth, payload, until_async

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
PROMPT = uuid.UUID("0123456789abcdef0123456789abcdef")
URL = "http://askuser.test/s/support-42/"


@pytest.fixture
def slack_settings(settings, fake_api: FakeAPI):
    settings.SLACK_BOT_TOKEN = "xoxb-test"
    settings.SLACK_SIGNING_SECRET = SECRET
    settings.SLACK_API_URL = f"{fake_api.url}/api/"
    return settings


def sign(body: bytes, *, secret: str = SECRET, at: float | None = None) -> dict[str, str]:
    """Slack's v0 signature of ``body``, as the request headers Django's test client sends."""
    stamp = str(int(time.time() if at is None else at))
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"HTTP_X_SLACK_REQUEST_TIMESTAMP": stamp, "HTTP_X_SLACK_SIGNATURE": f"v0={digest}"}


def post_signed(path: str, body: bytes, content_type: str, **headers: str) -> Any:
    return Client().post(path, body, content_type=content_type, **{**sign(body), **headers})


def post_event(event: dict[str, Any], event_id: str = "Ev01", **headers: str) -> Any:
    body = json.dumps({"type": "event_callback", "event_id": event_id, "event": event}).encode()
    return post_signed("/chat/slack/events", body, "application/json", **headers)


def post_interaction(payload: dict[str, Any]) -> Any:
    body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
    return post_signed("/chat/slack/interactivity", body, "application/x-www-form-urlencoded")


def option(index: int) -> Action:
    return Action("option", PROMPT, index)


def a_card(**fields: Any) -> Card:
    question = TextQuestion(
        "deploy_target", "Deploy", "Where should this release go first?", False, ("Staging", "Production")
    )
    values: dict[str, Any] = {
        "prompt_id": PROMPT,
        "agent": "ci-bot",
        "header": "Deploy",
        "text": "Where should this release go first?\n1. Staging — Safe, reversible\n2. Production",
        "buttons": (
            Button("Staging", option(0)),
            Button("Production", option(1)),
            Button("Other…", Action("other", PROMPT)),
            Button("Skip", Action("skip", PROMPT)),
        ),
        "url": URL,
        "questions": (question,),
        "expires_at": datetime(2030, 1, 1, tzinfo=UTC),
        "by_buttons": True,
    }
    values.update(fields)
    return Card(**values)


def button(label: str, data: str) -> dict[str, Any]:
    return {"type": "button", "action_id": data, "value": data, "text": {"type": "plain_text", "text": label}}


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text, "verbatim": True}}


OPEN = {"type": "button", "action_id": "askuser_open", "text": {"type": "plain_text", "text": "Open on the web"}}


# --- drawing ------------------------------------------------------------------------


def test_a_single_question_card_has_one_button_per_option_then_other_skip_and_the_link():
    assert slack.card_blocks(a_card()) == [
        {"type": "header", "text": {"type": "plain_text", "text": "Deploy"}},
        section("Where should this release go first?\n1. Staging — Safe, reversible\n2. Production"),
        {
            "type": "actions",
            "block_id": "askuser_actions",
            "elements": [
                button("Staging", f"o:{PROMPT.hex}:0"),
                button("Production", f"o:{PROMPT.hex}:1"),
                button("Other…", f"x:{PROMPT.hex}"),
                button("Skip", f"s:{PROMPT.hex}"),
                {**OPEN, "url": URL},
            ],
        },
    ]


def test_a_reply_card_is_its_text_with_skip_all_and_the_link():
    card = a_card(
        header="ci-bot asks",
        text="1. Deploy: Where?\n2. Extras: Which?\nReply with one line per question.",
        buttons=(Button("Skip all", Action("skip", PROMPT)),),
        by_buttons=False,
        answer_button=Button("Answer…", Action("answer", PROMPT)),
    )
    blocks = slack.card_blocks(card)
    assert blocks[1] == section("1. Deploy: Where?\n2. Extras: Which?\nReply with one line per question.")
    assert blocks[2]["elements"] == [button("Skip all", f"s:{PROMPT.hex}"), {**OPEN, "url": URL}]


def test_agent_text_cannot_mention_everyone_or_hide_a_link():
    card = a_card(
        header="<!channel> now",
        text="Ping <!channel> & <@U999> or <https://evil.example|click here>",
        buttons=(Button("<!here> yes", option(0)),),
    )
    blocks = slack.card_blocks(card)
    # Header and button text are plain_text (never parsed); mrkdwn text is escaped and verbatim.
    assert blocks[0]["text"] == {"type": "plain_text", "text": "<!channel> now"}
    assert blocks[1] == section("Ping &lt;!channel&gt; &amp; &lt;@U999&gt; or &lt;https://evil.example|click here&gt;")
    assert blocks[2]["elements"][0]["text"] == {"type": "plain_text", "text": "<!here> yes"}


def test_long_texts_are_cut_to_block_kit_limits():
    long_label = "L" * 100
    card = a_card(
        header="H" * 200, text="\n".join(["x" * 1000] * 7) + "\n" + "<" * 4000, buttons=(Button(long_label, option(0)),)
    )
    blocks = slack.card_blocks(card)
    assert blocks[0]["text"]["text"] == "H" * 149 + "…"
    sections = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    assert all(len(text) <= 3000 for text in sections)
    assert "".join(sections).replace("\n", "") == "x" * 7000 + "&lt;" * 4000  # nothing lost, nothing broken
    assert blocks[-1]["elements"][0]["text"]["text"] == "L" * 74 + "…"


def test_a_closed_message_keeps_the_text_and_adds_the_outcome_and_the_link_without_buttons():
    closed = Closed(
        PROMPT, "Deploy", "Where should this <release> go?", "Answered: Production — by alice on Slack", URL
    )
    assert slack.closed_blocks(closed) == [
        {"type": "header", "text": {"type": "plain_text", "text": "Deploy"}},
        section("Where should this &lt;release&gt; go?"),
        section("Answered: Production — by alice on Slack"),
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"<{URL}|Open on the web>"}]},
    ]


def test_a_persons_message_is_read_as_they_typed_it():
    assert slack.from_mrkdwn("R&amp;D &lt;3, see <https://x.example|x.example> and <mailto:a@b.c>") == (
        "R&D <3, see x.example and mailto:a@b.c"
    )


def test_the_other_modal_has_one_text_input_and_names_its_prompt():
    question = TextQuestion("deploy_target", "Deploy to which environment today", "Where should this go?", False, ())
    view = slack.own_words_view(PROMPT, question)
    assert view["private_metadata"] == PROMPT.hex
    assert view["title"] == {"type": "plain_text", "text": "Deploy to which environ…"}
    assert view["blocks"] == [
        {
            "type": "input",
            "block_id": "own_words",
            "label": {"type": "plain_text", "text": "Where should this go?"},
            "element": {"type": "plain_text_input", "action_id": "text", "multiline": True, "max_length": 3000},
        }
    ]


def test_how_to_link_names_the_code_twice():
    assert slack.adapter.how_to_link("K7Q2M9XD") == (
        "Send the code K7Q2M9XD to the askuser app in a direct message, or type /askuser link K7Q2M9XD."
    )


def test_it_is_off_until_the_bot_token_and_signing_secret_are_set(settings):
    settings.SLACK_BOT_TOKEN = ""
    settings.SLACK_SIGNING_SECRET = SECRET
    assert not slack.adapter.configured()
    settings.SLACK_BOT_TOKEN = "xoxb-test"
    assert slack.adapter.configured()
    settings.SLACK_SIGNING_SECRET = "   "
    assert not slack.adapter.configured()


# --- outbound through the SDK ----------------------------------------------------------


def posted(call_channel: str = "D024BE91L", ts: str = "1700000000.000100"):
    return lambda call: (200, {"ok": True, "channel": call_channel, "ts": ts})


async def test_send_opens_the_dm_of_a_user_id_and_posts_the_card(slack_settings, fake_api: FakeAPI):
    fake_api.route("POST", "/api/conversations.open", lambda call: (200, {"ok": True, "channel": {"id": "D024BE91L"}}))
    fake_api.route("POST", "/api/chat.postMessage", posted())
    ref = await slack.adapter.send("U012AB3CD", a_card())
    assert ref == {"channel": "D024BE91L", "ts": "1700000000.000100"}
    [opened] = fake_api.of("/api/conversations.open")
    assert opened.body == {"users": "U012AB3CD"}
    assert opened.headers["authorization"] == "Bearer xoxb-test"
    [message] = fake_api.of("/api/chat.postMessage")
    assert message.body == {
        "channel": "D024BE91L",
        "text": "Deploy: Where should this release go first?",
        "blocks": slack.card_blocks(a_card()),
        "unfurl_links": False,
        "unfurl_media": False,
    }


async def test_send_to_a_known_dm_channel_posts_at_once(slack_settings, fake_api: FakeAPI):
    fake_api.route("POST", "/api/chat.postMessage", posted())
    await slack.adapter.send("D024BE91L", a_card())
    assert [c.path for c in fake_api.calls] == ["/api/chat.postMessage"]


async def test_edit_rewrites_the_message_without_buttons(slack_settings, fake_api: FakeAPI):
    fake_api.route("POST", "/api/chat.update", posted())
    closed = Closed(PROMPT, "Deploy", "Where?", "Skipped", URL)
    await slack.adapter.edit({"channel": "D024BE91L", "ts": "1700000000.000100"}, closed)
    [update] = fake_api.of("/api/chat.update")
    assert update.body == {
        "channel": "D024BE91L",
        "ts": "1700000000.000100",
        "text": "Deploy: Skipped",
        "blocks": slack.closed_blocks(closed),
    }


@pytest.mark.parametrize(
    ("status", "body", "headers", "error", "retry_after"),
    [
        (429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "7"}, Temporary, 7.0),
        (503, {"ok": False, "error": "service unavailable"}, {}, Temporary, None),
        (200, {"ok": False, "error": "internal_error"}, {}, Temporary, None),
        (200, {"ok": False, "error": "channel_not_found"}, {}, Permanent, None),
        (200, {"ok": False, "error": "not_in_channel"}, {}, Permanent, None),
        (200, {"ok": False, "error": "invalid_auth"}, {}, Permanent, None),
        (200, {"ok": False, "error": "account_inactive"}, {}, Permanent, None),
    ],
)
async def test_slack_failures_are_retried_or_given_up(
    slack_settings,
    fake_api: FakeAPI,
    status,
    body,
    headers,
    error,
    retry_after,
):
    fake_api.route("POST", "/api/chat.postMessage", lambda call: (status, body, headers))
    with pytest.raises(error) as raised:
        await slack.adapter.send("D024BE91L", a_card())
    if error is Temporary:
        assert raised.value.retry_after == retry_after
    assert len(fake_api.of("/api/chat.postMessage")) == 1  # the SDK does not retry behind the delivery engine's back


async def test_an_unreachable_slack_is_temporary(slack_settings):
    slack_settings.SLACK_API_URL = "http://127.0.0.1:9/api/"  # discard: nothing listens
    with pytest.raises(Temporary):
        await slack.adapter.edit({"channel": "D1", "ts": "1.2"}, Closed(PROMPT, "Deploy", "Where?", "Expired", URL))


async def test_an_edit_without_a_reference_is_permanent(slack_settings, fake_api: FakeAPI):
    with pytest.raises(Permanent):
        await slack.adapter.edit({}, Closed(PROMPT, "Deploy", "Where?", "Expired", URL))
    assert fake_api.calls == []


# --- inbound: what is refused before anything is read ------------------------------------

CHALLENGE = json.dumps(
    {"type": "url_verification", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}
)


def test_url_verification_answers_the_challenge(slack_settings):
    response = post_signed("/chat/slack/events", CHALLENGE.encode(), "application/json")
    assert response.status_code == 200
    assert response.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        sign(CHALLENGE.encode(), secret="another-secret"),
        sign(CHALLENGE.encode(), at=time.time() - 6 * 60),  # signed, but outside the five minutes
        sign(b"{}"),  # a signature of another body
        {"HTTP_X_SLACK_REQUEST_TIMESTAMP": "soon", "HTTP_X_SLACK_SIGNATURE": "v0=00"},
    ],
    ids=["unsigned", "wrong-secret", "stale", "other-body", "garbage"],
)
def test_a_request_slack_did_not_sign_is_refused(slack_settings, headers):
    response = Client().post("/chat/slack/events", CHALLENGE, content_type="application/json", **headers)
    assert response.status_code == 401
    assert response.content == b""  # the challenge was not read


def test_a_tap_slack_did_not_sign_reaches_nothing(slack_settings, fake_api: FakeAPI):
    body = urllib.parse.urlencode({"payload": json.dumps({"type": "block_actions"})})
    response = Client().post(
        "/chat/slack/interactivity", body, content_type="application/x-www-form-urlencoded", **sign(b"x")
    )
    assert response.status_code == 401
    assert fake_api.calls == []


@pytest.mark.parametrize(
    ("endpoint", "body", "content_type", "status"),
    [
        ("/chat/slack/events", b"{not json", "application/json", 400),
        ("/chat/slack/events", b"[1, 2]", "application/json", 400),
        ("/chat/slack/events", b'{"type": "event_callback"}\xff', "application/json", 400),
        ("/chat/slack/interactivity", b"payload=%7Bnot+json", "application/x-www-form-urlencoded", 400),
        ("/chat/slack/interactivity", b"nothing=here", "application/x-www-form-urlencoded", 400),
        ("/chat/slack/commands", b"text=link", "application/x-www-form-urlencoded", 400),
        ("/chat/slack/events", b'{"type": "app_rate_limited"}', "application/json", 200),
        ("/chat/slack/events", b'{"type": "event_callback", "event": "no"}', "application/json", 200),
    ],
    ids=["not-json", "not-an-object", "not-utf8", "bad-payload", "no-payload", "no-command", "unsupported", "odd"],
)
def test_malformed_bodies_are_refused_or_ignored(slack_settings, fake_api, endpoint, body, content_type, status):
    response = post_signed(endpoint, body, content_type)
    assert response.status_code == status
    assert fake_api.calls == []


def test_a_huge_body_is_refused_unread(slack_settings):
    body = b'{"type": "url_verification", "challenge": "' + b"a" * slack.MAX_BODY + b'"}'
    assert post_signed("/chat/slack/events", body, "application/json").status_code == 413


def test_the_endpoints_are_absent_while_slack_is_off(settings):
    settings.SLACK_BOT_TOKEN = ""
    settings.SLACK_SIGNING_SECRET = ""
    for endpoint in ("events", "interactivity", "commands"):
        assert post_signed(f"/chat/slack/{endpoint}", CHALLENGE.encode(), "application/json").status_code == 404


def test_only_post_is_served(slack_settings):
    assert Client().get("/chat/slack/events").status_code == 405


@pytest.mark.parametrize(
    "event",
    [
        {"type": "message", "channel_type": "im", "channel": "D1", "bot_id": "B1", "text": "hi", "ts": "1.1"},
        {"type": "message", "channel_type": "im", "channel": "D1", "user": "U1", "subtype": "message_changed"},
        {"type": "message", "channel_type": "channel", "channel": "C1", "user": "U1", "text": "2", "ts": "1.1"},
        {"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@U0> hi", "ts": "1.1"},
    ],
    ids=["bot", "edit", "public-channel", "mention"],
)
def test_messages_that_are_not_a_person_writing_in_the_dm_are_ignored(slack_settings, fake_api, event):
    assert post_event(event).status_code == 200
    assert fake_api.calls == []


def test_a_tap_on_the_link_button_does_nothing(slack_settings, fake_api: FakeAPI):
    payload = {
        "type": "block_actions",
        "user": {"id": "U1", "username": "alice"},
        "channel": {"id": "D1"},
        "actions": [{"action_id": "askuser_open", "type": "button"}],
    }
    assert post_interaction(payload).status_code == 200
    assert fake_api.calls == []


# --- Socket Mode ---------------------------------------------------------------------


@pytest.fixture
def socket_mode(slack_settings, fake_api: FakeAPI):
    """``adapter.poll()`` running against a fake Socket Mode end, as ``manage.py chat_poll slack`` runs it."""
    slack_settings.SLACK_APP_TOKEN = "xapp-test"
    end = FakeSocketMode()
    fake_api.route("POST", "/api/apps.connections.open", lambda call: (200, {"ok": True, "url": end.url}))
    loop = asyncio.new_event_loop()
    task = loop.create_task(slack.adapter.poll())

    def run() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(task)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield end
    finally:
        loop.call_soon_threadsafe(task.cancel)
        # The SDK's close waits for its reader, which holds the socket until a read returns:
        # the end hangs up, as Slack does, rather than letting the read time out.
        end.close()
        thread.join(10)
        loop.close()


def test_socket_mode_answers_a_command_over_the_socket(socket_mode: FakeSocketMode, fake_api: FakeAPI):
    socket_mode.push(
        {
            "envelope_id": "env-1",
            "type": "slash_commands",
            "accepts_response_payload": True,
            "payload": {"command": "/askuser", "text": "help", "user_id": "U1", "user_name": "alice"},
        }
    )
    assert socket_mode.ack("env-1") == {
        "envelope_id": "env-1",
        "payload": {
            "response_type": "ephemeral",
            "text": "Type /askuser link &lt;code&gt; with the code from the Chat apps page, or /askuser unlink.",
        },
    }
    [opened] = fake_api.of("/api/apps.connections.open")
    assert opened.headers["authorization"] == "Bearer xapp-test"  # the app-level token opens the socket


def test_socket_mode_acknowledges_what_it_does_not_handle(socket_mode: FakeSocketMode):
    socket_mode.push({"envelope_id": "env-2", "type": "events_api", "payload": {"type": "app_rate_limited"}})
    assert socket_mode.ack("env-2") == {"envelope_id": "env-2"}


# --- end to end: the agent API, the delivery engine and the endpoints in one ASGI app, against the fake Slack ------

ALICE, BOB = "U0ALICE", "U0BOB"
DM = "D0ALICE"  # alice's direct message with the app
PUBLIC = "https://askuser.example.com"
DEADLINE = 10
e2e = pytest.mark.django_db(transaction=True)


class Slack:
    """The fake Web API's answers, and what the tests read back from its calls."""

    def __init__(self, fake: FakeAPI) -> None:
        self.fake = fake
        self.stamps = itertools.count(1)
        fake.route("POST", "/api/conversations.open", lambda call: (200, {"ok": True, "channel": {"id": DM}}))
        fake.route("POST", "/api/chat.postMessage", self.posted)
        for method in ("chat.update", "chat.postEphemeral", "views.open"):
            fake.route("POST", f"/api/{method}", lambda call: (200, {"ok": True}))

    def posted(self, call: Call) -> tuple[int, Any]:
        return 200, {"ok": True, "channel": call.body["channel"], "ts": f"1700000000.{next(self.stamps):06d}"}

    def calls(self, method: str) -> list[Call]:
        return self.fake.of(f"/api/{method}")

    async def wait_for(self, method: str, count: int = 1) -> list[Call]:
        return await asyncio.to_thread(self.fake.wait_for, f"/api/{method}", count, timeout=DEADLINE)

    def replies(self) -> list[Call]:
        """The bot's own messages in answer to a person's (not cards)."""
        return [c for c in self.calls("chat.postMessage") if "blocks" not in c.body]


@pytest.fixture
def slack_app(slack_settings, fake_api: FakeAPI, served_loops) -> Slack:
    slack_settings.ASKUSER_PUBLIC_URL = PUBLIC
    slack_settings.ASKUSER_CHAT_RETRY_BASE = 0.05
    return Slack(fake_api)


@pytest.fixture
def linked(owner):
    return core.link_by_hand(owner, "slack", ALICE, chat_id=DM, handle="alice")


async def create(token: str, *questions: dict[str, Any]) -> str:
    request = asgi_request("POST", "/api/v1/prompts", json=payload(*questions), headers=auth(token))
    response = await asyncio.wait_for(request, DEADLINE)
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def wait(token: str, prompt_id: str) -> asyncio.Future[Any]:
    return asyncio.ensure_future(asgi_get(f"/api/v1/prompts/{prompt_id}?wait=30", auth(token)))


async def to_slack(endpoint: str, body: bytes, content_type: str, *, secret: str = SECRET, **headers: str) -> Any:
    signed = {k.removeprefix("HTTP_").replace("_", "-"): v for k, v in sign(body, secret=secret).items()}
    headers = {"Content-Type": content_type, **signed, **headers}
    request = asgi_request("POST", f"/chat/slack/{endpoint}", content=body, headers=headers)
    return await asyncio.wait_for(request, DEADLINE)  # a stuck handler fails the test, never hangs it


triggers = itertools.count(1)


async def interact(payload: dict[str, Any], **kwargs: Any) -> Any:
    payload = {"trigger_id": f"trig-{next(triggers)}", **payload}
    body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
    return await to_slack("interactivity", body, "application/x-www-form-urlencoded", **kwargs)


async def tap(data: str, *, user: str = ALICE, channel: str = DM, ts: str = "1700000000.000001", **kw: Any) -> Any:
    return await interact(
        {
            "type": "block_actions",
            "user": {"id": user, "username": "alice" if user == ALICE else "bob"},
            "channel": {"id": channel},
            "container": {"type": "message", "channel_id": channel, "message_ts": ts},
            "actions": [{"action_id": data, "block_id": "askuser_actions", "type": "button", "value": data}],
        },
        **kw,
    )


async def message(
    text: str, *, event_id: str, thread_ts: str | None = None, user: str = ALICE, subtype: str = "", **headers: str
):
    event = {"type": "message", "channel_type": "im", "channel": DM, "user": user, "text": text, "ts": "1800.1"}
    if thread_ts:
        event["thread_ts"] = thread_ts
    if subtype:
        event["subtype"] = subtype
    body = json.dumps({"type": "event_callback", "event_id": event_id, "event": event}).encode()
    return await to_slack("events", body, "application/json", **headers)


def card_of(prompt_id: str) -> list[dict[str, Any]]:
    hexid = prompt_id.replace("-", "")
    return [
        {"type": "header", "text": {"type": "plain_text", "text": "Deploy"}},
        section("Where should this release go first?\n\n• Staging (Recommended) — Safe, reversible\n• Production"),
        {
            "type": "actions",
            "block_id": "askuser_actions",
            "elements": [
                button("Staging (Recommended)", f"o:{hexid}:0"),
                button("Production", f"o:{hexid}:1"),
                button("Other…", f"x:{hexid}"),
                button("Skip", f"s:{hexid}"),
                {**OPEN, "url": f"{PUBLIC}/p/{prompt_id}/"},
            ],
        },
    ]


def closed_of(prompt_id: str, outcome: str) -> list[dict[str, Any]]:
    return [
        *card_of(prompt_id)[:2],
        section(outcome),
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"<{PUBLIC}/p/{prompt_id}/|Open on the web>"}]},
    ]


async def deliveries_settle(prompt_id: str) -> None:
    """Until no send or edit of the prompt is left to make (a resolution marks sent messages
    for their edit in its own transaction): no try outlives its test."""
    live = Delivery.objects.filter(prompt_id=prompt_id, state__in=["to_send", "to_edit"])
    await until_async(lambda: None if live.exists() else True)


@database_call
def prompt_of(prompt_id: str) -> Prompt:
    return Prompt.objects.get(pk=prompt_id)


def picked(result: dict[str, Any]) -> dict[str, Any]:
    return {k: result[k] for k in ("status", "reason", "answers", "surface", "resolved_by") if k in result}


@e2e
async def test_a_tap_answers_the_waiting_agent_and_the_message_loses_its_buttons(slack_app, linked, token):
    prompt_id = await create(token)

    [sent] = await slack_app.wait_for("chat.postMessage")
    assert sent.body == {
        "channel": DM,
        "text": "Deploy: Where should this release go first?",
        "blocks": card_of(prompt_id),
        "unfurl_links": False,
        "unfurl_media": False,
    }
    row = await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="sent").first())
    assert row.ref == {"channel": DM, "ts": "1700000000.000001"}

    waiting = wait(token, prompt_id)
    response = await tap(f"o:{prompt_id.replace('-', '')}:1")

    assert response.status_code == 200 and response.content == b""
    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert picked(result) == {
        "status": "answered",
        "reason": None,
        "answers": {"answers": {"deploy_target": ["Production"]}},
        "surface": "slack",
        "resolved_by": "alice",
    }
    [edit] = await slack_app.wait_for("chat.update")
    assert edit.body == {
        "channel": DM,
        "ts": "1700000000.000001",
        "text": "Deploy: Answered: Production — by alice on Slack",
        "blocks": closed_of(prompt_id, "Answered: Production — by alice on Slack"),
    }
    assert slack_app.calls("chat.postEphemeral") == []  # the rewritten message says it all
    await deliveries_settle(prompt_id)


@e2e
async def test_other_opens_a_modal_whose_text_is_the_free_text_answer(slack_app, linked, token):
    prompt_id = await create(token)
    hexid = prompt_id.replace("-", "")
    await slack_app.wait_for("chat.postMessage")

    response = await tap(f"x:{hexid}")

    assert response.status_code == 200
    [opened] = slack_app.calls("views.open")  # inline: the trigger_id lasts 3 seconds
    assert opened.body["trigger_id"].startswith("trig-")
    view = opened.body["view"]
    assert (view["callback_id"], view["private_metadata"], view["title"]["text"]) == (
        "askuser_own_words",
        hexid,
        "Deploy",
    )
    assert view["blocks"][0]["label"]["text"] == "Where should this release go first?"
    assert (await prompt_of(prompt_id)).is_pending

    def submitted(text: str) -> dict[str, Any]:
        state = {"values": {"own_words": {"text": {"type": "plain_text_input", "value": text}}}}
        user = {"id": ALICE, "username": "alice"}
        return {"type": "view_submission", "user": user, "view": {**view, "id": "V1", "state": state}}

    empty = await interact(submitted("   "))
    assert empty.json() == {
        "response_action": "errors",
        "errors": {"own_words": "Your answer was empty; type your own answer, or tap an option."},
    }
    waiting = wait(token, prompt_id)
    done = await interact(submitted("Canary <first> & then all"))

    assert done.status_code == 200 and done.content == b""  # the modal closes
    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert result["answers"] == {"answers": {"deploy_target": ["Canary <first> & then all"]}}
    assert (result["details"]["deploy_target"]["free_text"], result["surface"]) == (
        "Canary <first> & then all",
        "slack",
    )
    [edit] = await slack_app.wait_for("chat.update")
    assert edit.body["blocks"][-2] == section("Answered: own answer — by alice on Slack")  # own words stay private
    await deliveries_settle(prompt_id)


@e2e
async def test_skip_skips_and_the_agent_hears_no_answer(slack_app, linked, token):
    prompt_id = await create(token)
    await slack_app.wait_for("chat.postMessage")
    waiting = wait(token, prompt_id)

    await tap(f"s:{prompt_id.replace('-', '')}")

    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert picked(result) == {"status": "no_answer", "reason": "skipped", "surface": "slack", "resolved_by": "alice"}
    [edit] = await slack_app.wait_for("chat.update")
    assert edit.body["blocks"] == closed_of(prompt_id, "Skipped on Slack by alice")
    await deliveries_settle(prompt_id)


@e2e
async def test_a_multi_question_prompt_is_text_answered_by_a_reply_in_its_thread(slack_app, linked, token):
    prompt_id = await create(token, QUESTION, EXTRAS)
    [sent] = await slack_app.wait_for("chat.postMessage")
    blocks = sent.body["blocks"]
    assert blocks[0] == {"type": "header", "text": {"type": "plain_text", "text": "helper asks"}}
    assert blocks[1]["text"]["text"].startswith(
        "The agent asks 2 questions:\n\n1. Deploy (deploy_target): Where should this release go first?\n"
    )
    assert "Reply with one line per question" in blocks[1]["text"]["text"]
    assert blocks[2]["elements"] == [
        button("Skip all", f"s:{prompt_id.replace('-', '')}"),
        {**OPEN, "url": f"{PUBLIC}/p/{prompt_id}/"},
    ]
    await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="sent").first())
    waiting = wait(token, prompt_id)

    response = await message("Production\nDocs, Blog post", event_id="Ev1", thread_ts="1700000000.000001")

    assert response.status_code == 200
    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert picked(result)["answers"] == {"answers": {"deploy_target": ["Production"], "extras": ["Docs", "Blog post"]}}
    assert result["surface"] == "slack"
    [said] = slack_app.replies()
    assert said.body == {
        "channel": DM,
        "thread_ts": "1700000000.000001",
        "text": "Answered: Deploy: Production; Extras: Docs, Blog post — by alice on Slack",
    }
    [edit] = await slack_app.wait_for("chat.update")
    assert edit.body["blocks"][-2] == section(
        "Answered: Deploy: Production; Extras: Docs, Blog post — by alice on Slack"
    )
    assert "Reply with" not in json.dumps(edit.body["blocks"])
    await deliveries_settle(prompt_id)


@e2e
async def test_a_reply_in_the_thread_answers_that_prompt_not_the_oldest(slack_app, linked, token, agent):
    first = await create(token, QUESTION, EXTRAS)
    await slack_app.wait_for("chat.postMessage")
    other = await asgi_request(
        "POST", "/api/v1/prompts", json=payload(QUESTION, EXTRAS, session="support-43"), headers=auth(token)
    )
    second = str(other.json()["id"])
    await slack_app.wait_for("chat.postMessage", 2)
    await until_async(lambda: Delivery.objects.filter(prompt_id=second, state="sent").first())

    # "Also send to direct message" makes it a thread_broadcast: still her reply.
    await message("Staging\nChangelog", event_id="Ev2", thread_ts="1700000000.000002", subtype="thread_broadcast")

    assert (await prompt_of(first)).is_pending
    assert (await prompt_of(second)).result["answers"] == {
        "answers": {"deploy_target": ["Staging"], "extras": ["Changelog"]}
    }


@e2e
async def test_an_unreadable_reply_leaves_the_prompt_pending_and_the_app_says_what_is_missing(slack_app, linked, token):
    prompt_id = await create(token, QUESTION, EXTRAS)
    await slack_app.wait_for("chat.postMessage")
    await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="sent").first())

    await message("extras: Docs", event_id="Ev3", thread_ts="1700000000.000001")

    [said] = slack_app.replies()
    assert said.body["thread_ts"] == "1700000000.000001"
    assert said.body["text"].startswith("Your reply did not answer 1. Deploy.")
    assert (await prompt_of(prompt_id)).is_pending
    await deliveries_settle(prompt_id)


@e2e
async def test_a_strangers_tap_is_refused_and_changes_nothing(slack_app, linked, token):
    prompt_id = await create(token)
    await slack_app.wait_for("chat.postMessage")

    response = await tap(f"o:{prompt_id.replace('-', '')}:0", user=BOB, channel="D0BOB")

    assert response.status_code == 200
    [notice] = slack_app.calls("chat.postEphemeral")
    assert notice.body == {"channel": "D0BOB", "user": BOB, "text": "This question is not yours."}
    assert (await prompt_of(prompt_id)).is_pending
    await deliveries_settle(prompt_id)


@e2e
async def test_a_stale_tap_after_a_web_answer_gets_a_short_notice(slack_app, linked, token, owner):
    prompt_id = await create(token)
    await slack_app.wait_for("chat.postMessage")
    await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="sent").first())
    await database_call(services.answer)(
        await prompt_of(prompt_id), {"deploy_target": "Staging (Recommended)"}, by=owner, surface="web"
    )
    [edit] = await slack_app.wait_for("chat.update")
    assert edit.body["blocks"][-2] == section("Answered: Staging (Recommended) — by alice on the web")

    await tap(f"o:{prompt_id.replace('-', '')}:1")

    [notice] = slack_app.calls("chat.postEphemeral")
    assert (notice.body["channel"], notice.body["user"]) == (DM, ALICE)
    assert notice.body["text"].startswith("This prompt was already answered on the web by alice at ")
    prompt = await prompt_of(prompt_id)
    assert prompt.result["answers"] == {"answers": {"deploy_target": ["Staging (Recommended)"]}}
    await deliveries_settle(prompt_id)


@e2e
async def test_a_replayed_event_is_handled_once(slack_app, linked, token):
    prompt_id = await create(token, QUESTION, EXTRAS)
    await slack_app.wait_for("chat.postMessage")

    first = await message("Production\nDocs", event_id="Ev9")
    again = await message(
        "Production\nDocs", event_id="Ev9", **{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
    )

    assert first.status_code == again.status_code == 200
    assert len(slack_app.replies()) == 1
    prompt = await prompt_of(prompt_id)
    assert await database_call(prompt.events.filter(kind="answered").count)() == 1
    await deliveries_settle(prompt_id)


@e2e
async def test_a_replayed_tap_is_handled_once(slack_app, linked, token):
    prompt_id = await create(token)
    await slack_app.wait_for("chat.postMessage")
    payload = {
        "type": "block_actions",
        "trigger_id": "trig-same",
        "user": {"id": BOB, "username": "bob"},
        "channel": {"id": "D0BOB"},
        "actions": [{"action_id": "x", "type": "button", "value": f"s:{prompt_id.replace('-', '')}"}],
    }

    await interact(payload)
    await interact(payload)

    assert len(slack_app.calls("chat.postEphemeral")) == 1
    await deliveries_settle(prompt_id)


@e2e
@pytest.mark.parametrize(
    "forged",
    [{"secret": "not-the-signing-secret"}, {"X-Slack-Signature": "v0=" + "0" * 64}, {"X-Slack-Signature": ""}],
    ids=["other-secret", "forged-signature", "unsigned"],
)
async def test_a_badly_signed_tap_is_refused_and_changes_nothing(slack_app, linked, token, forged):
    prompt_id = await create(token)
    await slack_app.wait_for("chat.postMessage")

    response = await tap(f"s:{prompt_id.replace('-', '')}", **forged)

    assert response.status_code == 401
    assert (await prompt_of(prompt_id)).is_pending
    assert not await database_call(SeenEvent.objects.exists)()
    assert slack_app.calls("chat.postEphemeral") == []
    await deliveries_settle(prompt_id)


@e2e
async def test_slack_down_for_a_while_loses_nothing_and_the_edit_follows_the_send(slack_app, linked, token):
    slack_app.fake.down(503)
    prompt_id = await create(token)
    await slack_app.wait_for("chat.postMessage", 2)  # tried, refused, tried again
    slack_app.fake.up()
    row = await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="sent").first())
    assert row.ref["channel"] == DM

    slack_app.fake.down(429)
    waiting = wait(token, prompt_id)
    await tap(f"o:{prompt_id.replace('-', '')}:0")
    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert result["answers"] == {"answers": {"deploy_target": ["Staging (Recommended)"]}}
    await slack_app.wait_for("chat.update", 2)
    slack_app.fake.up()

    await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="closed").first())
    tries = await database_call(lambda: list(DeliveryAttempt.objects.order_by("id").values_list("action", "ok")))()
    sends = [ok for action, ok in tries if action == "send"]
    edits = [ok for action, ok in tries if action == "edit"]
    assert sends[-1] and not any(sends[:-1]) and len(sends) >= 2
    assert edits[-1] and not any(edits[:-1]) and len(edits) >= 2
    last = slack_app.calls("chat.update")[-1]
    assert last.body["blocks"] == closed_of(prompt_id, "Answered: Staging (Recommended) — by alice on Slack")
    posted_cards = [c for c in slack_app.calls("chat.postMessage") if "blocks" in c.body]
    assert all(c.body["blocks"] == card_of(prompt_id) for c in posted_cards)


@e2e
async def test_a_code_sent_in_the_dm_links_and_the_next_prompt_arrives_there(slack_app, owner, token):
    code = await database_call(core.new_code)(owner, "slack")

    await message(code, event_id="EvL")

    [said] = slack_app.replies()
    assert said.body == {"channel": DM, "text": "Linked to askuser as alice: questions for you will arrive here."}
    link = await database_call(ChatLink.objects.get)(channel="slack", external_id=ALICE)
    assert (link.user_id, link.chat_id) == (owner.pk, DM)
    prompt_id = await create(token)
    [_said, card] = await slack_app.wait_for("chat.postMessage", 2)
    assert card.body["channel"] == DM and card.body["blocks"] == card_of(prompt_id)
    await deliveries_settle(prompt_id)


@e2e
async def test_the_slash_command_links_unlinks_and_cards_open_the_dm(slack_app, owner, token):
    code = await database_call(core.new_code)(owner, "slack")
    command = {"command": "/askuser", "user_id": ALICE, "user_name": "alice", "channel_id": "C0PUBLIC"}

    answer = await to_slack(
        "commands",
        urllib.parse.urlencode({**command, "text": f"link {code}"}).encode(),
        "application/x-www-form-urlencoded",
    )

    assert answer.json() == {
        "response_type": "ephemeral",
        "text": "Linked to askuser as alice: questions for you will arrive here.",
    }
    link = await database_call(ChatLink.objects.get)(channel="slack", external_id=ALICE)
    assert link.chat_id == ALICE  # never the public channel the command was typed in
    prompt_id = await create(token)
    [card] = await slack_app.wait_for("chat.postMessage")
    [opened] = slack_app.calls("conversations.open")
    assert opened.body == {"users": ALICE}
    assert card.body["channel"] == DM and card.body["blocks"] == card_of(prompt_id)
    await deliveries_settle(prompt_id)

    reused = await to_slack(
        "commands",
        urllib.parse.urlencode({**command, "text": f"link {code}"}).encode(),
        "application/x-www-form-urlencoded",
    )
    assert reused.json()["text"] == "This code is not valid or has expired. Get a new one in askuser under Chat apps."
    unlinked = await to_slack(
        "commands", urllib.parse.urlencode({**command, "text": "unlink"}).encode(), "application/x-www-form-urlencoded"
    )
    assert unlinked.json()["text"] == "Unlinked: askuser will send no more questions here."
    assert not await database_call(ChatLink.objects.filter(channel="slack").exists)()


@e2e
def test_socket_mode_runs_the_same_handlers_without_a_public_url(slack_app, linked, agent, socket_mode):
    prompt = services.ask(agent, contract.parse_create(payload())).prompt
    hexid = prompt.pk.hex
    tap_payload = {
        "type": "block_actions",
        "trigger_id": "trig-socket",
        "user": {"id": ALICE, "username": "alice"},
        "channel": {"id": DM},
        "actions": [{"action_id": f"o:{hexid}:1", "type": "button", "value": f"o:{hexid}:1"}],
    }

    empty = {"values": {"own_words": {"text": {"type": "plain_text_input", "value": ""}}}}
    submitted = {
        "type": "view_submission",
        "trigger_id": "trig-view",
        "user": {"id": ALICE, "username": "alice"},
        "view": {"callback_id": "askuser_own_words", "private_metadata": hexid, "state": empty},
    }
    socket_mode.push(
        {"envelope_id": "env-view", "type": "interactive", "accepts_response_payload": True, "payload": submitted}
    )
    assert socket_mode.ack("env-view") == {  # a modal's errors travel in the acknowledgement
        "envelope_id": "env-view",
        "payload": {
            "response_action": "errors",
            "errors": {"own_words": "Your answer was empty; type your own answer, or tap an option."},
        },
    }

    socket_mode.push(
        {"envelope_id": "env-tap", "type": "interactive", "accepts_response_payload": False, "payload": tap_payload}
    )

    assert socket_mode.ack("env-tap") == {"envelope_id": "env-tap"}
    prompt.refresh_from_db()
    assert (prompt.status, prompt.surface, prompt.resolved_by.username) == ("answered", "slack", "alice")
    assert prompt.result["answers"] == {"answers": {"deploy_target": ["Production"]}}


def test_chat_poll_says_what_socket_mode_lacks(slack_settings, scaled_layer, fake_api: FakeAPI):
    slack_settings.SLACK_APP_TOKEN = ""
    with pytest.raises(CommandError, match="SLACK_APP_TOKEN is not set"):
        call_command("chat_poll", "slack", stdout=StringIO())
    slack_settings.SLACK_APP_TOKEN = "xapp-revoked"
    fake_api.route("POST", "/api/apps.connections.open", lambda call: (200, {"ok": False, "error": "invalid_auth"}))
    with pytest.raises(CommandError, match="Slack did not open a Socket Mode connection: invalid_auth"):
        call_command("chat_poll", "slack", stdout=StringIO())


@pytest.mark.django_db
def test_the_settings_page_gives_a_slack_code_with_the_step_to_take(slack_settings, owner):
    browser = Client()
    browser.force_login(owner)

    response = browser.post("/settings/chat/", {"channel": "slack", "action": "code"})

    code = LinkCode.objects.get(user=owner, channel="slack").code
    assert response.status_code == 200
    assert (
        f"Send the code {code} to the askuser app in a direct message, or type /askuser link {code}."
        in response.content.decode()
    )


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "block_actions", "user": {"id": "U1"}, "actions": 5},
        {"type": "block_actions", "user": {"id": "U1"}, "actions": ["o:1"]},
        {"type": "block_actions", "actions": [{"value": "s:" + "0" * 32}]},
        {"type": "view_submission", "user": {"id": "U1"}, "view": {"callback_id": "askuser_own_words"}},
        {"type": "view_submission", "user": {"id": "U1"}, "view": {"callback_id": "someone_elses"}},
        {"type": "shortcut", "user": {"id": "U1"}, "callback_id": "x"},
    ],
    ids=["actions-not-a-list", "action-not-an-object", "no-user", "view-without-state", "other-view", "shortcut"],
)
def test_odd_interactions_are_acknowledged_and_do_nothing(slack_settings, fake_api: FakeAPI, payload):
    response = post_interaction(payload)
    assert (response.status_code, response.content) == (200, b"")
    assert fake_api.calls == []


@e2e
async def test_an_agents_cancel_rewrites_the_message(slack_app, linked, token):
    prompt_id = await create(token)
    await slack_app.wait_for("chat.postMessage")
    await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="sent").first())

    cancelled = await asgi_request("POST", f"/api/v1/prompts/{prompt_id}/cancel", headers=auth(token))

    assert cancelled.status_code == 200
    [edit] = await slack_app.wait_for("chat.update")
    assert edit.body["blocks"] == closed_of(prompt_id, "Cancelled by the agent")
    await deliveries_settle(prompt_id)


EVIL = "echo ```done``` <!channel> <https://x.test|click> & <@U123>"


def detailed_card(detail: str) -> Card:
    question = TextQuestion("permission", "Bash", "Run this command?", False, ("Allow", "Deny"), detail=detail)
    text = f"Run this command?\n\n{detail}\n\n• Allow\n• Deny"
    return a_card(header="Bash", text=text, questions=(question,))


def test_a_detail_is_a_code_block_that_nothing_in_it_closes_or_turns_into_a_mention():
    blocks = slack.card_blocks(detailed_card(EVIL))

    code = blocks[2]["text"]["text"]
    assert code.startswith("```\n") and code.endswith("\n```") and code.count("```") == 2
    assert "<" not in code and ">" not in code  # no mention, no link: &lt;!channel&gt; is text
    assert "&lt;!channel&gt;" in code and "&amp;" in code
    assert blocks[2]["text"]["verbatim"] is True
    assert blocks[3]["text"]["text"] == "• Allow\n• Deny"


def test_a_long_detail_is_cut_visibly_within_slacks_limit():
    code = slack.card_blocks(detailed_card("<" * 4000))[2]["text"]["text"]

    assert len(code) <= slack.SECTION_CHARS
    assert code.count("```") == 2 and "more characters: see the whole on the web" in code
