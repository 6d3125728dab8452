"""Signed links: how a person answers from outside the Control UI with one tap, without logging in
(a mail's option link, a notification's button), the same check for every channel that has them.

A token names the prompt, its owner, what holds the link (the digest of the address a mail went
to, the device a push went to) and the option it chooses (or none: a link to the prompt's page).
It is signed with the server's secret and a salt of its own per channel and use, so a token made
for one is good for nothing else, and it is the credential: whoever has it may do what it names,
so it names as little as it can and dies early:

- **owner-bound**: the prompt must still be its owner's, the owner active, and the holder still
  theirs (``linked``): a mail's link dies with a change of address, a button with its device;
- **one-use**: the answer it gives resolves the prompt (``services``' compare-and-set), and every
  token of a resolved prompt is refused; no prompt outlives its token's age cap (``max_age``);
- **no one-tap Allow** (``choosable``): a token chooses an option only of a prompt of one
  single-select question; of a prompt a coding agent's hook asked, only the option that refuses
  (``hooks.refusal``), never one that allows: a web notification's button runs on a locked phone,
  the web has no "unlock first" for it, and an Allow there would run a command nobody read.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Literal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing

from askuser_app.domain import contract, hooks
from askuser_app.models import Prompt

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from askuser_app.models import Question

# A link outlives no prompt: none stays pending longer than its longest timeout or its
# extension limit after creation; the margin covers clocks and a slow delivery.
TOKEN_MARGIN = timedelta(minutes=10)
Why = Literal["expired", "invalid", "gone", "stranger"]


def max_age() -> timedelta:
    longest = max(contract.MAX_TIMEOUT, settings.ASKUSER_EXTEND_LIMIT_SECONDS)
    return timedelta(seconds=longest) + TOKEN_MARGIN


@dataclass(frozen=True)
class Link:
    """What a signed link names."""

    prompt_id: uuid.UUID
    user_id: int
    holder: str  # what holds it: a digest of the mail's address, the device's id
    option: int | None  # the option's index for a one-tap answer; None for the prompt itself


class BadLink(Exception):
    """A link that is good for nothing: ``status`` for the response, ``why`` for each channel to
    say in its own words (a mail's link, a notification's button)."""

    def __init__(self, status: int, why: Why) -> None:
        super().__init__(why)
        self.status = status
        self.why = why


def make(salt: str, prompt_id: uuid.UUID, user: User, holder: str, option: int | None = None) -> str:
    body = [prompt_id.hex, user.pk, holder, -1 if option is None else option]
    return signing.dumps(body, salt=salt, compress=True)


def read(salt: str, token: str) -> Link:
    """The link's content; ``BadLink`` for anything not signed by this server with ``salt``, or too old."""
    try:
        body = signing.loads(token, salt=salt, max_age=max_age())
    except signing.SignatureExpired:
        raise BadLink(410, "expired") from None
    except signing.BadSignature:
        raise BadLink(400, "invalid") from None
    try:
        prompt_hex, user_id, holder, option = body
        return Link(uuid.UUID(hex=prompt_hex), int(user_id), str(holder), None if option == -1 else int(option))
    except (TypeError, ValueError):
        raise BadLink(400, "invalid") from None


def linked(link: Link, holds: Callable[[User, str], bool]) -> tuple[Prompt, User]:
    """The prompt and its owner the link is good for (``holds(owner, link.holder)``: the holder is
    still the owner's); ``BadLink`` when it is good for nothing."""
    prompt = Prompt.objects.select_related("agent", "session").filter(pk=link.prompt_id).first()
    owner = get_user_model().objects.select_related("preferences").filter(pk=link.user_id).first()
    if prompt is None or owner is None:
        raise BadLink(404, "gone")
    if prompt.session.owner_id != owner.pk or not owner.is_active or not holds(owner, link.holder):
        raise BadLink(403, "stranger")
    return prompt, owner


def asked_by_hook(prompt: Prompt) -> bool:
    return bool(prompt.hook_event or prompt.hook_kind)


def choosable(prompt: Prompt, questions: Sequence[Question]) -> tuple[int, ...]:
    """The options a link may choose by itself, by index: every option of one single-select
    question with no rule of its own; of a prompt a hook asked, only the one that refuses."""
    if len(questions) != 1 or questions[0].multi_select:
        return ()
    labels = [option.label for option in questions[0].options.all()]
    if asked_by_hook(prompt):
        refusal = hooks.refusal(prompt.hook_kind)
        return tuple(index for index, label in enumerate(labels) if refusal and label == refusal)
    if questions[0].rule:
        return ()
    return tuple(range(len(labels)))


def choice(prompt: Prompt, questions: Sequence[Question], option: int | None) -> tuple[str, str] | None:
    """The question's key and the option's label that ``option`` chooses, when a link may choose it."""
    if option is None or option not in choosable(prompt, questions):
        return None
    return questions[0].key, questions[0].options.all()[option].label
