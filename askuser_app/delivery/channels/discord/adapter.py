"""Discord: prompts as direct messages with buttons, answers through signed interactions.

Outbound goes over Discord's REST API with the bot token (``DISCORD_API_URL``,
``Authorization: Bot …``): the DM channel is opened by the person's user id
(Discord answers with the same channel every time) and the message is posted
and later edited there. Interaction tokens last 15 minutes and a prompt may
last an hour, so they only ever carry the in-band answer to a tap.

Inbound is one endpoint, ``POST /chat/discord/interactions``. Its Ed25519
signature over timestamp + raw body is checked before anything is read; then
a tap, a modal or the ``/askuser`` command becomes one call of the core, and
the answer goes back in the HTTP response itself, within Discord's three
seconds. A notice that must follow an in-band update is handed to the
delivery engine once the response has been sent (a ``Delivery`` with a
``notice``), which posts it through the interaction's webhook and retries it.

No gateway: reading message text would need one, so reply prompts are
answered in a modal opened by the card's Answer… button instead.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

import httpx
import nacl.exceptions
import nacl.signing
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path
from django.utils.translation import gettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from askuser_app.delivery import egress
from askuser_app.delivery.channels.base import (
    Action,
    Button,
    Card,
    Closed,
    News,
    Permanent,
    Ref,
    Reply,
    Sender,
    Temporary,
    decode,
    encode,
)
from askuser_app.delivery.channels.chats import core
from askuser_app.domain.chars import ascii_int
from askuser_app.domain.contract import MAX_FREE_TEXT
from askuser_app.domain.textreply import TextQuestion, reply_guidance

log = logging.getLogger("askuser")

DEFAULT_API_URL = "https://discord.com/api/v10"
TIMEOUT = 10.0
MAX_BODY = 128 * 1024  # an interaction for a DM message is a few KiB
SIGNATURE_WINDOW = 5 * 60  # seconds a signed timestamp stays good, so a captured request cannot be replayed later

# Discord's limits.
MAX_CONTENT = 2000
MAX_LABEL = 80  # a button's label
MAX_ROWS, ROW_WIDTH = 5, 5
MAX_INPUT_LABEL = 45  # a modal's title and a text input's label
MAX_PLACEHOLDER = 100
MAX_INPUTS = 5

# Interaction and response types (discord.com/developers/docs/interactions/receiving-and-responding).
PING, APPLICATION_COMMAND, MESSAGE_COMPONENT, MODAL_SUBMIT = 1, 2, 3, 5
PONG, CHANNEL_MESSAGE, DEFERRED_UPDATE, UPDATE_MESSAGE, MODAL = 1, 4, 6, 7, 9
EPHEMERAL = 64
ACTION_ROW, BUTTON, TEXT_INPUT, LABEL = 1, 2, 4, 18
PRIMARY, SECONDARY, LINK = 1, 2, 5
SHORT, PARAGRAPH = 1, 2
NO_MENTIONS: dict[str, list[str]] = {"parse": []}  # agent text never pings anyone


def _setting(name: str) -> str:
    return str(getattr(settings, name, "") or "")


def api_url() -> str:
    return _setting("DISCORD_API_URL") or DEFAULT_API_URL


# --- escaping and rendering ------------------------------------------------------------

# Everything Discord's markdown gives a meaning anywhere in a line: emphasis,
# code, spoilers, masked links, mentions and timestamps (``<@id>``, ``<t:…>``).
_INLINE = re.compile(r"([\\*_~`|<>\[\]()@#])")
# What means something only at the start of a line: quotes, headings, subtext, lists.
_LINE_START = re.compile(r"^([ \t]*)([-+]|\d+(?=[.)]))", re.MULTILINE)


def escape(text: str) -> str:
    """``text`` shown exactly as written: no formatting, no mention, no link of its own."""
    escaped = _INLINE.sub(r"\\\1", text)
    return _LINE_START.sub(lambda m: f"{m[1]}\\{m[2]}" if not m[2][0].isdigit() else f"{m[1]}{m[2]}\\", escaped)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _content(head: str, body: str, tail: str = "") -> str:
    """``head``, ``body`` and ``tail``, the body cut so the whole fits one message."""
    room = MAX_CONTENT - len(head) - len(tail)
    if len(body) > room:
        body = body[: room - 1].rstrip("\\") + "…"  # never leave half of an escape
    return head + body + tail


CUT_NOTE = "… ({more} more characters: see the whole in askuser)"
FENCE = "```"


def code_block(text: str, room: int) -> str:
    """``text`` as a code block of at most ``room`` characters: every backtick followed by a
    zero-width space, so nothing in it closes the block early; cut visibly when it does not fit."""
    shown = _inert(text)
    if len(shown) + 2 * len(FENCE) + 2 <= room:
        return f"{FENCE}\n{shown}\n{FENCE}"
    note = "\n" + escape(CUT_NOTE.format(more=len(text)))
    fits = max(room - 2 * len(FENCE) - 2 - len(note), 0)
    kept = text[:fits]
    while len(_inert(kept)) > fits:
        kept = kept[: fits - (len(_inert(kept)) - len(kept))]
    note = "\n" + escape(CUT_NOTE.format(more=len(text) - len(kept)))
    return f"{FENCE}\n{_inert(kept)}\n{FENCE}{note}"


def _inert(text: str) -> str:
    return text.replace("`", "`\u200b")


def message(card: Card) -> dict[str, Any]:
    """A pending prompt as a message: its text (a detail as a code block), then its buttons and a
    link to its page."""
    head, parts = f"**{escape(card.header)}**\n", core.split_detail(card)
    if parts is not None:
        question, detail, options = escape(parts[0]) + "\n", parts[1], "\n" + escape(parts[2])
        room = MAX_CONTENT - len(head) - len(question) - len(options)
        if room >= 200:  # else the question and options themselves fill the message: as plain text
            content = head + question + code_block(detail, room) + options
            return {"content": content, "allowed_mentions": NO_MENTIONS, "components": components(card)}
    return {
        "content": _content(head, escape(_guided(card))),
        "allowed_mentions": NO_MENTIONS,
        "components": components(card),
    }


def _guided(card: Card) -> str:
    """A reply prompt's text, saying how to answer here: no message is read, the Answer… modal is."""
    if card.by_buttons or card.answer_button is None:
        return card.text
    asked = card.text.removesuffix("\n\n" + reply_guidance(card.questions))
    how = gettext("Tap %(button)s and type each answer: a number, a label or your own words.")
    return f"{asked}\n\n{how % {'button': card.answer_button.label}}"


def closed_message(closed: Closed) -> dict[str, Any]:
    """A resolved prompt's message: what was asked, the outcome, the page; no buttons."""
    tail = f"\n\n**{escape(closed.outcome)}**\n<{closed.url}>"
    content = _content(f"**{escape(closed.header)}**\n", escape(closed.text), tail)
    return {"content": content, "allowed_mentions": NO_MENTIONS, "components": []}


def components(card: Card) -> list[dict[str, Any]]:
    """Action rows: the options (as the agent ordered them), then Answer…/Other…, Skip and the page."""
    options = [b for b in card.buttons if b.action.verb == "option"]
    others = [b for b in card.buttons if b.action.verb != "option"]
    if card.answer_button is not None and card.answer_button not in card.buttons:
        others.insert(0, card.answer_button)
    first = [_button(b, PRIMARY) for b in options]
    rest = [_button(b, PRIMARY if b.action.verb == "answer" else SECONDARY) for b in others]
    rest.append({"type": BUTTON, "style": LINK, "label": _cut(gettext("Open in askuser"), MAX_LABEL), "url": card.url})
    rows = [*_chunks(first), *_chunks(rest)]
    return [{"type": ACTION_ROW, "components": row} for row in rows[:MAX_ROWS]]


def _button(button: Button, style: int) -> dict[str, Any]:
    return {"type": BUTTON, "style": style, "label": _cut(button.label, MAX_LABEL), "custom_id": button.data}


def _chunks(buttons: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [buttons[i : i + ROW_WIDTH] for i in range(0, len(buttons), ROW_WIDTH)]


def own_words_modal(prompt_id: uuid.UUID, question: TextQuestion) -> dict[str, Any]:
    """Other…: one paragraph input for the question's own-words answer."""
    return {
        "custom_id": encode(Action("other", prompt_id)),
        "title": _cut(gettext("%(header)s: your own answer") % {"header": question.header}, MAX_INPUT_LABEL),
        "components": [_input(question, PARAGRAPH, _cut(question.text, MAX_PLACEHOLDER))],
    }


def answers_modal(prompt_id: uuid.UUID, questions: Iterable[TextQuestion]) -> dict[str, Any]:
    """Answer…: one input per question, read as a plain-text reply to it is read."""
    return {
        "custom_id": encode(Action("answer", prompt_id)),
        "title": _cut(gettext("Your answer"), MAX_INPUT_LABEL),
        "components": [_input(q, SHORT, _placeholder(q)) for q in list(questions)[:MAX_INPUTS]],
    }


def _placeholder(question: TextQuestion) -> str:
    numbered = ", ".join(f"{i}. {label}" for i, label in enumerate(question.options, 1))
    how = gettext("numbers or labels, or your own words") if question.multi_select else gettext("or your own words")
    return _cut(f"{numbered} — {how}", MAX_PLACEHOLDER)


def _input(question: TextQuestion, style: int, placeholder: str) -> dict[str, Any]:
    field = {
        "type": TEXT_INPUT,
        "custom_id": question.key,
        "style": style,
        "label": _cut(question.header, MAX_INPUT_LABEL),
        "placeholder": placeholder,
        "required": True,
        "max_length": MAX_FREE_TEXT,  # what an answer may hold; Discord allows 4000
    }
    return {"type": ACTION_ROW, "components": [field]}


# --- the REST API ----------------------------------------------------------------------


class Unknown(Permanent):
    """Discord answered 404: no such channel or message (any more)."""


def _user_agent() -> str:
    return f"DiscordBot ({settings.ASKUSER_PUBLIC_URL}, 1)"  # the form Discord asks of bots: URL, version


def _headers() -> dict[str, str]:
    return {"Authorization": f"Bot {_setting('DISCORD_BOT_TOKEN')}", "User-Agent": _user_agent()}


def _retry_after(response: httpx.Response) -> float | None:
    """The body's ``retry_after`` (a JSON number, in seconds), else the ``Retry-After`` header's
    ASCII digits; None for anything else."""
    try:
        seconds = response.json().get("retry_after")
    except (ValueError, AttributeError):
        seconds = None
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and math.isfinite(seconds):
        return max(float(seconds), 0.0)
    given = ascii_int(response.headers.get("Retry-After", "").strip())
    return float(given) if given is not None else None


def _failure(response: httpx.Response) -> Exception | None:
    """What a non-success answer means for the delivery engine: retry it later, or never."""
    status = response.status_code
    if status < 400:
        return None
    said = f"Discord answered {status}: {response.text[:200]}"
    if status == 429:
        return Temporary(said, retry_after=_retry_after(response))
    if status >= 500:
        return Temporary(said)
    return Unknown(said) if status == 404 else Permanent(said)


async def _call(method: str, route: str, body: Mapping[str, Any]) -> dict[str, Any]:
    try:
        client = httpx.AsyncClient(base_url=api_url(), headers=_headers(), timeout=TIMEOUT, verify=egress.trusted())
        async with client:
            response = await client.request(method, route, json=body)
    except httpx.HTTPError as exc:  # timeouts, refused connections, broken answers
        raise Temporary(f"Discord could not be reached: {exc!r}") from exc
    failure = _failure(response)
    if failure is not None:
        raise failure
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise Permanent(f"Discord answered {response.status_code} without a JSON object: {response.text[:200]}")
    return answer


def is_snowflake(text: str) -> bool:
    """A Discord id: a 64-bit number, written in ASCII digits."""
    return ascii_int(text, digits=20) is not None


def _id(answer: Mapping[str, Any], what: str) -> str:
    value = answer.get("id")
    if not isinstance(value, str | int) or not is_snowflake(str(value)):
        raise Permanent(f"Discord's answer names no {what}: {json.dumps(answer)[:200]}")
    return str(value)


class DiscordAdapter:
    name: ClassVar[str] = "discord"
    label: ClassVar[str] = "Discord"

    def __init__(self) -> None:
        # user id -> DM channel id: Discord gives the same channel each time, so ask once per process.
        self.channels: dict[str, str] = {}

    def configured(self) -> bool:
        return all(_setting(n) for n in ("DISCORD_APPLICATION_ID", "DISCORD_PUBLIC_KEY", "DISCORD_BOT_TOKEN"))

    async def send(self, address: str, card: Card) -> Ref:
        """``address`` is the person's user id; the message goes to their DM channel."""
        channel = await self._channel(address)
        try:
            sent = await _call("POST", f"channels/{channel}/messages", message(card))
        except Unknown:
            if self.channels.pop(address, None) is None:
                raise
            channel = await self._channel(address)  # the remembered channel is gone: ask Discord again
            sent = await _call("POST", f"channels/{channel}/messages", message(card))
        return {"channel_id": channel, "message_id": _id(sent, "message")}

    async def tell(self, address: str, news: News) -> None:
        """``address`` is the person's user id; the news goes to their DM channel, mentioning no one."""
        text = f"**{escape(news.title)}**\n{escape(news.text)}"
        text = text[: MAX_CONTENT - len(news.url) - 4] + f"\n<{news.url}>"
        body = {"content": text, "allowed_mentions": NO_MENTIONS}
        channel = await self._channel(address)
        try:
            await _call("POST", f"channels/{channel}/messages", body)
        except Unknown:
            if self.channels.pop(address, None) is None:
                raise
            await _call("POST", f"channels/{await self._channel(address)}/messages", body)

    async def edit(self, ref: Ref, closed: Closed) -> None:
        channel, sent = ref.get("channel_id"), ref.get("message_id")
        if not channel or not sent:
            raise Permanent(f"not a Discord message: {dict(ref)}")
        await _call("PATCH", f"channels/{channel}/messages/{sent}", closed_message(closed))

    async def _channel(self, user_id: str) -> str:
        if not is_snowflake(user_id):
            raise Permanent(f"not a Discord user id: {user_id!r}")
        if user_id not in self.channels:
            opened = await _call("POST", "users/@me/channels", {"recipient_id": user_id})
            self.channels[user_id] = _id(opened, "DM channel")
        return self.channels[user_id]

    async def notice(self, address: str, text: str) -> None:
        """A follow-up through the webhook of the interaction whose token is ``address`` (the token
        is the credential: no bot token is sent), as an ephemeral notice."""
        route = f"webhooks/{_setting('DISCORD_APPLICATION_ID')}/{address}"
        body = {"content": escape(text), "flags": EPHEMERAL, "allowed_mentions": NO_MENTIONS}
        try:
            headers = {"User-Agent": _user_agent()}
            async with httpx.AsyncClient(base_url=api_url(), headers=headers, verify=egress.trusted()) as client:
                response = await client.post(route, json=body, timeout=TIMEOUT)
        except httpx.HTTPError as exc:
            raise Temporary(f"Discord could not be reached: {exc!r}") from exc
        failure = _failure(response)
        if isinstance(failure, Unknown):  # an interaction Discord has not registered yet, for a moment
            raise Temporary(str(failure), retry_after=1.0)
        if failure is not None:
            raise failure

    def how_to_link(self, code: str) -> str:
        return gettext("In a direct message to the askuser bot, type /askuser link %(code)s.") % {"code": code}

    def urlpatterns(self) -> list[URLPattern]:
        return [path("interactions", interactions, name="discord_interactions")]


adapter = DiscordAdapter()


# --- inbound: the interactions endpoint ------------------------------------------------


class BadInteraction(Exception):
    """A verified request whose body Discord would never send: answered 400, nothing stored."""


def verified(headers: Mapping[str, str], raw: bytes, *, now: float | None = None) -> bool:
    """Discord's Ed25519 signature over timestamp + body, by the application's public key."""
    signature, timestamp = headers.get("X-Signature-Ed25519", ""), headers.get("X-Signature-Timestamp", "")
    sent_at = ascii_int(timestamp)
    if sent_at is None or abs((time.time() if now is None else now) - sent_at) > SIGNATURE_WINDOW:
        return False
    try:
        key = nacl.signing.VerifyKey(bytes.fromhex(_setting("DISCORD_PUBLIC_KEY")))
        key.verify(timestamp.encode() + raw, bytes.fromhex(signature))
    except (ValueError, TypeError, nacl.exceptions.CryptoError):
        return False
    return True


def _refuse(status: int, code: str, detail: str) -> JsonResponse:
    log.info("Discord interaction refused (%s): %s", status, detail)
    return JsonResponse({"error": code, "detail": detail}, status=status)


@csrf_exempt
@require_POST
def interactions(request: HttpRequest) -> HttpResponse:
    # While Discord is not configured, chat/urls.py answers 404 before this runs.
    if len(request.body) > MAX_BODY:
        return _refuse(413, "body_too_large", f"An interaction is at most {MAX_BODY // 1024} KiB.")
    if not verified(request.headers, request.body):
        return _refuse(401, "bad_signature", "The Ed25519 signature is missing, stale or not this application's.")
    try:
        interaction = _parse(request.body)
        if interaction["type"] == PING:
            return JsonResponse({"type": PONG})
        handle = HANDLERS.get(interaction["type"])
        if handle is None:
            raise BadInteraction(f"Interactions of type {interaction['type']} are not handled here.")
        sender, event, act = _sender(interaction), _text(interaction, "id"), handle(interaction)
    except BadInteraction as exc:
        return _refuse(400, "bad_interaction", str(exc))
    if core.seen("discord", event):
        return _ephemeral(gettext("This was already handled."))
    return act(sender)


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        interaction = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadInteraction("The body is not UTF-8 JSON.") from exc
    if not isinstance(interaction, dict) or type(interaction.get("type")) is not int:
        raise BadInteraction("An interaction is a JSON object with an integer type.")
    return interaction


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadInteraction(f"The interaction has no {what} object.")
    return value


def _text(value: Mapping[str, Any], key: str) -> str:
    found = value.get(key)
    if not isinstance(found, str) or not found:
        raise BadInteraction(f"The interaction has no {key}.")
    return found


def _sender(interaction: Mapping[str, Any]) -> Sender:
    """The person: ``user`` in a DM, ``member.user`` in a server."""
    member = interaction.get("member")
    user = _object(member.get("user") if isinstance(member, dict) else interaction.get("user"), "user")
    user_id = _text(user, "id")
    if not is_snowflake(user_id):
        raise BadInteraction("The interaction's user id is not a Discord id.")
    handle = user.get("global_name") or user.get("username") or ""
    return Sender("discord", user_id, chat_id=user_id, handle=str(handle))


def _respond(kind: int, data: Mapping[str, Any] | None = None) -> JsonResponse:
    return JsonResponse({"type": kind, **({"data": data} if data is not None else {})})


def _ephemeral(text: str) -> JsonResponse:
    return _respond(CHANNEL_MESSAGE, {"content": escape(text), "flags": EPHEMERAL, "allowed_mentions": NO_MENTIONS})


# Each handler reads the interaction (a BadInteraction for anything malformed)
# and returns what to do for its sender, run only once the id is new.
Act = Callable[[Sender], HttpResponse]


def _tapped(interaction: Mapping[str, Any]) -> Act:
    custom_id = _text(_object(interaction.get("data"), "data"), "custom_id")
    token = interaction.get("token")
    return lambda sender: _tap(sender, custom_id, token if isinstance(token, str) else "")


def _tap(sender: Sender, custom_id: str, token: str) -> HttpResponse:
    reply = core.tap(sender, custom_id)
    action = decode(custom_id)
    prompt_id = reply.prompt_id or (action.prompt_id if action else None)
    if reply.ask_own_words is not None and prompt_id is not None:
        return _respond(MODAL, own_words_modal(prompt_id, reply.ask_own_words))
    if reply.ask_answers and prompt_id is not None:
        return _respond(MODAL, answers_modal(prompt_id, reply.ask_answers))
    return _in_band(reply, token)


def _in_band(reply: Reply, token: str) -> HttpResponse:
    """The tapped message updated at once when the prompt closed, the notice after it."""
    if reply.closed is None and not reply.recorded:
        return _ephemeral(reply.text)
    update = _respond(UPDATE_MESSAGE, closed_message(reply.closed)) if reply.closed else _respond(DEFERRED_UPDATE)
    if token and reply.text and reply.prompt_id is not None:
        return Then(update, follow_up(token, reply.text, reply.prompt_id))
    return update


def _submitted(interaction: Mapping[str, Any]) -> Act:
    data = _object(interaction.get("data"), "data")
    action = decode(_text(data, "custom_id"))
    values = dict(_inputs(data.get("components")))
    if action is None or action.verb not in ("other", "answer"):
        raise BadInteraction("The modal is not one this server opened.")
    if action.verb == "other":
        return lambda sender: _ephemeral(core.own_words(sender, action.prompt_id, next(iter(values.values()), "")).text)
    return lambda sender: _ephemeral(core.answers(sender, action.prompt_id, values).text)


def _inputs(rows: Any) -> Iterable[tuple[str, str]]:
    """Each text input's (custom_id, value), in action rows or in labels."""
    if not isinstance(rows, list):
        raise BadInteraction("The modal submission has no components.")
    found = []
    for row in rows:
        row = _object(row, "component")
        kind = row.get("type")
        inner = row.get("components") if kind == ACTION_ROW else [row.get("component")] if kind == LABEL else []
        for field in inner if isinstance(inner, list) else []:
            if isinstance(field, dict) and field.get("type") == TEXT_INPUT:
                value = field.get("value")
                found.append((_text(field, "custom_id"), value if isinstance(value, str) else ""))
    return found


def _command(interaction: Mapping[str, Any]) -> Act:
    data = _object(interaction.get("data"), "data")
    options = data.get("options")
    sub = options[0] if isinstance(options, list) and options and isinstance(options[0], dict) else {}
    if data.get("name") != "askuser" or sub.get("name") not in ("link", "unlink"):
        return lambda sender: _ephemeral(gettext("Use /askuser link <code> or /askuser unlink."))
    if sub["name"] == "unlink":
        return lambda sender: _ephemeral(core.unlink(sender).text)
    given = {o.get("name"): o.get("value") for o in sub.get("options") or [] if isinstance(o, dict)}
    code = given.get("code")
    if not isinstance(code, str) or not code.strip():
        return lambda sender: _ephemeral(gettext("Use /askuser link <code>, with the code from the Chat apps page."))
    return lambda sender: _ephemeral(core.link(sender, code.strip()).text)


HANDLERS: dict[int, Callable[[Mapping[str, Any]], Act]] = {
    APPLICATION_COMMAND: _command,
    MESSAGE_COMPONENT: _tapped,
    MODAL_SUBMIT: _submitted,
}


# --- the /askuser command --------------------------------------------------------------

SUB_COMMAND, STRING = 1, 3
GUILD_INSTALL, USER_INSTALL = 0, 1
IN_SERVER, IN_BOT_DM = 0, 1

# Discord shows these descriptions in its command picker, in English; the replies are translated.
COMMAND = {
    "name": "askuser",
    "type": 1,
    "description": "Answer your agents' questions here",
    "integration_types": [GUILD_INSTALL, USER_INSTALL],
    "contexts": [IN_SERVER, IN_BOT_DM],
    "options": [
        {
            "type": SUB_COMMAND,
            "name": "link",
            "description": "Link this Discord account to askuser with the code from its Chat apps page",
            "options": [{"type": STRING, "name": "code", "description": "The one-time code", "required": True}],
        },
        {"type": SUB_COMMAND, "name": "unlink", "description": "Stop receiving askuser questions here"},
    ],
}


def register_command() -> list[str]:
    """Make ``/askuser`` the application's one global command (PUT replaces the list); the names Discord holds."""
    route = f"applications/{_setting('DISCORD_APPLICATION_ID')}/commands"
    try:
        with httpx.Client(base_url=api_url(), headers=_headers(), timeout=TIMEOUT) as client:
            response = client.put(route, json=[COMMAND])
    except httpx.HTTPError as exc:
        raise Temporary(f"Discord could not be reached: {exc!r}") from exc
    failure = _failure(response)
    if failure is not None:
        raise failure
    answer = response.json()
    return [str(c.get("name")) for c in answer if isinstance(c, dict)] if isinstance(answer, list) else []


# --- after the response ----------------------------------------------------------------


class Then(HttpResponse):
    """``response``, and ``then`` called once the server has sent it.

    A follow-up message is accepted only after the interaction was answered,
    and the answer must leave within three seconds, so the follow-up is
    handed to the delivery engine at ``close()``, which the server calls when
    the response is out."""

    def __init__(self, response: HttpResponse, then: Callable[[], None]) -> None:
        super().__init__(response.content, status=response.status_code, content_type=response["Content-Type"])
        self.then: Callable[[], None] | None = then

    def close(self) -> None:
        # Before Django's own close, whose request_finished lets go of the connection ``then`` uses.
        then, self.then = self.then, None
        if then is not None:
            try:
                then()
            except Exception:  # the answer is out already: a lost notice is logged, never raised at the server
                log.exception("Recording a Discord follow-up failed.")
        super().close()


def follow_up(token: str, text: str, prompt_id: uuid.UUID) -> Callable[[], None]:
    """Posting an ephemeral notice after the in-band answer: a ``Delivery`` of the prompt whose
    address is the interaction's token, which the engine sends (``notice``) and retries."""
    return lambda: core.notice(prompt_id, "discord", token, text)
