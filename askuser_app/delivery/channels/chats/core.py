"""The channel-neutral core of the chat surfaces.

Adapters call these from synchronous code (a Django view, or a thread);
each returns a ``Reply`` and changes state only through ``services``: every
answer and skip names the platform as its surface and the linked user as
who gave it. Only the prompt owner's linked identity may answer; anyone else
is told the question is not theirs, and nothing changes.
"""

from __future__ import annotations

import functools
import logging
import secrets
import uuid
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from askuser_app.delivery import engine
from askuser_app.delivery.channels.base import (
    Action,
    Button,
    Card,
    Closed,
    Reply,
    Sender,
    decode,
)
from askuser_app.domain import services, textreply, wording
from askuser_app.models import ChatLink, Delivery, LinkCode, PollOffset, Prompt, SeenEvent
from askuser_app.runtime import caching, i18n

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger("askuser")
P = ParamSpec("P")
R = TypeVar("R")

# No 0/O, 1/I/L, 2/Z, 5/S, 8/B: a code read off a screen and typed on a phone.
CODE_ALPHABET = "ACDEFGHJKMNPQRTUVWXY34679"
CODE_LENGTH = 8
CODE_VALID = timedelta(minutes=10)
SEEN_KEPT = timedelta(days=1)  # platforms retry within minutes; a day is plenty
# A chat not linked is told so once in this time: a stranger's flood gets one answer, not one each.
NOT_LINKED_EVERY = timedelta(minutes=5)


# --- adapters -------------------------------------------------------------------------
# --- rendering --------------------------------------------------------------------------


def prompt_url(prompt_id: uuid.UUID | str) -> str:
    """The prompt's page in the Control UI, absolute (``/p/<id>/`` sends its owner there)."""
    return settings.ASKUSER_PUBLIC_URL + reverse("prompt", args=[prompt_id])


def session_url(key: str) -> str:
    """A session's page in the Control UI, absolute."""
    return settings.ASKUSER_PUBLIC_URL + reverse("session", args=[key])


def _questions(prompt: Prompt) -> tuple[textreply.TextQuestion, ...]:
    return tuple(textreply.TextQuestion.of(q) for q in prompt.questions.prefetch_related("options"))


def _by_buttons(questions: tuple[textreply.TextQuestion, ...]) -> bool:
    return len(questions) == 1 and not questions[0].multi_select


def split_detail(card: Card) -> tuple[str, str, str] | None:
    """A one-tap card's text as (question, detail, options), for a chat that shows the detail as a
    code block of its own; None when it has no detail."""
    if not card.by_buttons or not card.questions or not card.questions[0].detail:
        return None
    question = card.questions[0]
    head = f"{question.text}\n\n{question.detail}\n\n"
    if not card.text.startswith(head):
        return None
    return question.text, question.detail, card.text.removeprefix(head)


def _asked(questions: tuple[textreply.TextQuestion, ...]) -> tuple[str, str]:
    """The header and what was asked, without how to reply."""
    if _by_buttons(questions):
        question = questions[0]
        lines = [question.text, "", *([question.detail, ""] if question.detail else [])]
        for label, description in zip(question.options, question.descriptions, strict=False):
            lines.append(f"• {label}" + (f" — {description}" if description else ""))
        return question.header, "\n".join(lines)
    rendered = textreply.render_prompt(questions)
    return "", rendered.removesuffix("\n\n" + textreply.reply_guidance(questions))


def card(prompt: Prompt) -> Card:
    """The pending prompt as a chat message (questions and options read once)."""
    questions = _questions(prompt)
    agent = prompt.agent.name
    header, text = _asked(questions)
    by_buttons = _by_buttons(questions)
    skip = Button(_("Skip"), Action("skip", prompt.pk))
    if by_buttons:
        options = [Button(label, Action("option", prompt.pk, i)) for i, label in enumerate(questions[0].options)]
        buttons: tuple[Button, ...] = (*options, Button(_("Other…"), Action("other", prompt.pk)), skip)
        answer_button = None
    else:
        header = _("%(agent)s asks") % {"agent": agent}
        text = textreply.render_prompt(questions)
        buttons = (Button(_("Skip all"), Action("skip", prompt.pk)),)
        answer_button = Button(_("Answer…"), Action("answer", prompt.pk))
    return Card(
        prompt_id=prompt.pk,
        agent=agent,
        header=header,
        text=text,
        buttons=buttons,
        url=prompt_url(prompt.pk),
        questions=questions,
        expires_at=prompt.expires_at,
        by_buttons=by_buttons,
        answer_button=answer_button,
    )


def closed(prompt: Prompt) -> Closed:
    """The resolved prompt's message: what was asked and one outcome line."""
    questions = _questions(prompt)
    header, text = _asked(questions)
    if not header:
        header = _("%(agent)s asks") % {"agent": prompt.agent.name}
    return Closed(prompt_id=prompt.pk, header=header, text=text, outcome=outcome(prompt), url=prompt_url(prompt.pk))


def outcome(prompt: Prompt) -> str:
    """One line: "Answered: Production — by alice on Telegram", "Expired: no answer before the deadline"."""
    which = wording.outcome_of(prompt.status, prompt.reason)
    if which is None:
        return wording.for_person(wording.STILL_PENDING)
    details: dict[str, Any] = (prompt.result or {}).get("details") or {}
    answers = [
        (q.header, list(details.get(q.key, {}).get("options", [])), bool(details.get(q.key, {}).get("free_text")))
        for q in prompt.questions.all()
    ]
    who = prompt.resolved_by.get_username() if prompt.resolved_by else None
    return wording.chat_outcome(which, prompt.surface, who, answers, wording.for_person)


# --- inbound ----------------------------------------------------------------------------


def in_their_language(handler: Callable[P, R]) -> Callable[P, R]:
    """Answers a sender in the language of the person their chat is linked to (English for strangers)."""

    @functools.wraps(handler)
    def handled(*args: P.args, **kwargs: P.kwargs) -> R:
        sender = args[0]
        assert isinstance(sender, Sender)
        link = link_of(sender)
        with translation.override(i18n.of_owner(link.user_id if link else None)):
            return handler(*args, **kwargs)

    return handled


def _not_yours() -> Reply:
    return Reply(_("This question is not yours."))


def _not_linked(sender: Sender) -> Reply:
    """How to link, or nothing (an empty text) when this chat was told so lately."""
    key = f"askuser:not-linked:{sender.channel}:{sender.chat_id or sender.user_id}"
    if not caching.claim(key, NOT_LINKED_EVERY.total_seconds()):
        return Reply("")
    return Reply(_("This chat is not linked to askuser. Open Chat apps in askuser, get a link code and send it here."))


def _stale() -> Reply:
    return Reply(_("This button is no longer valid."))


def link_of(sender: Sender) -> ChatLink | None:
    return ChatLink.objects.select_related("user").filter(channel=sender.channel, external_id=sender.user_id).first()


def _owned(sender: Sender, prompt_id: uuid.UUID) -> tuple[Prompt, User] | Reply:
    """The prompt and the user answering it, or what to tell a stranger."""
    prompt = Prompt.objects.select_related("session", "agent").filter(pk=prompt_id).first()
    link = link_of(sender)
    if prompt is None:
        return Reply(_("This question is no longer available."))
    if link is None or link.user_id != prompt.session.owner_id:
        return _not_yours()
    return prompt, link.user


def _still_pending(prompt: Prompt) -> Reply | None:
    """None while answers are accepted; else the notice a stale button gets."""
    if prompt.is_overdue():
        services.result_expiring_if_overdue(prompt)
        prompt.refresh_from_db()
    if prompt.is_pending:
        return None
    return _lost(services.AlreadyResolved(prompt))


def _lost(lost: services.AlreadyResolved) -> Reply:
    return Reply(lost.for_person, prompt_id=lost.prompt.pk, closed=closed(lost.prompt))


def _resolve(prompt: Prompt, user: User, channel: str, answers: Mapping[str, Any] | None, **detail: Any) -> Reply:
    """Answer (or, without ``answers``, skip) through services; the person is told what happened."""
    try:
        if answers is None:
            done = services.skip_all(prompt, by=user, surface=channel)
        else:
            done = services.answer(prompt, answers, by=user, surface=channel, detail=detail or None)
    except services.AlreadyResolved as lost:
        return _lost(lost)
    except services.InvalidAnswer as refused:
        return Reply(refused.for_person, prompt_id=prompt.pk)
    shown = closed(done)
    return Reply(shown.outcome, recorded=True, prompt_id=done.pk, closed=shown)


@in_their_language
def tap(sender: Sender, data: str) -> Reply:
    """A button: an option answers at once, Skip skips all, Other… and Answer… ask for text."""
    action = decode(data)
    if action is None:
        return _stale()
    owned = _owned(sender, action.prompt_id)
    if isinstance(owned, Reply):
        return owned
    prompt, user = owned
    questions = _questions(prompt)
    if action.verb == "skip":
        return _resolve(prompt, user, sender.channel, None)
    if action.verb == "option":
        if not _by_buttons(questions) or action.index is None or action.index >= len(questions[0].options):
            return _stale()
        return _resolve(prompt, user, sender.channel, {questions[0].key: [questions[0].options[action.index]]})
    waiting = _still_pending(prompt)
    if waiting is not None:
        return waiting
    if action.verb == "other" and len(questions) == 1:
        ask = _("Type your own answer to “%(header)s”.") % {"header": questions[0].header}
        return Reply(ask, prompt_id=prompt.pk, ask_own_words=questions[0])
    if action.verb == "answer":
        return Reply(_("Type your answers."), prompt_id=prompt.pk, ask_answers=questions)
    return _stale()


@in_their_language
def own_words(sender: Sender, prompt_id: uuid.UUID, text: str) -> Reply:
    """The text given after Other… (a modal, a force_reply): the one question's free-text answer."""
    owned = _owned(sender, prompt_id)
    if isinstance(owned, Reply):
        return owned
    prompt, user = owned
    questions = _questions(prompt)
    if len(questions) != 1:
        return reply(sender, text, prompt_id=prompt_id)
    if not text.strip():
        return Reply(_("Your answer was empty; type your own answer, or tap an option."), prompt_id=prompt.pk)
    return _resolve(prompt, user, sender.channel, {questions[0].key: text.strip()}, reply=text)


@in_their_language
def answers(sender: Sender, prompt_id: uuid.UUID, texts: Mapping[str, str]) -> Reply:
    """An Answer… modal: one text per question key, each read as a plain-text reply reads it."""
    owned = _owned(sender, prompt_id)
    if isinstance(owned, Reply):
        return owned
    prompt, user = owned
    questions = _questions(prompt)
    reading = textreply.Reading()
    for question in questions:
        values = textreply.read_part(question, texts.get(question.key, ""))
        if values is None:
            reading.missing.append(question.key)
        else:
            reading.answers[question.key] = values
    if not reading.complete:
        # A form has a field per question, so the reply guidance for a typed message does not fit here.
        waiting = _still_pending(prompt)
        names = ", ".join(f"{i}. {q.header}" for i, q in enumerate(questions, 1) if q.key in reading.missing)
        unread = _(
            "Nothing was recorded: %(questions)s left empty. Tap Answer… to fill in every question, or Skip all."
        )
        return waiting or Reply(unread % {"questions": names}, prompt_id=prompt.pk)
    return _read(prompt, user, sender.channel, questions, reading, "\n".join(texts.values()))


def _read(
    prompt: Prompt,
    user: User,
    channel: str,
    questions: tuple[textreply.TextQuestion, ...],
    reading: textreply.Reading,
    text: str,
) -> Reply:
    if not reading.complete:
        waiting = _still_pending(prompt)
        return waiting or Reply(textreply.what_is_missing(questions, reading), prompt_id=prompt.pk)
    read_as = textreply.how_it_was_read(questions, reading)
    return _resolve(prompt, user, channel, reading.answers, reply=text, read_as=read_as)


def looks_like_code(text: str) -> bool:
    text = text.strip().upper()
    return len(text) == CODE_LENGTH and all(c in CODE_ALPHABET for c in text)


@in_their_language
def reply(sender: Sender, text: str, *, prompt_id: uuid.UUID | None = None) -> Reply:
    """A plain-text message: a link code, or a reply to ``prompt_id`` (else the sender's oldest pending)."""
    linked = link_of(sender)
    # A code is read as one while the sender is unlinked, or when it is a code made for someone.
    if looks_like_code(text) and (linked is None or LinkCode.objects.filter(code=text.strip().upper()).exists()):
        return link(sender, text)
    if prompt_id is None:
        if linked is None:
            return _not_linked(sender)
        pending = Prompt.objects.filter(session__owner_id=linked.user_id, status=Prompt.Status.PENDING)
        oldest = pending.order_by("created_at").first()
        if oldest is None:
            return Reply(_("Nothing is waiting for your answer right now."))
        prompt_id = oldest.pk
    owned = _owned(sender, prompt_id)
    if isinstance(owned, Reply):
        return owned
    prompt, user = owned
    questions = _questions(prompt)
    return _read(prompt, user, sender.channel, questions, textreply.read_reply(questions, text), text)


# --- linking ------------------------------------------------------------------------------


def link(sender: Sender, code: str) -> Reply:
    """Link the sender's identity to the user a one-time code was made for."""
    code, now = code.strip().upper(), timezone.now()
    invalid = Reply(_("This code is not valid or has expired. Get a new one in askuser under Chat apps."))
    with transaction.atomic():
        made = LinkCode.objects.select_related("user").filter(code=code, channel=sender.channel).first()
        # Used once: the compare-and-set decides between two messages with the same code.
        if made is None or not LinkCode.objects.filter(pk=made.pk, used_at=None, expires_at__gt=now).update(
            used_at=now
        ):
            return invalid
        ChatLink.objects.filter(channel=sender.channel, external_id=sender.user_id).delete()
        ChatLink.objects.filter(channel=sender.channel, user=made.user).delete()
        ChatLink.objects.create(
            user=made.user,
            channel=sender.channel,
            external_id=sender.user_id,
            chat_id=sender.chat_id or sender.user_id,
            handle=sender.handle[:200],
        )
    log.info("Linked %s identity %s to %s.", sender.channel, sender.user_id, made.user.get_username())
    with translation.override(i18n.of_owner(made.user_id)):
        text = _("Linked to askuser as %(user)s: questions for you will arrive here.") % {
            "user": made.user.get_username()
        }
    return Reply(text, recorded=True)


def link_by_hand(user: User, channel: str, external_id: str, *, chat_id: str = "", handle: str = "") -> ChatLink:
    """Staff link an identity without a code (``manage.py linkchat``); an earlier link is replaced."""
    with transaction.atomic():
        ChatLink.objects.filter(channel=channel, external_id=external_id).delete()
        ChatLink.objects.filter(channel=channel, user=user).delete()
        return ChatLink.objects.create(
            user=user, channel=channel, external_id=external_id, chat_id=chat_id or external_id, handle=handle
        )


@in_their_language
def unlink(sender: Sender) -> Reply:
    """Forget the sender's link; their pending messages stay as they are."""
    deleted, _rows = ChatLink.objects.filter(channel=sender.channel, external_id=sender.user_id).delete()
    if not deleted:
        return Reply(_("This chat was not linked to askuser."))
    return Reply(_("Unlinked: askuser will send no more questions here."), recorded=True)


def new_code(user: User, channel: str) -> str:
    """A one-time link code for ``user`` on ``channel``: 8 characters, 10 minutes, single use."""
    now = timezone.now()
    LinkCode.objects.filter(user=user, channel=channel, used_at=None).delete()  # one live code at a time
    LinkCode.objects.filter(expires_at__lt=now - CODE_VALID).delete()
    while True:
        code = "".join(secrets.choice(CODE_ALPHABET) for _i in range(CODE_LENGTH))
        try:
            with transaction.atomic():
                LinkCode.objects.create(code=code, user=user, channel=channel, expires_at=now + CODE_VALID)
        except IntegrityError:  # the same code made twice: draw again
            continue
        return code


def seen(channel: str, event_id: str) -> bool:
    """True when this inbound event (update_id, interaction id, event_id) was handled before."""
    try:
        with transaction.atomic():
            SeenEvent.objects.create(channel=channel, event_id=event_id[:128])
    except IntegrityError:
        log.info("Ignored a repeated %s event %s.", channel, event_id)
        return True
    return False


def poll_offset(channel: str, account: str) -> int | None:
    """Where fetching ``account``'s events on ``channel`` goes on; None before its first."""
    return PollOffset.objects.filter(channel=channel, account=account).values_list("next_id", flat=True).first()


def keep_poll_offset(channel: str, account: str, next_id: int) -> None:
    PollOffset.objects.update_or_create(
        channel=channel, account=account, defaults={"next_id": next_id, "at": timezone.now()}
    )


def prune_seen() -> int:
    deleted, _rows = SeenEvent.objects.filter(at__lt=timezone.now() - SEEN_KEPT).delete()
    return deleted


# --- for adapters: which prompt a message belongs to ----------------------------------------


def prompt_of(channel: str, **ref: Any) -> uuid.UUID | None:
    """The prompt whose chat message has these ``ref`` fields (a reply to it), if any."""
    lookups = {f"ref__{name}": value for name, value in ref.items()}
    message = Delivery.objects.filter(channel=channel, **lookups).order_by("-id").first()
    return message.prompt_id if message is not None else None


def remember(sender: Sender, prompt_id: uuid.UUID, **fields: Any) -> None:
    """Keep more about the sender's message of a prompt (the id of a follow-up question), in its ref."""
    with transaction.atomic():
        message = (
            Delivery.objects.select_for_update()
            .filter(prompt_id=prompt_id, channel=sender.channel, link__external_id=sender.user_id)
            .first()
        )
        if message is not None:
            message.ref = {**message.ref, **fields}
            message.save(update_fields=["ref"])


def notice(prompt_id: uuid.UUID, channel: str, address: str, text: str) -> None:
    """``text`` to go once to ``address``, on its own (Discord's follow-up to a tap): recorded for
    the delivery engine, which is woken to send it."""
    owner = Prompt.objects.filter(pk=prompt_id).values_list("session__owner_id", flat=True).get()
    Delivery.objects.create(
        prompt_id=prompt_id, owner_id=owner, channel=channel, address=address, host=channel, notice=text
    )
    engine.wake()
