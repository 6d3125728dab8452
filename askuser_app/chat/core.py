"""The channel-neutral core of the chat surfaces (interface; bodies to be written).

Adapters call these from synchronous code (a Django view, or a thread);
each returns a ``Reply`` and changes state only through ``services``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from django.contrib.auth.models import User

from ..models import Prompt
from .base import Adapter, Card, Closed, Reply, Sender


def adapters() -> dict[str, Adapter]:
    """The configured adapters by name; an unconfigured channel is absent."""
    raise NotImplementedError


def card(prompt: Prompt) -> Card:
    """The pending prompt as a chat message (questions and options read once)."""
    raise NotImplementedError


def closed(prompt: Prompt) -> Closed:
    """The resolved prompt's message: what was asked and one outcome line."""
    raise NotImplementedError


def tap(sender: Sender, data: str) -> Reply:
    """A button: an option answers at once, Skip skips all, Other… and Answer… ask for text."""
    raise NotImplementedError


def own_words(sender: Sender, prompt_id: uuid.UUID, text: str) -> Reply:
    """The text given after Other… (a modal, a force_reply): the one question's free-text answer."""
    raise NotImplementedError


def answers(sender: Sender, prompt_id: uuid.UUID, texts: Mapping[str, str]) -> Reply:
    """An Answer… modal: one text per question key, each read as a plain-text reply reads it."""
    raise NotImplementedError


def reply(sender: Sender, text: str, *, prompt_id: uuid.UUID | None = None) -> Reply:
    """A plain-text message: a link code, or a reply to ``prompt_id`` (else the sender's oldest pending)."""
    raise NotImplementedError


def link(sender: Sender, code: str) -> Reply:
    """Link the sender's identity to the user a one-time code was made for."""
    raise NotImplementedError


def unlink(sender: Sender) -> Reply:
    """Forget the sender's link; their pending messages stay as they are."""
    raise NotImplementedError


def new_code(user: User, channel: str) -> str:
    """A one-time link code for ``user`` on ``channel``: 8 characters, 10 minutes, single use."""
    raise NotImplementedError


def seen(channel: str, event_id: str) -> bool:
    """True when this inbound event (update_id, interaction id, event_id) was handled before."""
    raise NotImplementedError
