"""Slack: cards drawn as Block Kit, sent and edited through slack_sdk against a local fake of Slack's Web API,
and Slack's signed requests (events, taps, modals, commands) refused or read."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import re
import socket
import struct
import threading
import time
import urllib.parse
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client
from django.urls import include, path

from askuser_app.chat import slack
from askuser_app.chat.base import Action, Button, Card, Closed, Permanent, Temporary
from askuser_app.textreply import TextQuestion

from .chatfake import FakeAPI, fake_api  # noqa: F401  (the fixture)

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
PROMPT = uuid.UUID("0123456789abcdef0123456789abcdef")
URL = "http://askuser.test/s/support-42/"

urlpatterns = [path("chat/slack/", include(slack.adapter.urlpatterns()))]
pytestmark = pytest.mark.urls(__name__)


@pytest.fixture
def slack_settings(settings, fake_api: FakeAPI):  # noqa: F811
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


# --- outbound through the SDK ----------------------------------------------------------


def posted(call_channel: str = "D024BE91L", ts: str = "1700000000.000100"):
    return lambda call: (200, {"ok": True, "channel": call_channel, "ts": ts})


async def test_send_opens_the_dm_of_a_user_id_and_posts_the_card(slack_settings, fake_api: FakeAPI):  # noqa: F811
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


async def test_send_to_a_known_dm_channel_posts_at_once(slack_settings, fake_api: FakeAPI):  # noqa: F811
    fake_api.route("POST", "/api/chat.postMessage", posted())
    await slack.adapter.send("D024BE91L", a_card())
    assert [c.path for c in fake_api.calls] == ["/api/chat.postMessage"]


async def test_edit_rewrites_the_message_without_buttons(slack_settings, fake_api: FakeAPI):  # noqa: F811
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
    fake_api: FakeAPI,  # noqa: F811
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
    assert len(fake_api.of("/api/chat.postMessage")) == 1  # the SDK does not retry behind the outbox's back


async def test_an_unreachable_slack_is_temporary(slack_settings):
    slack_settings.SLACK_API_URL = "http://127.0.0.1:9/api/"  # discard: nothing listens
    with pytest.raises(Temporary):
        await slack.adapter.edit({"channel": "D1", "ts": "1.2"}, Closed(PROMPT, "Deploy", "Where?", "Expired", URL))


async def test_an_edit_without_a_reference_is_permanent(slack_settings, fake_api: FakeAPI):  # noqa: F811
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


def test_a_tap_slack_did_not_sign_reaches_nothing(slack_settings, fake_api: FakeAPI):  # noqa: F811
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
def test_malformed_bodies_are_refused_or_ignored(slack_settings, fake_api, endpoint, body, content_type, status):  # noqa: F811
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
def test_messages_that_are_not_a_person_writing_in_the_dm_are_ignored(slack_settings, fake_api, event):  # noqa: F811
    assert post_event(event).status_code == 200
    assert fake_api.calls == []


def test_a_tap_on_the_link_button_does_nothing(slack_settings, fake_api: FakeAPI):  # noqa: F811
    payload = {
        "type": "block_actions",
        "user": {"id": "U1", "username": "alice"},
        "channel": {"id": "D1"},
        "actions": [{"action_id": "askuser_open", "type": "button"}],
    }
    assert post_interaction(payload).status_code == 200
    assert fake_api.calls == []


# --- Socket Mode ---------------------------------------------------------------------


class FakeSocketMode:
    """Slack's Socket Mode end on 127.0.0.1: a WebSocket that pushes envelopes and records the acknowledgements."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"ws://127.0.0.1:{self.server.getsockname()[1]}/link/?ticket=t1"
        self.acks: list[dict[str, Any]] = []
        self.changed = threading.Condition()
        self.peer: socket.socket | None = None
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            peer, _address = self.server.accept()
            request = b""
            while b"\r\n\r\n" not in request:
                request += peer.recv(1024)
            key = re.search(rb"Sec-WebSocket-Key: *(\S+)", request, re.I)[1]  # type: ignore[index]
            accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
            peer.sendall(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
            )
            with self.changed:
                self.peer = peer
                self.changed.notify_all()
            while True:
                opcode, data = self._frame(peer)
                if opcode == 0x9:  # ping
                    self._send(0xA, data)
                elif opcode == 0x1:
                    with self.changed:
                        self.acks.append(json.loads(data))
                        self.changed.notify_all()
                elif opcode == 0x8:
                    return

    @staticmethod
    def _frame(peer: socket.socket) -> tuple[int, bytes]:
        def exactly(count: int) -> bytes:
            data = b""
            while len(data) < count:
                chunk = peer.recv(count - len(data))
                if not chunk:
                    raise OSError("closed")
                data += chunk
            return data

        first, second = exactly(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", exactly(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", exactly(8))[0]
        mask = exactly(4) if second & 0x80 else b"\0\0\0\0"
        return first & 0x0F, bytes(b ^ mask[i % 4] for i, b in enumerate(exactly(length)))

    def _send(self, opcode: int, data: bytes) -> None:
        assert self.peer is not None
        size = len(data)
        head = bytes([0x80 | opcode, size]) if size < 126 else bytes([0x80 | opcode, 126]) + struct.pack("!H", size)
        self.peer.sendall(head + data)

    def push(self, envelope: dict[str, Any]) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.peer is not None, timeout=10), "the client never connected"
        self._send(0x1, json.dumps(envelope).encode())

    def ack(self, envelope_id: str, timeout: float = 10) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            return next((a for a in self.acks if a.get("envelope_id") == envelope_id), None)

        with self.changed:
            assert self.changed.wait_for(lambda: found() is not None, timeout=timeout), f"no ack of {envelope_id}"
            return found()  # type: ignore[return-value]

    def close(self) -> None:
        self.server.close()
        if self.peer is not None:
            self.peer.close()


@pytest.fixture
def socket_mode(slack_settings, fake_api: FakeAPI):  # noqa: F811
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
        thread.join(10)
        loop.close()
        end.close()


def test_socket_mode_answers_a_command_over_the_socket(socket_mode: FakeSocketMode, fake_api: FakeAPI):  # noqa: F811
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
