"""Slack: prompts as Block Kit messages in the app's direct message, answered by a tap, a modal or a reply.

Outbound, ``slack_sdk``'s ``WebClient`` (pointed at ``SLACK_API_URL``) posts a
card with ``chat.postMessage`` and rewrites it with ``chat.update`` once the
prompt resolved. The client is synchronous; ``send``/``edit`` run it on the
delivery engine's threads.

Inbound arrives two ways that share one set of handlers:

- over HTTP (``POST /chat/slack/events``, ``/interactivity``, ``/commands``),
  each request checked with ``slack_sdk``'s ``SignatureVerifier`` (v0 HMAC,
  five minutes) before a byte of it is parsed;
- over Socket Mode (with ``SLACK_APP_TOKEN``), where the app-level token
  authenticates the socket and nothing is signed: held by the server process
  itself in the embedded mode (``askuser_app/delivery/channels/chats/polling.py``), by ``manage.py chat_poll
  slack`` in the scaled mode.

Slack wants every request answered within 3 seconds. The core's calls take
tens of milliseconds, so they run before the answer; the one Slack call a
handler may make first (a modal must open within 3 s of its ``trigger_id``, a
notice goes with it) has a short timeout of its own.

Where a card goes: the identity's ``chat_id`` is the app's DM channel with
them (``D…``) when they linked from that DM, else their user id, which
``conversations.open`` turns into that DM channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import logging
import re
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

from django.conf import settings
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.builtin import SocketModeClient
from slack_sdk.socket_mode.client import BaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from askuser_app.delivery import egress, engine
from askuser_app.delivery.channels.base import Card, Closed, News, Permanent, Ref, Reply, Sender, Temporary
from askuser_app.delivery.channels.chats import core
from askuser_app.domain.chars import ascii_int
from askuser_app.domain.textreply import TextQuestion
from askuser_app.models import Delivery
from askuser_app.runtime import realtime

log = logging.getLogger("askuser")

NAME = "slack"
DEFAULT_API_URL = "https://slack.com/api/"
MAX_BODY = 256 * 1024  # Slack's payloads are a few kilobytes; a modal's state is the largest
SEND_TIMEOUT = 10  # seconds, for the delivery engine's calls
INLINE_TIMEOUT = 2  # seconds, for a call made before Slack's 3-second acknowledgement

# Block Kit's limits.
HEADER_CHARS = 150
SECTION_CHARS = 3000
BUTTON_CHARS = 75
TITLE_CHARS = 24
LABEL_CHARS = 2000
INPUT_CHARS = 3000

ACTIONS_BLOCK = "askuser_actions"
OPEN_ACTION = "askuser_open"  # the link button: Slack reports its taps too, and they mean nothing here
OWN_WORDS_VIEW = "askuser_own_words"  # the Other… modal's callback_id
OWN_WORDS_BLOCK = "own_words"
OWN_WORDS_INPUT = "text"

# Errors that may clear by themselves; every other refusal is final.
TEMPORARY_ERRORS = frozenset(
    {"ratelimited", "rate_limited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)


# --- settings and the client -------------------------------------------------------


def _setting(name: str) -> str:
    # Stripped: a secret of spaces is no secret (and SignatureVerifier refuses one).
    return str(getattr(settings, name, "") or "").strip()


def api_url() -> str:
    """``SLACK_API_URL`` with its trailing slash: the SDK joins method names onto it."""
    url = _setting("SLACK_API_URL") or DEFAULT_API_URL
    return url if url.endswith("/") else f"{url}/"


def web_client(timeout: int = SEND_TIMEOUT) -> WebClient:
    # No retry handlers: the delivery engine owns retries and their backoff, and an
    # inline call must fail fast rather than retry past Slack's 3 seconds.
    # The process's one TLS context (egress.trusted): urllib would load the authorities per call.
    token, tls = _setting("SLACK_BOT_TOKEN"), egress.trusted()
    return WebClient(token=token, base_url=api_url(), timeout=timeout, ssl=tls, retry_handlers=[])


@contextlib.contextmanager
def _mapped_errors() -> Iterator[None]:
    """The SDK's failures as the delivery engine reads them: Temporary (retry) or Permanent (give up)."""
    try:
        yield
    except SlackApiError as exc:
        status, error = exc.response.status_code, str(exc.response.get("error") or "")
        if status == 429 or error in TEMPORARY_ERRORS or status >= 500:
            retry_after = _retry_after(exc.response.headers) if status == 429 or "rate" in error else None
            raise Temporary(f"Slack answered {status} {error}".strip(), retry_after=retry_after) from exc
        raise Permanent(f"Slack refused the call: {error or status}") from exc
    except (OSError, http.client.HTTPException) as exc:  # timeouts, refused connections, TLS errors
        raise Temporary(f"Slack could not be reached: {exc}") from exc
    except SlackClientError as exc:  # a bad SLACK_API_URL, a malformed answer
        raise Permanent(f"Slack client error: {exc}") from exc


def _retry_after(headers: Mapping[str, Any]) -> float | None:
    """Slack's ``Retry-After`` in seconds; None without one, or with one that is not ASCII digits."""
    for name, value in headers.items():
        if name.lower() == "retry-after":
            seconds = ascii_int(str(value[0] if isinstance(value, list) and value else value).strip())
            return float(seconds) if seconds is not None else None
    return None


# --- text in and out ---------------------------------------------------------------


def escape(text: str) -> str:
    """Agent or person text inside mrkdwn: ``<!channel>`` and ``<url|label>`` stay literal."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_SLACK_MARKUP = re.compile(r"<([^<>|]*)(?:\|([^<>]*))?>")


def from_mrkdwn(text: str) -> str:
    """A person's message as they typed it: Slack wraps links (``<https://x|x>``) and escapes ``& < >``."""
    plain = _SLACK_MARKUP.sub(lambda m: m[2] if m[2] is not None else m[1], text)
    return plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plain(text: str, limit: int = BUTTON_CHARS) -> dict[str, Any]:
    return {"type": "plain_text", "text": _cut(text, limit) or "…"}


def _sections(text: str) -> list[dict[str, Any]]:
    """Escaped mrkdwn sections of at most 3000 characters, cut between lines where possible."""
    chunks: list[str] = []
    current = ""
    for line in text.split("\n"):
        # Escaping grows a character to at most five ("&amp;"), so a line cut this
        # short always fits once escaped.
        pieces = [escape(line)] if len(escape(line)) <= SECTION_CHARS else _hard_cut(line)
        for piece in pieces:
            joined = f"{current}\n{piece}" if current else piece
            if len(joined) <= SECTION_CHARS:
                current = joined
            else:
                chunks.append(current)
                current = piece
    if current or not chunks:
        chunks.append(current or " ")
    return [{"type": "section", "text": {"type": "mrkdwn", "text": chunk, "verbatim": True}} for chunk in chunks]


def _hard_cut(line: str) -> list[str]:
    step = SECTION_CHARS // 5
    return [escape(line[i : i + step]) for i in range(0, len(line), step)]


def _heading(header: str, text: str) -> list[dict[str, Any]]:
    return [{"type": "header", "text": _plain(header, HEADER_CHARS)}, *_sections(text)]


def _summary(header: str, text: str) -> str:
    """The message's ``text``: what a notification and a screen reader show."""
    first = next((line for line in text.split("\n") if line.strip()), "")
    return escape(_cut(f"{header}: {first}" if first else header, SECTION_CHARS))


CUT_NOTE = "… ({more} more characters: see the whole on the web)"


def code_block(text: str) -> dict[str, Any]:
    """``text`` in a mrkdwn code block of one section: escaped (no mention, no link), its
    backtick runs broken so it cannot close the block, cut visibly at Slack's limit."""
    fence, shown, note = "```", _inert(text), ""
    room = SECTION_CHARS - 2 * len(fence) - 2 - len(CUT_NOTE) - 8
    if len(shown) > SECTION_CHARS - 2 * len(fence) - 2:
        kept = text[:room]
        while len(_inert(kept)) > room:
            kept = kept[: room - (len(_inert(kept)) - len(kept))]
        shown, note = _inert(kept), "\n" + escape(CUT_NOTE.format(more=len(text) - len(kept)))
    return {"type": "section", "text": {"type": "mrkdwn", "text": f"{fence}\n{shown}\n{fence}{note}", "verbatim": True}}


def _inert(text: str) -> str:
    return escape(text).replace("`", "`\u200b")


def card_blocks(card: Card) -> list[dict[str, Any]]:
    """The pending prompt: header, text (a detail as a code block), one button per action, and the
    link to its page."""
    buttons: list[dict[str, Any]] = [
        {"type": "button", "action_id": button.data, "value": button.data, "text": _plain(button.label)}
        for button in card.buttons
    ]
    buttons.append({"type": "button", "action_id": OPEN_ACTION, "text": _plain(_("Open on the web")), "url": card.url})
    actions = {"type": "actions", "block_id": ACTIONS_BLOCK, "elements": buttons}
    parts = core.split_detail(card)
    if parts is None:
        return [*_heading(card.header, card.text), actions]
    question, detail, options = parts
    return [*_heading(card.header, question), code_block(detail), *_sections(options), actions]


def closed_blocks(closed: Closed) -> list[dict[str, Any]]:
    """The resolved prompt: what was asked, the outcome line, the link; no buttons."""
    link = f"<{escape(closed.url)}|{escape(_('Open on the web'))}>"
    return [
        *_heading(closed.header, closed.text),
        {"type": "section", "text": {"type": "mrkdwn", "text": escape(closed.outcome), "verbatim": True}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": link}]},
    ]


def own_words_view(prompt_id: uuid.UUID, question: TextQuestion) -> dict[str, Any]:
    """The Other… modal: one text input; ``private_metadata`` names the prompt."""
    return {
        "type": "modal",
        "callback_id": OWN_WORDS_VIEW,
        "private_metadata": prompt_id.hex,
        "title": _plain(question.header or _("Your answer"), TITLE_CHARS),
        "submit": _plain(_("Send"), TITLE_CHARS),
        "close": _plain(_("Cancel"), TITLE_CHARS),
        "blocks": [
            {
                "type": "input",
                "block_id": OWN_WORDS_BLOCK,
                "label": _plain(question.text, LABEL_CHARS),
                "element": {
                    "type": "plain_text_input",
                    "action_id": OWN_WORDS_INPUT,
                    "multiline": True,
                    "max_length": INPUT_CHARS,
                },
            }
        ],
    }


# --- inbound: what each kind of request does ------------------------------------


def on_events(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """An Events API envelope; the answer body, if any (``url_verification``'s challenge)."""
    kind = body.get("type")
    if kind == "url_verification":
        return {"challenge": str(body.get("challenge", ""))}
    if kind == "event_callback" and isinstance(body.get("event"), dict):
        _on_event(body["event"], str(body.get("event_id") or ""))
    else:
        log.info("Slack: ignored an events request of type %r.", kind)
    return None


def _on_event(event: Mapping[str, Any], event_id: str) -> None:
    # Only what a person typed in the app's DM: not the bot's own messages
    # (it hears itself), not edits, deletions or file shares (subtypes); a
    # thread reply also sent to the DM is still the person's reply.
    if event.get("type") != "message" or event.get("channel_type") != "im":
        log.info("Slack: ignored a %r event.", event.get("type"))
        return
    if event.get("subtype") not in (None, "thread_broadcast") or event.get("bot_id"):
        return
    if not isinstance(event.get("user"), str):
        return
    if not event_id:
        log.info("Slack: ignored a message event without an event_id.")
        return
    if core.seen(NAME, event_id):
        log.info("Slack: event %r was handled before (a retry); nothing done.", event_id)
        return
    channel, thread = str(event.get("channel") or ""), event.get("thread_ts")
    sender = Sender(NAME, event["user"], chat_id=channel or event["user"])
    thread_ts = thread if isinstance(thread, str) else None
    # A reply in a card's thread answers that card's prompt; anything else, the oldest pending.
    prompt_id = prompt_of_thread(channel, thread_ts) if thread_ts else None
    reply = core.reply(sender, from_mrkdwn(str(event.get("text") or "")), prompt_id=prompt_id)
    _say(channel, reply.text, thread_ts=thread_ts)


def prompt_of_thread(channel: str, ts: str) -> uuid.UUID | None:
    """The prompt whose card started the thread ``ts`` in ``channel``.

    (``core.prompt_of`` cannot be asked for a ref field named ``channel``: its
    own first parameter has that name.)"""
    return (
        Delivery.objects.filter(channel=NAME, ref__channel=channel, ref__ts=ts)
        .order_by("-id")
        .values_list("prompt_id", flat=True)
        .first()
    )


def on_interaction(payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """A button tap or a modal submitted; the answer body, if any (a modal's errors)."""
    kind = payload.get("type")
    user = payload.get("user")
    if not isinstance(user, dict) or not isinstance(user.get("id"), str):
        log.info("Slack: ignored an interaction without a user.")
        return None
    trigger = str(payload.get("trigger_id") or "")
    if kind not in ("block_actions", "view_submission"):
        log.info("Slack: ignored an interaction of type %r.", kind)
        return None
    if trigger and core.seen(NAME, f"trigger:{trigger}"):
        log.info("Slack: interaction %r was handled before; nothing done.", trigger)
        return None
    if kind == "block_actions":
        _on_actions(payload, user)
        return None
    return _on_submission(payload, user)


def _on_actions(payload: Mapping[str, Any], user: Mapping[str, Any]) -> None:
    channel = _channel_of(payload)
    chat_id = channel if channel.startswith("D") else user["id"]
    sender = Sender(NAME, user["id"], chat_id=chat_id, handle=str(user.get("username") or ""))
    actions = payload.get("actions")
    for action in actions if isinstance(actions, list) else []:
        value = action.get("value") if isinstance(action, dict) else None
        if not isinstance(value, str) or action.get("action_id") == OPEN_ACTION:
            continue  # the link button, or nothing of ours
        reply = core.tap(sender, value)
        if reply.ask_own_words is not None and reply.prompt_id is not None:
            _open_own_words(str(payload.get("trigger_id") or ""), reply, channel, user["id"])
        elif not reply.recorded:
            _notice(channel, user["id"], reply.text)


def _channel_of(payload: Mapping[str, Any]) -> str:
    channel = payload.get("channel")
    if isinstance(channel, dict) and isinstance(channel.get("id"), str):
        return str(channel["id"])
    container = payload.get("container")
    return str(container.get("channel_id") or "") if isinstance(container, dict) else ""


def _on_submission(payload: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, Any] | None:
    view = payload.get("view")
    if not isinstance(view, dict) or view.get("callback_id") != OWN_WORDS_VIEW:
        log.info("Slack: ignored a view that is not ours.")
        return None
    try:
        prompt_id = uuid.UUID(hex=str(view.get("private_metadata") or ""))
        text = view["state"]["values"][OWN_WORDS_BLOCK][OWN_WORDS_INPUT].get("value") or ""
    except (KeyError, TypeError, ValueError, AttributeError):
        log.info("Slack: ignored a malformed modal submission.")
        return None
    sender = Sender(NAME, user["id"], chat_id=user["id"], handle=str(user.get("username") or ""))
    reply = core.own_words(sender, prompt_id, str(text))
    if reply.recorded:
        return None  # an empty acknowledgement closes the modal
    return {"response_action": "errors", "errors": {OWN_WORDS_BLOCK: _cut(reply.text, LABEL_CHARS)}}


def on_command(fields: Mapping[str, str]) -> dict[str, Any]:
    """``/askuser link <code>`` or ``/askuser unlink``; the answer is shown to the person alone."""
    verb, _space, rest = fields.get("text", "").strip().partition(" ")
    user = fields.get("user_id", "")
    sender = Sender(NAME, user, chat_id=user, handle=fields.get("user_name", ""))
    if not user:
        text = _("Slack did not say who you are; try again.")
    elif verb.lower() == "link" and rest.strip():
        text = core.link(sender, rest.strip()).text
    elif verb.lower() == "unlink" and not rest.strip():
        text = core.unlink(sender).text
    else:
        text = _("Type /askuser link <code> with the code from the Chat apps page, or /askuser unlink.")
    return {"response_type": "ephemeral", "text": escape(text)}


# --- inbound: the Slack calls a handler makes before it answers -----------------


def _open_own_words(trigger: str, reply: Reply, channel: str, user: str) -> None:
    assert reply.ask_own_words is not None and reply.prompt_id is not None
    try:
        web_client(INLINE_TIMEOUT).views_open(
            trigger_id=trigger, view=own_words_view(reply.prompt_id, reply.ask_own_words)
        )
    except (SlackClientError, OSError, http.client.HTTPException):
        log.warning("Slack: the Other… modal did not open.", exc_info=True)
        _notice(channel, user, _("The answer box did not open; tap Other… again or answer on the web."))


def _notice(channel: str, user: str, text: str) -> None:
    """A line only ``user`` sees, under the message they tapped."""
    if not channel or not text:
        return
    try:
        web_client(INLINE_TIMEOUT).chat_postEphemeral(channel=channel, user=user, text=escape(text))
    except (SlackClientError, OSError, http.client.HTTPException):
        log.warning("Slack: a notice to %s was not shown.", user, exc_info=True)


def _say(channel: str, text: str, *, thread_ts: str | None) -> None:
    """The core's answer to a message, in the same DM (and thread)."""
    if not channel or not text:
        return
    try:
        web_client(INLINE_TIMEOUT).chat_postMessage(channel=channel, text=escape(text), thread_ts=thread_ts)
    except (SlackClientError, OSError, http.client.HTTPException):
        log.warning("Slack: an answer in %s was not posted.", channel, exc_info=True)


# --- inbound over HTTP -------------------------------------------------------------


def _verified(request: HttpRequest, handle: Callable[[str], HttpResponse]) -> HttpResponse:
    """Refuse what is not Slack's before reading any of it; then ``handle(body)``."""
    if not adapter.configured():
        return HttpResponse(status=404)
    declared = ascii_int(request.META.get("CONTENT_LENGTH")) or 0
    if declared > MAX_BODY or len(raw := request.body) > MAX_BODY:
        log.info("Slack: refused a body over %d bytes.", MAX_BODY)
        return HttpResponse(status=413)
    try:
        body = raw.decode("utf-8")
    except UnicodeDecodeError:
        log.info("Slack: refused a body that is not UTF-8.")
        return HttpResponse(status=400)
    verifier = SignatureVerifier(_setting("SLACK_SIGNING_SECRET"))
    try:
        valid = verifier.is_valid_request(body, dict(request.headers))
    except ValueError:  # a timestamp that is not a number
        valid = False
    if not valid:
        log.warning("Slack: refused a request with a bad or stale signature.")
        return HttpResponse(status=401)
    return handle(body)


def _answer(body: dict[str, Any] | None) -> HttpResponse:
    return HttpResponse(status=200) if body is None else JsonResponse(body)


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _form(text: str) -> dict[str, str] | None:
    try:
        fields = urllib.parse.parse_qs(text, keep_blank_values=True, strict_parsing=True, max_num_fields=40)
    except ValueError:
        return None
    return {name: values[-1] for name, values in fields.items()}


def _events_body(text: str) -> HttpResponse:
    body = _json_object(text)
    if body is None:
        log.info("Slack: refused an events body that is not a JSON object.")
        return HttpResponse(status=400)
    return _answer(on_events(body))


def _interactivity_body(text: str) -> HttpResponse:
    fields = _form(text)
    payload = _json_object(fields["payload"]) if fields and "payload" in fields else None
    if payload is None:
        log.info("Slack: refused an interactivity body without a JSON payload.")
        return HttpResponse(status=400)
    return _answer(on_interaction(payload))


def _commands_body(text: str) -> HttpResponse:
    fields = _form(text)
    if fields is None or "command" not in fields:
        log.info("Slack: refused a command body that is not a slash command.")
        return HttpResponse(status=400)
    return _answer(on_command(fields))


@csrf_exempt
@require_POST
def events(request: HttpRequest) -> HttpResponse:
    return _verified(request, _events_body)


@csrf_exempt
@require_POST
def interactivity(request: HttpRequest) -> HttpResponse:
    return _verified(request, _interactivity_body)


@csrf_exempt
@require_POST
def commands(request: HttpRequest) -> HttpResponse:
    return _verified(request, _commands_body)


# --- inbound over Socket Mode ------------------------------------------------------


def on_socket_request(client: BaseSocketModeClient, request: SocketModeRequest) -> None:
    """One Socket Mode envelope: the same handler as its HTTP endpoint, then the acknowledgement."""
    answer: dict[str, Any] | None = None
    try:
        answer = dispatch(request.type, request.payload)
    except Exception:
        log.exception("Slack: a Socket Mode %s request failed.", request.type)
    finally:
        close_old_connections()  # the SDK's threads run outside any request
    client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id, payload=answer))


def dispatch(kind: str, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    if kind == "events_api":
        return on_events(payload)
    if kind == "interactive":
        return on_interaction(payload)
    if kind == "slash_commands":
        return on_command({str(k): str(v) for k, v in payload.items()})
    log.info("Slack: ignored a Socket Mode request of type %r.", kind)
    return None


def _announcing_on(loop: asyncio.AbstractEventLoop) -> Callable[[BaseSocketModeClient, SocketModeRequest], None]:
    """``on_socket_request`` for the SDK's threads, whose announcements go out on ``loop``: the
    loop the server's waits and pages listen on (the embedded layer is this loop's alone)."""

    def listener(client: BaseSocketModeClient, request: SocketModeRequest) -> None:
        with realtime.sending_on(loop):
            on_socket_request(client, request)

    return listener


# --- the adapter ----------------------------------------------------------------------


class SlackAdapter:
    name: ClassVar[str] = NAME
    label: ClassVar[str] = "Slack"

    def configured(self) -> bool:
        return bool(_setting("SLACK_BOT_TOKEN") and _setting("SLACK_SIGNING_SECRET"))

    def polls(self) -> bool:
        return bool(_setting("SLACK_APP_TOKEN"))

    async def send(self, address: str, card: Card) -> Ref:
        return await engine.blocking(self._send, address, card)

    def _send(self, address: str, card: Card) -> Ref:
        client = web_client()
        with _mapped_errors():
            channel = address if address.startswith("D") else self._dm_with(client, address)
            sent = client.chat_postMessage(
                channel=channel,
                text=_summary(card.header, card.text),
                blocks=card_blocks(card),
                unfurl_links=False,
                unfurl_media=False,
            )
        return {"channel": str(sent["channel"]), "ts": str(sent["ts"])}

    @staticmethod
    def _dm_with(client: WebClient, user_id: str) -> str:
        opened = client.conversations_open(users=user_id)
        channel = opened.get("channel")
        if not isinstance(channel, dict) or not isinstance(channel.get("id"), str):
            raise Permanent("Slack opened no direct message channel.")
        return str(channel["id"])

    async def tell(self, address: str, news: News) -> None:
        await engine.blocking(self._tell, address, news)

    def _tell(self, address: str, news: News) -> None:
        client = web_client()
        link = {"type": "context", "elements": [{"type": "mrkdwn", "text": f"<{news.url}|askuser>"}]}
        blocks = [*_heading(news.title, news.text), link]
        with _mapped_errors():
            channel = address if address.startswith("D") else self._dm_with(client, address)
            client.chat_postMessage(
                channel=channel,
                text=_summary(news.title, news.text),
                blocks=blocks,
                unfurl_links=False,
                unfurl_media=False,
            )

    async def edit(self, ref: Ref, closed: Closed) -> None:
        await engine.blocking(self._edit, ref, closed)

    def _edit(self, ref: Ref, closed: Closed) -> None:
        if not ref.get("channel") or not ref.get("ts"):
            raise Permanent("The message's reference names no channel and timestamp.")
        with _mapped_errors():
            web_client().chat_update(
                channel=str(ref["channel"]),
                ts=str(ref["ts"]),
                text=_summary(closed.header, closed.outcome),
                blocks=closed_blocks(closed),
            )

    def how_to_link(self, code: str) -> str:
        return _("Send the code %(code)s to the askuser app in a direct message, or type /askuser link %(code)s.") % {
            "code": code
        }

    def urlpatterns(self) -> list[URLPattern]:
        return [
            path("events", events, name="slack_events"),
            path("interactivity", interactivity, name="slack_interactivity"),
            path("commands", commands, name="slack_commands"),
        ]

    async def poll(self) -> None:
        """Socket Mode until cancelled: Slack pushes the same requests over a socket we open."""
        token = _setting("SLACK_APP_TOKEN")
        if not token:
            raise RuntimeError("SLACK_APP_TOKEN is not set: Socket Mode needs an app-level token (xapp-…).")
        socket = SocketModeClient(app_token=token, web_client=web_client())
        socket.socket_mode_request_listeners.append(_announcing_on(asyncio.get_running_loop()))
        connecting = asyncio.ensure_future(asyncio.to_thread(socket.connect))
        try:
            try:
                await asyncio.shield(connecting)
            except SlackApiError as refused:  # apps.connections.open: a wrong token, Socket Mode off
                error = refused.response.get("error") or refused.response.status_code
                raise RuntimeError(f"Slack did not open a Socket Mode connection: {error}.") from refused
            except (SlackClientError, OSError, http.client.HTTPException) as failed:  # offline, a bad SLACK_API_URL
                raise RuntimeError(f"Slack could not be reached for a Socket Mode connection: {failed}.") from failed
            await asyncio.Event().wait()  # the SDK's threads do the work; a lost socket reconnects by itself
        finally:
            # Stopped while connecting: the connection is closed once it is made, not left open
            # behind a client already closed (its thread cannot be interrupted; it takes seconds at most).
            await asyncio.wait([connecting])
            await asyncio.to_thread(socket.close)


adapter = SlackAdapter()
