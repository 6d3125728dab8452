"""Discord: DMs with buttons over the REST API, and signed interactions back.

Outbound calls go to a local fake of Discord's API (``DISCORD_API_URL``);
inbound requests are signed with a real Ed25519 key made for the test, whose
public half is the application's ``DISCORD_PUBLIC_KEY``.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from nacl.encoding import HexEncoder
from nacl.signing import SigningKey

from askuser_app.delivery.channels.base import Action, Button, Card, Closed, Permanent, Temporary
from askuser_app.delivery.channels.chats import core
from askuser_app.delivery.channels.discord import adapter as discord
from askuser_app.domain import services
from askuser_app.domain.textreply import TextQuestion
from askuser_app.models import ChatLink, Delivery, LinkCode, Prompt, SeenEvent
from askuser_app.runtime.asyncdb import database_call
from tests.chatfake import FakeAPI
from tests.conftest import EXTRAS, QUESTION, asgi_get, asgi_request, auth, payload, until_async

KEY = SigningKey.generate()
APP, TOKEN, USER, CHANNEL = "1100", "bot-token-1", "4242", "900"
ENDPOINT = "/chat/discord/interactions"
PROMPT = uuid.UUID("12345678123456781234567812345678")
HEX = PROMPT.hex


@pytest.fixture
def api(fake_api, settings):
    """Discord configured, its API the fake: a DM channel opens, messages post and edit."""
    settings.DISCORD_APPLICATION_ID = APP
    settings.DISCORD_PUBLIC_KEY = KEY.verify_key.encode(HexEncoder).decode()
    settings.DISCORD_BOT_TOKEN = TOKEN
    settings.DISCORD_API_URL = f"{fake_api.url}/api/v10"
    discord.adapter.channels.clear()
    fake_api.route("POST", "/api/v10/users/@me/channels", lambda call: (200, {"id": CHANNEL, "type": 1}))
    fake_api.route("POST", f"/api/v10/channels/{CHANNEL}/messages", lambda call: (200, {"id": "7001"}))
    fake_api.route("PATCH", f"/api/v10/channels/{CHANNEL}/messages/7001", lambda call: (200, {"id": "7001"}))
    yield fake_api
    discord.adapter.channels.clear()


def signed(body: bytes, *, key: SigningKey = KEY, at: int | None = None) -> dict[str, str]:
    timestamp = str(int(time.time()) if at is None else at)
    signature = key.sign(timestamp.encode() + body).signature.hex()
    return {"X-Signature-Ed25519": signature, "X-Signature-Timestamp": timestamp}


def post(client, interaction: Any, **signing: Any):
    raw = interaction if isinstance(interaction, bytes) else json.dumps(interaction).encode()
    return client.post(ENDPOINT, data=raw, content_type="application/json", headers=signed(raw, **signing))


def deploy_card(**fields: Any) -> Card:
    question = TextQuestion(
        key="deploy_target",
        header="Deploy",
        text="Where should this release go first?",
        multi_select=False,
        options=("Staging (Recommended)", "Production"),
        descriptions=("Safe, reversible", ""),
    )
    card = {
        "prompt_id": PROMPT,
        "agent": "release-bot",
        "header": "Deploy",
        "text": "Where should this release go first?\n  1. Staging (Recommended) — Safe, reversible\n  2. Production",
        "buttons": (
            Button("Staging (Recommended)", Action("option", PROMPT, 0)),
            Button("Production", Action("option", PROMPT, 1)),
            Button("Other…", Action("other", PROMPT)),
            Button("Skip", Action("skip", PROMPT)),
        ),
        "url": f"http://127.0.0.1:8765/s/support-42/#prompt-{HEX}",
        "questions": (question,),
        "expires_at": datetime(2030, 1, 1, tzinfo=UTC),
        "by_buttons": True,
    }
    return Card(**(card | fields))


def button(label: str, custom_id: str, style: int) -> dict[str, Any]:
    return {"type": 2, "style": style, "label": label, "custom_id": custom_id}


def page_link(url: str) -> dict[str, Any]:
    return {"type": 2, "style": 5, "label": "Open in askuser", "url": url}


# --- outbound ---------------------------------------------------------------------------


async def test_a_single_select_prompt_is_a_dm_with_one_button_per_option_then_other_skip_and_the_page(api):
    card = deploy_card()

    ref = await discord.adapter.send(USER, card)

    assert ref == {"channel_id": CHANNEL, "message_id": "7001"}
    (opened,) = api.of("/api/v10/users/@me/channels")
    assert opened.body == {"recipient_id": USER}
    assert opened.headers["authorization"] == f"Bot {TOKEN}"
    (sent,) = api.of(f"/api/v10/channels/{CHANNEL}/messages")
    assert sent.headers["authorization"] == f"Bot {TOKEN}"
    assert sent.body == {
        "content": "**Deploy**\nWhere should this release go first?\n"
        "  1\\. Staging \\(Recommended\\) — Safe, reversible\n  2\\. Production",
        "allowed_mentions": {"parse": []},
        "components": [
            {
                "type": 1,
                "components": [
                    button("Staging (Recommended)", f"o:{HEX}:0", 1),
                    button("Production", f"o:{HEX}:1", 1),
                ],
            },
            {
                "type": 1,
                "components": [button("Other…", f"x:{HEX}", 2), button("Skip", f"s:{HEX}", 2), page_link(card.url)],
            },
        ],
    }


async def test_a_reply_prompt_has_answer_skip_all_and_the_page(api):
    card = deploy_card(
        header="release-bot asks",
        text="The agent asks 2 questions: …",
        buttons=(Button("Skip all", Action("skip", PROMPT)),),
        by_buttons=False,
        answer_button=Button("Answer…", Action("answer", PROMPT)),
    )

    await discord.adapter.send(USER, card)

    (sent,) = api.of(f"/api/v10/channels/{CHANNEL}/messages")
    assert sent.body["components"] == [
        {
            "type": 1,
            "components": [button("Answer…", f"t:{HEX}", 1), button("Skip all", f"s:{HEX}", 2), page_link(card.url)],
        }
    ]


async def test_agent_text_can_neither_format_nor_mention(api):
    card = deploy_card(
        header="**Loud**",
        text="@everyone <@123> see [site](http://x) `code` ~~no~~ ||spoiler|| _it_\n"
        "# Heading\n- item\n-# small\n> quote",
    )

    await discord.adapter.send(USER, card)

    (sent,) = api.of(f"/api/v10/channels/{CHANNEL}/messages")
    assert sent.body["content"] == (
        "**\\*\\*Loud\\*\\***\n"
        "\\@everyone \\<\\@123\\> see \\[site\\]\\(http://x\\) \\`code\\` \\~\\~no\\~\\~ \\|\\|spoiler\\|\\| \\_it\\_\n"
        "\\# Heading\n\\- item\n\\-\\# small\n\\> quote"
    )
    assert sent.body["allowed_mentions"] == {"parse": []}


async def test_a_long_prompt_is_cut_to_one_message(api):
    await discord.adapter.send(USER, deploy_card(text="word " * 1000))

    (sent,) = api.of(f"/api/v10/channels/{CHANNEL}/messages")
    assert len(sent.body["content"]) == 2000
    assert sent.body["content"].endswith("…")


async def test_a_long_resolved_prompt_keeps_its_outcome_and_link(api):
    closed = Closed(PROMPT, "Deploy", "word " * 1000, "Skipped on the web by alice", "http://127.0.0.1:8765/p/1/")

    await discord.adapter.edit({"channel_id": CHANNEL, "message_id": "7001"}, closed)

    (edit,) = api.of(f"/api/v10/channels/{CHANNEL}/messages/7001")
    assert len(edit.body["content"]) == 2000
    assert edit.body["content"].endswith("…\n\n**Skipped on the web by alice**\n<http://127.0.0.1:8765/p/1/>")


async def test_the_dm_channel_is_opened_once_per_person(api):
    await discord.adapter.send(USER, deploy_card())
    await discord.adapter.send(USER, deploy_card())

    assert len(api.of("/api/v10/users/@me/channels")) == 1
    assert len(api.of(f"/api/v10/channels/{CHANNEL}/messages")) == 2


async def test_a_dm_channel_that_is_gone_is_opened_again(api):
    discord.adapter.channels[USER] = "555"

    ref = await discord.adapter.send(USER, deploy_card())

    assert ref == {"channel_id": CHANNEL, "message_id": "7001"}
    assert [c.path for c in api.calls] == [
        "/api/v10/channels/555/messages",
        "/api/v10/users/@me/channels",
        f"/api/v10/channels/{CHANNEL}/messages",
    ]


async def test_a_resolved_prompt_is_edited_to_its_outcome_without_buttons(api):
    closed = Closed(
        prompt_id=PROMPT,
        header="Deploy",
        text="Where should this release go first?",
        outcome="Answered: Production — by alice on Discord",
        url=f"http://127.0.0.1:8765/s/support-42/#prompt-{HEX}",
    )

    await discord.adapter.edit({"channel_id": CHANNEL, "message_id": "7001"}, closed)

    (edit,) = api.of(f"/api/v10/channels/{CHANNEL}/messages/7001", method="PATCH")
    assert edit.headers["authorization"] == f"Bot {TOKEN}"
    assert edit.body == {
        "content": "**Deploy**\nWhere should this release go first?\n\n"
        f"**Answered: Production — by alice on Discord**\n<{closed.url}>",
        "allowed_mentions": {"parse": []},
        "components": [],
    }


async def test_rate_limits_and_outages_are_retried_later(api):
    api.route("POST", f"/api/v10/channels/{CHANNEL}/messages", lambda call: (429, {"retry_after": 1.5}))
    with pytest.raises(Temporary) as limited:
        await discord.adapter.send(USER, deploy_card())
    assert limited.value.retry_after == 1.5

    api.route("POST", f"/api/v10/channels/{CHANNEL}/messages", lambda call: (429, {}, {"Retry-After": "3"}))
    with pytest.raises(Temporary) as limited:
        await discord.adapter.send(USER, deploy_card())
    assert limited.value.retry_after == 3.0

    api.down(502)
    with pytest.raises(Temporary):
        await discord.adapter.send(USER, deploy_card())


async def test_an_unreachable_api_is_retried_later(api, settings):
    settings.DISCORD_API_URL = "http://127.0.0.1:9/api/v10"  # nothing listens on the discard port

    with pytest.raises(Temporary):
        await discord.adapter.send(USER, deploy_card())


async def test_a_person_who_cannot_be_messaged_is_given_up_on(api):
    api.route("POST", f"/api/v10/channels/{CHANNEL}/messages", lambda call: (403, {"code": 50007}))
    with pytest.raises(Permanent):
        await discord.adapter.send(USER, deploy_card())

    api.route("PATCH", f"/api/v10/channels/{CHANNEL}/messages/7001", lambda call: (404, {"code": 10008}))
    closed = Closed(PROMPT, "Deploy", "Where?", "Expired", "http://127.0.0.1:8765/")
    with pytest.raises(Permanent):
        await discord.adapter.edit({"channel_id": CHANNEL, "message_id": "7001"}, closed)


def test_it_is_configured_only_with_all_three_settings(settings):
    settings.DISCORD_APPLICATION_ID, settings.DISCORD_PUBLIC_KEY, settings.DISCORD_BOT_TOKEN = APP, "ab", ""
    assert not discord.adapter.configured()
    settings.DISCORD_BOT_TOKEN = TOKEN
    assert discord.adapter.configured()


def test_the_link_step_names_the_command():
    assert discord.adapter.how_to_link("K7Q2M9XD") == (
        "In a direct message to the askuser bot, type /askuser link K7Q2M9XD."
    )


# --- inbound: signatures and malformed requests ---------------------------------------


def test_a_ping_is_answered_with_a_pong(api, client):
    response = post(client, {"id": "1", "type": 1, "application_id": APP})

    assert response.status_code == 200
    assert response.json() == {"type": 1}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-Signature-Timestamp": "1700000000"},
        signed(b'{"type": 1}', key=SigningKey.generate()),
        signed(b'{"type": 2}'),  # signed for another body
        {**signed(b'{"type": 1}'), "X-Signature-Ed25519": "zz"},
    ],
    ids=["unsigned", "no signature", "another key", "another body", "not hex"],
)
def test_a_request_not_signed_by_the_application_is_refused(api, client, headers):
    response = client.post(ENDPOINT, data=b'{"type": 1}', content_type="application/json", headers=headers)

    assert response.status_code == 401
    assert response.json()["error"] == "bad_signature"


def test_a_signature_from_long_ago_is_refused(api, client):
    response = post(client, {"id": "1", "type": 1}, at=int(time.time()) - 3600)

    assert response.status_code == 401


def test_the_endpoint_is_absent_while_discord_is_not_configured(client, settings):
    settings.DISCORD_BOT_TOKEN = ""

    assert post(client, {"id": "1", "type": 1}).status_code == 404


def test_only_post_is_served(api, client):
    assert client.get(ENDPOINT).status_code == 405


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"\xff\xfe{}", "not UTF-8"),
        (b"{not json", "not UTF-8 JSON"),
        (b"[1, 2]", "a JSON object"),
        (b'{"type": "1"}', "integer type"),
        (b'{"type": 4, "id": "9"}', "type 4 are not handled"),
    ],
)
def test_a_malformed_interaction_is_refused_clearly(api, client, body, why):
    response = post(client, body)

    assert response.status_code == 400
    assert why in response.json()["detail"]
    assert api.calls == []


def test_a_huge_body_is_refused(api, client):
    response = post(client, {"type": 1, "padding": "x" * (200 * 1024)})

    assert response.status_code == 413


# --- modals -----------------------------------------------------------------------------


def test_other_opens_a_modal_for_the_question_own_words():
    question = deploy_card().questions[0]

    modal = discord.own_words_modal(PROMPT, question)

    assert modal == {
        "custom_id": f"x:{HEX}",
        "title": "Deploy: your own answer",
        "components": [
            {
                "type": 1,
                "components": [
                    {
                        "type": 4,
                        "custom_id": "deploy_target",
                        "style": 2,
                        "label": "Deploy",
                        "placeholder": "Where should this release go first?",
                        "required": True,
                        "max_length": 2000,
                    }
                ],
            }
        ],
    }


def test_answer_opens_a_modal_with_one_input_per_question_listing_its_options():
    deploy = deploy_card().questions[0]
    extras = TextQuestion("extras", "Extras", "Which extras?", True, ("Docs", "Changelog", "Blog post"))

    modal = discord.answers_modal(PROMPT, (deploy, extras))

    assert modal["custom_id"] == f"t:{HEX}"
    assert modal["title"] == "Your answer"
    inputs = [row["components"][0] for row in modal["components"]]
    assert [(i["custom_id"], i["label"], i["style"]) for i in inputs] == [
        ("deploy_target", "Deploy", 1),
        ("extras", "Extras", 1),
    ]
    assert inputs[0]["placeholder"] == "1. Staging (Recommended), 2. Production — or your own words"
    assert inputs[1]["placeholder"] == "1. Docs, 2. Changelog, 3. Blog post — numbers or labels, or your own words"


# --- registering the command ------------------------------------------------------------


def test_the_askuser_command_is_registered_as_the_global_command(api):
    api.route("PUT", f"/api/v10/applications/{APP}/commands", lambda call: (200, [{"id": "1", **call.body[0]}]))
    out = io.StringIO()

    call_command("discord_commands", stdout=out)

    (put,) = api.of(f"/api/v10/applications/{APP}/commands")
    assert put.headers["authorization"] == f"Bot {TOKEN}"
    (command,) = put.body
    assert command["name"] == "askuser"
    assert [(o["name"], [p["name"] for p in o.get("options", [])]) for o in command["options"]] == [
        ("link", ["code"]),
        ("unlink", []),
    ]
    assert "/askuser" in out.getvalue()


def test_registering_says_why_it_failed(api, settings):
    with pytest.raises(CommandError, match="404"):
        call_command("discord_commands")  # the fake has no such application
    settings.DISCORD_BOT_TOKEN = ""
    with pytest.raises(CommandError, match="DISCORD_BOT_TOKEN"):
        call_command("discord_commands")


# --- follow-ups -------------------------------------------------------------------------


async def test_a_follow_up_is_an_ephemeral_notice_through_the_interaction_webhook(api):
    calls = iter([(404, {"code": 10015}), (200, {"id": "8001"})])  # not registered yet, then accepted
    api.route("POST", f"/api/v10/webhooks/{APP}/itoken", lambda call: next(calls))

    with pytest.raises(Temporary) as not_yet:  # the delivery engine tries it again shortly
        await discord.adapter.notice("itoken", "Answered: **Production**")
    await discord.adapter.notice("itoken", "Answered: **Production**")

    assert not_yet.value.retry_after == 1.0
    _refused, second = api.of(f"/api/v10/webhooks/{APP}/itoken")
    assert "authorization" not in second.headers  # the interaction's token is the credential
    assert second.body == {
        "content": "Answered: \\*\\*Production\\*\\*",
        "flags": 64,
        "allowed_mentions": {"parse": []},
    }


# --- end to end: the agent's API, the delivery engine, signed interactions ------------------------

DEADLINE = 10
PUBLIC = "https://askuser.example.com"
e2e = pytest.mark.django_db(transaction=True)


class Discord:
    """The fake API's answers (each message a new id), and what the tests read back."""

    def __init__(self, fake: FakeAPI) -> None:
        self.fake = fake
        self.ids = itertools.count(7001)
        self.interactions = itertools.count(1)
        fake.route("POST", f"/api/v10/channels/{CHANNEL}/messages", lambda call: (200, {"id": str(next(self.ids))}))
        fake.route("POST", f"/api/v10/webhooks/{APP}/itoken", lambda call: (200, {"id": "8001"}))

    async def wait_for(self, route: str, count: int = 1, *, method: str = "POST"):
        return await asyncio.to_thread(self.fake.wait_for, f"/api/v10/{route}", count, timeout=DEADLINE, method=method)

    def calls(self, route: str):
        return self.fake.of(f"/api/v10/{route}")

    async def sent(self, count: int = 1):
        return await self.wait_for(f"channels/{CHANNEL}/messages", count)

    async def edited(self, message: str = "7001"):
        [edit] = await self.wait_for(f"channels/{CHANNEL}/messages/{message}", method="PATCH")
        return edit

    async def post(self, kind: int, data: dict[str, Any], *, user: str = USER, key: SigningKey = KEY, again: str = ""):
        interaction = {
            "id": again or f"13{next(self.interactions):04d}",
            "application_id": APP,
            "type": kind,
            "token": "itoken",
            "version": 1,
            "channel_id": CHANNEL,
            "user": {"id": user, "username": "alice" if user == USER else "mallory", "global_name": None},
            "data": data,
        }
        raw = json.dumps(interaction).encode()
        headers = {**signed(raw, key=key), "Content-Type": "application/json"}
        return await asgi_request("POST", ENDPOINT, content=raw, headers=headers)

    async def tap(self, custom_id: str, **who: Any):
        return await self.post(3, {"custom_id": custom_id, "component_type": 2}, **who)

    async def submit(self, custom_id: str, values: dict[str, str], *, labels: bool = False, **who: Any):
        """A modal's submission, its inputs in action rows or (Discord's newer layout) in labels."""
        inputs = [{"type": 4, "custom_id": k, "value": v} for k, v in values.items()]
        rows = [{"type": 18, "component": i} if labels else {"type": 1, "components": [i]} for i in inputs]
        return await self.post(5, {"custom_id": custom_id, "components": rows}, **who)

    async def command(self, sub: str, **options: str):
        given = [{"name": name, "type": 3, "value": value} for name, value in options.items()]
        return await self.post(
            2, {"id": "99", "name": "askuser", "type": 1, "options": [{"name": sub, "type": 1, "options": given}]}
        )


@pytest.fixture
def chat(api, settings, served_loops):
    settings.ASKUSER_PUBLIC_URL = PUBLIC
    settings.ASKUSER_CHAT_RETRY_BASE = 0.05
    return Discord(api)


@pytest.fixture
def linked(owner):
    return core.link_by_hand(owner, "discord", USER, handle="alice")


async def create(token: str, *questions: dict[str, Any]) -> str:
    response = await asgi_request("POST", "/api/v1/prompts", json=payload(*questions), headers=auth(token))
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def wait(token: str, prompt_id: str) -> asyncio.Future:
    return asyncio.ensure_future(asgi_get(f"/api/v1/prompts/{prompt_id}?wait=30", auth(token)))


@database_call
def prompt_of(prompt_id: str) -> Prompt:
    return Prompt.objects.get(pk=prompt_id)


def ephemeral(text: str) -> dict[str, Any]:
    return {"type": 4, "data": {"content": text, "flags": 64, "allowed_mentions": {"parse": []}}}


async def deliveries_settle(prompt_id: str) -> None:
    """Until the prompt's messages are all closed, failed or dropped."""
    live = Delivery.objects.filter(prompt_id=prompt_id, state__in=["to_send", "to_edit", "sent"])
    await until_async(lambda: None if live.exists() else True)


DEPLOY = (
    "**Deploy**\nWhere should this release go first?\n\n• Staging \\(Recommended\\) — Safe, reversible\n• Production"
)


@e2e
async def test_a_tap_answers_the_waiting_agent_and_the_message_loses_its_buttons(chat, linked, token):
    prompt_id = await create(token)
    hexid, url = prompt_id.replace("-", ""), f"{PUBLIC}/p/{prompt_id}/"

    [sent] = await chat.sent()
    assert sent.body == {
        "content": DEPLOY,
        "allowed_mentions": {"parse": []},
        "components": [
            {
                "type": 1,
                "components": [
                    button("Staging (Recommended)", f"o:{hexid}:0", 1),
                    button("Production", f"o:{hexid}:1", 1),
                ],
            },
            {
                "type": 1,
                "components": [button("Other…", f"x:{hexid}", 2), button("Skip", f"s:{hexid}", 2), page_link(url)],
            },
        ],
    }
    assert chat.calls("users/@me/channels")[0].body == {"recipient_id": USER}
    row = await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="sent").first())
    assert row.ref == {"channel_id": CHANNEL, "message_id": "7001"}

    waiting = wait(token, prompt_id)
    response = await chat.tap(f"o:{hexid}:1")

    closed = {
        "content": f"{DEPLOY}\n\n**Answered: Production — by alice on Discord**\n<{url}>",
        "allowed_mentions": {"parse": []},
        "components": [],
    }
    assert response.status_code == 200
    assert response.json() == {"type": 7, "data": closed}  # the tapped message, updated at once
    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert {k: result[k] for k in ("status", "answers", "surface", "resolved_by")} == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
        "surface": "discord",
        "resolved_by": "alice",
    }
    [notice] = await chat.wait_for(f"webhooks/{APP}/itoken")
    assert notice.body == {
        "content": "Answered: Production — by alice on Discord",
        "flags": 64,
        "allowed_mentions": {"parse": []},
    }
    edit = await chat.edited()
    assert edit.headers["authorization"] == f"Bot {TOKEN}"  # never the interaction's 15-minute token
    assert edit.body == closed
    await deliveries_settle(prompt_id)
    # The notice went as a delivery of its own, sent by the engine like every message.
    follow_up = await database_call(Delivery.objects.exclude(notice="").get)(prompt_id=prompt_id)
    tries = await database_call(lambda: list(follow_up.tries.values_list("action", "ok")))()
    assert (follow_up.address, follow_up.state, tries) == ("itoken", "closed", [("notice", True)])


@e2e
async def test_other_opens_a_modal_whose_text_is_the_free_text_answer(chat, linked, token):
    prompt_id = await create(token)
    hexid = prompt_id.replace("-", "")
    await chat.sent()

    opened = await chat.tap(f"x:{hexid}")

    assert opened.json()["type"] == 9
    assert opened.json()["data"]["custom_id"] == f"x:{hexid}"
    assert [r["components"][0]["custom_id"] for r in opened.json()["data"]["components"]] == ["deploy_target"]
    assert (await prompt_of(prompt_id)).is_pending
    waiting = wait(token, prompt_id)

    submitted = await chat.submit(f"x:{hexid}", {"deploy_target": "2"}, labels=True)  # own words, though a number

    assert submitted.json() == ephemeral("Answered: own answer — by alice on Discord")
    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert result["answers"] == {"answers": {"deploy_target": ["2"]}}
    assert result["details"]["deploy_target"]["free_text"] == "2" and result["surface"] == "discord"
    edit = await chat.edited()
    assert "**Answered: own answer — by alice on Discord**" in edit.body["content"]
    assert edit.body["components"] == []
    await deliveries_settle(prompt_id)


@e2e
async def test_skip_skips_and_the_agent_hears_no_answer(chat, linked, token):
    prompt_id = await create(token)
    await chat.sent()
    waiting = wait(token, prompt_id)

    response = await chat.tap(f"s:{prompt_id.replace('-', '')}")

    assert response.json()["type"] == 7
    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert (result["status"], result["reason"], result["surface"], result["resolved_by"]) == (
        "no_answer",
        "skipped",
        "discord",
        "alice",
    )
    edit = await chat.edited()
    assert "**Skipped on Discord by alice**" in edit.body["content"]
    await deliveries_settle(prompt_id)


@e2e
async def test_a_multi_question_prompt_is_answered_in_one_modal(chat, linked, token):
    prompt_id = await create(token, QUESTION, EXTRAS)
    hexid, url = prompt_id.replace("-", ""), f"{PUBLIC}/p/{prompt_id}/"
    [sent] = await chat.sent()
    assert sent.body["content"].startswith(
        "**helper asks**\nThe agent asks 2 questions:\n\n1\\. Deploy \\(deploy\\_target\\)"
    )
    assert sent.body["components"] == [
        {
            "type": 1,
            "components": [button("Answer…", f"t:{hexid}", 1), button("Skip all", f"s:{hexid}", 2), page_link(url)],
        }
    ]

    opened = (await chat.tap(f"t:{hexid}")).json()

    assert opened["type"] == 9
    assert opened["data"] == discord.answers_modal(uuid.UUID(prompt_id), await questions_of(prompt_id))
    assert [r["components"][0]["label"] for r in opened["data"]["components"]] == ["Deploy", "Extras"]
    waiting = wait(token, prompt_id)

    submitted = await chat.submit(f"t:{hexid}", {"deploy_target": "2", "extras": "Docs, Blog post"})

    assert submitted.json() == ephemeral("Answered: Deploy: Production; Extras: Docs, Blog post — by alice on Discord")
    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert result["answers"] == {"answers": {"deploy_target": ["Production"], "extras": ["Docs", "Blog post"]}}
    assert result["surface"] == "discord"
    edit = await chat.edited()
    assert "**Answered: Deploy: Production; Extras: Docs, Blog post — by alice on Discord**" in edit.body["content"]
    await deliveries_settle(prompt_id)


@database_call
def questions_of(prompt_id: str) -> tuple[TextQuestion, ...]:
    return core.card(Prompt.objects.get(pk=prompt_id)).questions


@e2e
async def test_an_unreadable_modal_answer_leaves_the_prompt_pending_and_says_what_is_missing(chat, linked, token):
    prompt_id = await create(token, QUESTION, EXTRAS)
    await chat.sent()

    submitted = await chat.submit(f"t:{prompt_id.replace('-', '')}", {"deploy_target": " ", "extras": "Docs"})

    answer = submitted.json()
    assert (answer["type"], answer["data"]["flags"]) == (4, 64)
    assert answer["data"]["content"] == (
        "Nothing was recorded: 1. Deploy left empty. Tap Answer… to fill in every question, or Skip all."
    )
    assert (await prompt_of(prompt_id)).is_pending
    assert chat.calls(f"channels/{CHANNEL}/messages/7001") == []


@e2e
async def test_a_strangers_tap_is_refused_and_changes_nothing(chat, linked, token):
    prompt_id = await create(token)
    await chat.sent()

    response = await chat.tap(f"o:{prompt_id.replace('-', '')}:0", user="777")

    assert response.json() == ephemeral("This question is not yours.")
    assert (await prompt_of(prompt_id)).is_pending
    assert chat.calls(f"webhooks/{APP}/itoken") == []


@e2e
async def test_a_stale_tap_after_a_web_answer_gets_a_short_notice(chat, linked, token, owner):
    prompt_id = await create(token)
    await chat.sent()
    await database_call(services.answer)(
        await prompt_of(prompt_id), {"deploy_target": "Staging (Recommended)"}, by=owner, surface="web"
    )
    edit = await chat.edited()
    assert "**Answered: Staging \\(Recommended\\) — by alice on the web**" in edit.body["content"]

    response = await chat.tap(f"o:{prompt_id.replace('-', '')}:1")

    assert response.json() == {"type": 7, "data": edit.body}  # the message as it now reads
    [notice] = await chat.wait_for(f"webhooks/{APP}/itoken")
    assert notice.body["content"].startswith("This prompt was already answered on the web by alice at ")
    prompt = await prompt_of(prompt_id)
    assert prompt.result["answers"] == {"answers": {"deploy_target": ["Staging (Recommended)"]}}
    await deliveries_settle(prompt_id)


@e2e
async def test_a_replayed_interaction_is_handled_once(chat, linked, token):
    prompt_id = await create(token)
    await chat.sent()
    custom_id = f"s:{prompt_id.replace('-', '')}"

    first = await chat.tap(custom_id, again="1399")
    again = await chat.tap(custom_id, again="1399")

    assert first.json()["type"] == 7
    assert again.json() == ephemeral("This was already handled.")
    prompt = await prompt_of(prompt_id)
    assert await database_call(prompt.events.filter(kind="skipped").count)() == 1
    await deliveries_settle(prompt_id)


@e2e
async def test_a_tap_signed_by_another_key_is_refused_before_anything_is_read(chat, linked, token):
    prompt_id = await create(token)
    await chat.sent()

    response = await chat.tap(f"s:{prompt_id.replace('-', '')}", key=SigningKey.generate())

    assert response.status_code == 401
    assert (await prompt_of(prompt_id)).is_pending
    assert not await database_call(SeenEvent.objects.exists)()


@e2e
async def test_the_api_down_for_a_while_loses_nothing(chat, linked, token):
    chat.fake.down(503)
    prompt_id = await create(token)
    await chat.wait_for("users/@me/channels", 3)  # retried, with backoff

    chat.fake.up()
    [sent] = await chat.sent()
    waiting = wait(token, prompt_id)
    await chat.tap(f"o:{prompt_id.replace('-', '')}:0")

    result = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert result["answers"] == {"answers": {"deploy_target": ["Staging (Recommended)"]}}
    edit = await chat.edited()
    assert chat.fake.calls.index(edit) > chat.fake.calls.index(sent)
    await deliveries_settle(prompt_id)
    assert len(chat.calls(f"channels/{CHANNEL}/messages")) == 1  # sent once, once it could be


@e2e
async def test_a_person_who_cannot_be_messaged_is_failed_for_good(chat, linked, token):
    chat.fake.route("POST", f"/api/v10/channels/{CHANNEL}/messages", lambda call: (403, {"code": 50007}))
    prompt_id = await create(token)
    await chat.sent()
    await deliveries_settle(prompt_id)

    row = await database_call(lambda: Delivery.objects.get(prompt_id=prompt_id))()
    assert (row.state, row.attempts) == ("failed", 1)
    assert "Discord answered 403" in row.last_error


# --- linking ----------------------------------------------------------------------------


@e2e
async def test_askuser_link_with_a_code_links_and_unlink_unlinks(chat, owner):
    code = await database_call(core.new_code)(owner, "discord")

    linked = await chat.command("link", code=code)
    reused = await chat.command("link", code=code)
    link = await database_call(ChatLink.objects.select_related("user").get)()
    unlinked = await chat.command("unlink")

    assert linked.json() == ephemeral("Linked to askuser as alice: questions for you will arrive here.")
    assert (link.user, link.channel, link.external_id, link.chat_id, link.handle) == (
        owner,
        "discord",
        USER,
        USER,
        "alice",
    )
    assert reused.json()["data"]["content"].startswith("This code is not valid or has expired.")
    assert unlinked.json() == ephemeral("Unlinked: askuser will send no more questions here.")
    assert not await database_call(ChatLink.objects.exists)()


@e2e
async def test_an_expired_code_links_nothing(chat, owner):
    code = await database_call(core.new_code)(owner, "discord")
    await database_call(LinkCode.objects.filter(code=code).update)(expires_at=timezone.now() - timedelta(seconds=1))

    response = await chat.command("link", code=code)

    assert response.json()["data"]["content"].startswith("This code is not valid or has expired.")
    assert not await database_call(ChatLink.objects.exists)()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("interaction", "why"),
    [
        ({"id": "5", "type": 3, "user": {"id": USER}}, "no data"),
        ({"id": "5", "type": 3, "user": {"id": USER}, "data": {}}, "no custom_id"),
        ({"id": "5", "type": 5, "user": {"id": USER}, "data": {"custom_id": f"x:{HEX}"}}, "no components"),
        ({"id": "5", "type": 5, "user": {"id": USER}, "data": {"custom_id": "s:0", "components": []}}, "not one"),
        ({"id": "5", "type": 2, "data": {"name": "askuser"}}, "no user"),
        ({"id": "5", "type": 2, "user": {"id": "@me"}, "data": {"name": "askuser"}}, "not a Discord id"),
        ({"type": 3, "user": {"id": USER}, "data": {"custom_id": f"s:{HEX}"}}, "no id"),
    ],
)
def test_a_malformed_tap_modal_or_command_is_refused_and_not_remembered(api, client, interaction, why):
    response = post(client, interaction)

    assert response.status_code == 400
    assert why in response.json()["detail"]
    assert not SeenEvent.objects.exists()


@pytest.mark.django_db
def test_the_chat_apps_page_gives_a_code_and_the_discord_step(api, client, owner):
    client.force_login(owner)

    page = client.post("/settings/chat/", {"channel": "discord", "action": "code"})

    code = LinkCode.objects.get(user=owner, channel="discord").code
    assert f"In a direct message to the askuser bot, type /askuser link {code}." in page.content.decode()


EVIL = "echo ```done``` @everyone <@123> **bold**"


def detailed_card(detail: str) -> Card:
    question = TextQuestion("permission", "Bash", "Run this command?", False, ("Allow", "Deny"), detail=detail)
    text = f"Run this command?\n\n{detail}\n\n• Allow\n• Deny"
    return deploy_card(header="Bash", text=text, questions=(question,))


def test_a_detail_is_a_code_block_that_nothing_in_it_closes_and_that_mentions_no_one():
    sent = discord.message(detailed_card(EVIL))

    content = sent["content"]
    assert content.count("```") == 2  # the detail's own are broken by a zero-width space
    block = content.split("```")[1]
    assert "`\u200b`\u200b`\u200bdone" in block and "@everyone <@123> **bold**" in block
    assert content.endswith("```\n• Allow\n• Deny")
    assert sent["allowed_mentions"] == {"parse": []}


def test_a_long_detail_is_cut_visibly_within_discords_limit():
    content = discord.message(detailed_card("`" * 3000))["content"]

    assert len(content) <= discord.MAX_CONTENT
    assert content.count("```") == 2 and "more characters: see the whole in askuser" in content
    assert content.endswith("• Allow\n• Deny")
