"""What every channel shares: the shapes between the chat core and an adapter.

The core (``askuser_app.delivery.channels.chats.core``) turns a prompt into a ``Card`` and a
resolved prompt into a ``Closed``; an adapter (a ``ChatApp``: ``telegram``,
``slack``, ``discord``; or a ``Notifier``: ``email``, ``push``; each the ``adapter``
module of its folder in ``askuser_app/delivery/channels/``) draws those with its platform's SDK and
turns what the platform posts back (a tap, a modal, a reply) into a call of
the core, which answers with a ``Reply`` for the person. No adapter resolves
a prompt itself: every answer, skip and refusal goes through the core to
``askuser_app.domain.services``.

Buttons carry an ``Action`` encoded by ``encode``: a verb, the prompt's id
and an option's index, never a label, so a tap names what it means and fits
every platform's limit (Telegram's 64 bytes, Discord's 100 characters).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from django.urls import URLPattern

from askuser_app.domain.chars import ascii_int
from askuser_app.domain.textreply import TextQuestion

if TYPE_CHECKING:
    from askuser_app.models import Prompt

Verb = Literal["option", "other", "skip", "answer"]
_VERB_CODES: dict[Verb, str] = {"option": "o", "other": "x", "skip": "s", "answer": "t"}
_CODE_VERBS = {code: verb for verb, code in _VERB_CODES.items()}

MAX_ACTION_BYTES = 64  # Telegram's callback_data; Discord's custom_id allows 100


@dataclass(frozen=True)
class Action:
    """What a button means: choose option ``index``, give own words, skip all, or answer in text."""

    verb: Verb
    prompt_id: uuid.UUID
    index: int | None = None  # the option's position, for "option"


def encode(action: Action) -> str:
    """``o:<32 hex>:<index>``, at most 38 bytes."""
    tail = "" if action.index is None else f":{action.index}"
    return f"{_VERB_CODES[action.verb]}:{action.prompt_id.hex}{tail}"


def decode(data: str) -> Action | None:
    """The action a button's data names, or None for anything else (forged, stale format)."""
    parts = data.split(":")
    if len(parts) not in (2, 3) or parts[0] not in _CODE_VERBS or len(data.encode()) > MAX_ACTION_BYTES:
        return None
    try:
        prompt_id = uuid.UUID(hex=parts[1])
    except ValueError:
        return None
    verb = _CODE_VERBS[parts[0]]
    if verb == "option":
        index = ascii_int(parts[2], digits=2) if len(parts) == 3 else None
        return Action(verb, prompt_id, index) if index is not None else None
    return Action(verb, prompt_id) if len(parts) == 2 else None


@dataclass(frozen=True)
class Button:
    label: str  # as the person reads it; option labels exactly as the agent wrote them
    action: Action

    @property
    def data(self) -> str:
        return encode(self.action)


@dataclass(frozen=True)
class Card:
    """A pending prompt, as every chat draws it.

    ``buttons`` is the whole keyboard in order: for a single single-select
    question one button per option (as the agent ordered them), then Other…
    and Skip; otherwise Skip all (and, for adapters that cannot read message
    text, Answer…, see ``answer_button``). ``text`` is plain, unescaped text:
    each adapter escapes it for its platform."""

    prompt_id: uuid.UUID
    agent: str  # the agent's name
    header: str  # "Deploy" for one question; the agent's name and "asks" for several
    text: str  # the question(s), option descriptions, and for reply prompts how to reply
    buttons: tuple[Button, ...]
    url: str  # the prompt's page in the Control UI, absolute
    questions: tuple[TextQuestion, ...]  # for modals: one text input per question
    expires_at: datetime
    by_buttons: bool  # one single-select question: a tap answers; otherwise a reply does
    answer_button: Button | None = None  # "Answer…" for adapters that answer reply prompts in a modal


@dataclass(frozen=True)
class Closed:
    """A prompt's message once the prompt resolved: what was asked, the outcome, no buttons."""

    prompt_id: uuid.UUID
    header: str
    text: str  # what was asked (the Card's text without reply guidance)
    outcome: str  # one line: "Answered: Production — by alice on Telegram", "Expired"
    url: str


@dataclass(frozen=True)
class Sender:
    """Who posted to us, as the platform names them (already verified by the adapter)."""

    channel: str  # a chat app's name (``channels.chat_apps()``)
    user_id: str  # the platform's user id, as text
    chat_id: str = ""  # where a direct message to them goes (Telegram chat id, Slack DM channel)
    handle: str = ""  # a display name, for the links list


@dataclass(frozen=True)
class Reply:
    """What the core says back to the person, and what the adapter should do next."""

    text: str  # short notice (Telegram's answerCallbackQuery holds 200 characters)
    recorded: bool = False  # an answer, a skip or a link was stored
    prompt_id: uuid.UUID | None = None
    # "Other…" was tapped: ask this question's own-words answer (Slack/Discord modal, Telegram force_reply).
    ask_own_words: TextQuestion | None = None
    # "Answer…" was tapped: open a modal with one text input per question.
    ask_answers: tuple[TextQuestion, ...] = ()
    closed: Closed | None = None  # the message as it should now read, for an in-band update


class Temporary(Exception):
    """A send or edit that may work later (timeout, 5xx, 429): the delivery engine retries it.

    ``timed_out``: the host gave no answer in time, which counts towards pausing it."""

    def __init__(self, message: str, *, retry_after: float | None = None, timed_out: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.timed_out = timed_out


class Permanent(Exception):
    """A send or edit that will never work (blocked bot, unknown chat, bad token): recorded as failed."""


Ref = Mapping[str, Any]  # where a sent message lives: {"chat_id": …, "message_id": …}, {"channel": …, "ts": …}


class Adapter(Protocol):
    """One channel: a chat app (``ChatApp``) or a notifier (``Notifier``)."""

    name: ClassVar[str]  # "telegram": the surface a result names
    label: ClassVar[str]  # "Telegram": as a person reads it

    def configured(self) -> bool:
        """Its settings are present; an unconfigured channel is off and sends nothing."""
        ...

    async def send(self, address: str, card: Card) -> Ref:
        """Post ``card`` to ``address`` (the linked identity's chat, the notifier's recipient);
        raise Temporary or Permanent on failure. An SDK that blocks runs in ``engine.blocking``."""
        ...

    async def edit(self, ref: Ref, closed: Closed) -> None:
        """Rewrite a sent message as ``closed``, buttons removed."""
        ...


class ChatApp(Adapter, Protocol):
    """One chat platform, where a person links their identity. A module
    folder ``askuser_app/delivery/channels/<name>/`` declared with ``links=True`` exposes one as
    ``adapter`` in its module ``adapter``."""

    def how_to_link(self, code: str) -> str:
        """The one step a person takes with ``code`` (for the settings page)."""
        ...

    def urlpatterns(self) -> list[URLPattern]:
        """Its inbound endpoints, mounted under ``/chat/<name>/``."""
        ...


@dataclass(frozen=True)
class Recipient:
    """Where a ``Notifier`` sends one prompt's message, and how long after the prompt was made."""

    address: str  # an email address, a push subscription's id: the Delivery's address
    after: timedelta = timedelta(0)
    host: str = ""  # where it is sent, when not the channel's own (a push service's host:port)


@runtime_checkable
class Notifier(Adapter, Protocol):
    """A channel with no linked identity (email, Web Push): it names its own recipients.

    A notifier's folder, ``askuser_app/delivery/channels/<name>/``, exposes one as ``adapter`` in its
    module ``adapter``. ``recipients`` runs inside the creating transaction, and what it finds is
    kept between creates (``messages.notified``) until a user or a model its folder watches is
    saved or deleted, or a setting changes: it may read nothing else. A prompt that resolves
    before ``after`` has passed drops the row, so nothing is sent for it."""

    def recipients(self, prompt: Prompt) -> list[Recipient]:
        """The addresses this prompt's owner should hear from on this channel."""
        ...

    def reaches(self, owner_id: int) -> list[Recipient]:
        """The addresses an agent's news for ``owner_id`` goes to on this channel, at once."""
        ...


@dataclass
class Outbound:
    """One recorded call to a platform, for the admin's attempts list."""

    action: Literal["send", "edit"]
    ok: bool
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Noticing(Protocol):
    """An adapter that also sends a one-off text on its own (Discord's follow-up to a tap): a
    ``Delivery`` with a ``notice``, which the engine sends once and never edits."""

    async def notice(self, address: str, text: str) -> None:
        """Send ``text`` to ``address``; raise Temporary or Permanent on failure."""
        ...


@dataclass(frozen=True)
class News:
    """A coding agent's news for the person, about a session rather than a prompt: sent once, never edited."""

    text: str  # "Claude Code finished: …", "Claude Code is waiting for your input"
    title: str  # the session's: "Claude Code · billing-service"
    url: str  # the session's page in the Control UI, absolute
    tag: str  # one per session: a newer notification replaces an older one on a device


@runtime_checkable
class Telling(Protocol):
    """An adapter that tells a person an agent's news (``messages.agent_news``): every channel."""

    async def tell(self, address: str, news: News) -> None:
        """Send ``news`` to ``address`` (as ``send`` would a card); raise Temporary or Permanent on failure."""
        ...


@runtime_checkable
class Polling(ChatApp, Protocol):
    """An adapter that can also run without a public URL, fetching its inbound events itself:
    the server's own loop calls ``poll`` in the embedded mode (``channels.chats.polling``),
    ``manage.py chat_poll <name>`` in the scaled mode."""

    def polls(self) -> bool:
        """Its settings say it fetches its events rather than being posted them
        (Telegram without a webhook secret, Slack with an app-level token)."""
        ...

    async def poll(self) -> None:
        """Fetch inbound events (Telegram getUpdates, Slack Socket Mode) until cancelled;
        RuntimeError, with a sentence saying why, when the platform refuses."""
        ...
