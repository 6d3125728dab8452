"""Chat messages of prompts: recorded with the change, sent and edited by a background loop.

The request that creates or resolves a prompt never talks to a platform. Its
transaction records a ``ChatMessage`` per linked identity of the owner
(``prompt_created``) or marks the prompt's messages for an edit
(``prompt_resolved``), both called from ``services``; after commit a
per-process loop, like the webhooks' (``askuser_app/delivery/webhooks.py``), sends.

Each row is one small state machine, so an edit never overtakes its send:
``to_send → sent → to_edit → closed``. A prompt resolved before its message
was sent drops the row; one resolved while the send is in flight is edited as
soon as the send lands (``record`` sees the row dropped and asks for the
edit). Claiming a try is a compare-and-set on the row's attempt count that
also pushes ``next_attempt_at`` past the try's timeout, so two processes
never make the same try, and a process that dies mid-try leaves the row for
any other. A platform's ``Temporary`` failure is retried with doubling
delays (at least its ``retry_after``); a ``Permanent`` one, or the last
try, marks the row failed, which staff see in the admin and the person on
the prompt's page.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, cast

from django.conf import settings
from django.db import transaction
from django.db.models import Min
from django.utils import timezone, translation

from askuser_app.delivery.chats.base import NOTIFIERS, Adapter, Card, Closed, Notifier, Permanent, Recipient, Temporary
from askuser_app.delivery.chats.core import adapters, card, closed, installed, label_of, prune_seen
from askuser_app.models import ChatAttempt, ChatLink, ChatMessage
from askuser_app.runtime import caching
from askuser_app.runtime.asyncdb import database_call
from askuser_app.runtime.background import Loop
from askuser_app.runtime.i18n import of_owner

if TYPE_CHECKING:
    from askuser_app.models import Prompt

log = logging.getLogger("askuser")

RECHECK = 5.0  # rows recorded by other processes are seen within this
CONCURRENCY = 8  # tries in flight per process
BACKOFF_CAP = 600.0
PRUNE_EVERY = 3600.0
LIVE = ("to_send", "to_edit")


def timeout() -> float:
    """Seconds one send or edit may take."""
    seconds: float = settings.ASKUSER_CHAT_TIMEOUT
    return seconds


def lease() -> timedelta:
    """How long a claimed try keeps its row from every other process: twice its timeout, so
    that only a process that died mid-try ever lets it run out."""
    return timedelta(seconds=2 * timeout())


def retry_delay(number: int, retry_after: float | None = None) -> float:
    """Seconds to wait after failed try ``number``: doubling, capped, ±20 % jitter, never under ``retry_after``."""
    first: float = settings.ASKUSER_CHAT_RETRY_BASE
    delay = min(first * 2.0 ** (number - 1), BACKOFF_CAP) * random.uniform(0.8, 1.2)
    return max(delay, retry_after or 0.0)


def adapters_on() -> dict[str, Adapter]:
    return adapters()


def _channels() -> list[str]:
    return list(adapters_on())


# --- recording (inside the creating and the resolving transaction) -----------------------------


def on_prompt_created(sender: Any, *, prompt: Prompt, **kwargs: Any) -> None:
    """``domain.signals.prompt_created``: the messages are written with the prompt."""
    prompt_created(prompt)


def on_prompt_resolved(sender: Any, *, prompt: Prompt, **kwargs: Any) -> None:
    """``domain.signals.prompt_resolved``: the edits are written with the transition."""
    prompt_resolved(prompt)


def prompt_created(prompt: Prompt) -> None:
    """A message to each recipient of every configured channel: the owner's linked chat
    identities, and whatever a ``Notifier`` (email, push) finds for the owner."""
    configured = adapters_on()
    if not configured:  # every channel is off: nothing is read or written
        return

    now = timezone.now()
    # Told apart by name, as chat/core.py finds them: isinstance() of a Protocol took 2 % of a create's CPU.
    linked = [name for name in configured if name not in NOTIFIERS]
    rows = [
        ChatMessage(prompt=prompt, channel=link.channel, link=link, chat_id=link.chat_id, next_attempt_at=now)
        for link in (ChatLink.objects.filter(user_id=prompt.session.owner_id, channel__in=linked) if linked else ())
    ]
    notifiers = {name: cast(Notifier, adapter) for name, adapter in configured.items() if name in NOTIFIERS}
    rows += [
        ChatMessage(prompt=prompt, channel=name, chat_id=to.address, next_attempt_at=now + to.after)
        for name, to in notified(prompt, notifiers)
    ]
    if rows:
        ChatMessage.objects.bulk_create(rows)
        transaction.on_commit(wake, robust=True)


# --- whom the notifiers reach, kept between creates ---------------------------------------------

# Each notifier's recipients are the owner's: their address and choice, their
# devices. Read on every create, they cost it about 1.3 ms of its 5.8 ms of
# CPU on PostgreSQL, and 155–168 creates a second against 192–204 without them
# (docs/PERFORMANCE.md); a person changes them a few times a year. So they are
# kept in the cache, under a generation that any save or delete of a user,
# their preferences or a device renews (``recipients_changed``), as does a
# changed setting: what was kept under an older generation is read again. How
# long they are kept bounds a change made without any of those (an
# ``update()``).
RECIPIENTS_KEPT_SECONDS = 3600
GENERATION_KEY = "askuser:recipients:generation"


def _owner_key(owner_id: Any) -> str:
    return f"askuser:recipients:{owner_id}"


def notified(prompt: Prompt, notifiers: dict[str, Notifier]) -> list[tuple[str, Recipient]]:
    """Each (channel, recipient) the notifiers reach for the prompt's owner: kept, or asked of them."""
    if not notifiers:
        return []
    key = _owner_key(prompt.session.owner_id)
    kept = caching.read(GENERATION_KEY, key)
    generation = kept.get(GENERATION_KEY) or _first_generation()
    channels = sorted(notifiers)
    if key in kept:
        kept_generation, kept_channels, found = kept[key]
        if (kept_generation, kept_channels) == (generation, channels):
            return list(found)
    found = [(name, to) for name, notifier in notifiers.items() for to in notifier.recipients(prompt)]
    caching.keep(key, (generation, channels, found), RECIPIENTS_KEPT_SECONDS)
    return found


def _first_generation() -> str:
    """A generation for a cache that lost it (or cannot be reached: then one
    that nothing kept carries). Another process may have made one meanwhile."""
    made = uuid.uuid4().hex
    caching.keep(GENERATION_KEY, made, None, unless_kept=True)
    current: str = caching.read(GENERATION_KEY).get(GENERATION_KEY) or made
    return current


def _renew_generation() -> None:
    caching.keep(GENERATION_KEY, uuid.uuid4().hex, None)


def recipients_changed(**kwargs: Any) -> None:
    """A user, their preferences or a device saved or deleted: every kept
    recipient is read again (connected in ``AskuserAppConfig.ready``); again
    once the change commits, so that nothing read before it did stays kept."""
    _renew_generation()
    transaction.on_commit(_renew_generation, robust=True)


def setting_changed(**kwargs: Any) -> None:
    """A setting changed (a test's override): every kept recipient is read again."""
    _renew_generation()


def prompt_resolved(prompt: Prompt) -> None:
    """Every sent message of the prompt is to be edited; one not sent yet never will be."""
    if not _channels():
        return

    messages = ChatMessage.objects.filter(prompt=prompt)
    edits = messages.filter(state=ChatMessage.State.SENT).update(
        state=ChatMessage.State.TO_EDIT, attempts=0, next_attempt_at=timezone.now(), last_error=""
    )
    # A send in flight finds its row dropped when it lands, and asks for the edit then.
    messages.filter(state=ChatMessage.State.TO_SEND).update(state=ChatMessage.State.DROPPED)
    if edits:
        transaction.on_commit(wake, robust=True)


# --- the loop ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claimed:
    """One try this process won the right to make."""

    message_id: int
    channel: str
    action: Literal["send", "edit"]
    number: int
    chat_id: str = ""
    ref: dict[str, Any] = field(default_factory=dict)
    card: Card | None = None
    closed: Closed | None = None
    language: str = settings.LANGUAGE_CODE  # the owner's: the card's words, and the adapter's


_trying: set[asyncio.Task[None]] = set()
_pruned_at = 0.0


async def _turn() -> datetime | None:
    # Only this event loop's tries count: a loop closed with tries pending left them behind.
    running = asyncio.get_running_loop()
    _trying.difference_update([t for t in _trying if t.done() or t.get_loop() is not running])
    for claimed in await database_call(claim_due)(CONCURRENCY - len(_trying)):
        task = asyncio.ensure_future(_try(claimed))
        _trying.add(task)
        task.add_done_callback(_trying.discard)
    await _prune()
    return await database_call(next_due)()


async def _prune() -> None:
    global _pruned_at
    if time.monotonic() - _pruned_at > PRUNE_EVERY:
        _pruned_at = time.monotonic()

        await database_call(prune_seen)()


loop = Loop("Sending chat messages", _turn, recheck=RECHECK)
ensure_running = loop.ensure_running
wake = loop.wake


def claim_due(limit: int) -> list[Claimed]:
    """Claim up to ``limit`` due sends and edits, longest waiting first."""

    if limit <= 0:
        return []
    now, allowed, configured = timezone.now(), settings.ASKUSER_CHAT_ATTEMPTS, adapters()
    due = ChatMessage.objects.filter(state__in=LIVE, next_attempt_at__lte=now).select_related(
        "prompt__agent", "prompt__session"
    )
    claimed: list[Claimed] = []
    languages: dict[int, str] = {}
    for row in due.order_by("next_attempt_at")[:limit]:
        mine = ChatMessage.objects.filter(pk=row.pk, state=row.state, attempts=row.attempts)
        if row.attempts >= allowed:  # its last try died with its process
            mine.update(state=ChatMessage.State.FAILED, last_error=row.last_error or "no answer from the last try")
        elif row.channel not in configured:
            mine.update(state=ChatMessage.State.FAILED, last_error=f"{row.channel} is not configured on this server")
        elif row.state == ChatMessage.State.TO_SEND and row.link_id is None and row.channel not in NOTIFIERS:
            mine.update(state=ChatMessage.State.DROPPED, last_error="unlinked before it was sent")
        elif row.state == ChatMessage.State.TO_SEND and not row.prompt.is_pending:
            # Resolved where no chat app was set up, so its rows were not marked: never send it as pending.
            mine.update(state=ChatMessage.State.DROPPED, last_error="resolved before it was sent")
        elif mine.update(attempts=row.attempts + 1, next_attempt_at=now + lease()):
            owner = row.prompt.session.owner_id
            if owner not in languages:
                languages[owner] = of_owner(owner)
            claimed.append(_claimed(row, card, closed, languages[owner]))
    return claimed


def _claimed(row: Any, card: Any, closed: Any, language: str) -> Claimed:
    """The try, its message rendered in the owner's language."""
    number = row.attempts + 1
    with translation.override(language):
        if row.state == "to_send":
            return Claimed(row.pk, row.channel, "send", number, row.chat_id, card=card(row.prompt), language=language)
        return Claimed(
            row.pk, row.channel, "edit", number, ref=dict(row.ref), closed=closed(row.prompt), language=language
        )


def next_due() -> datetime | None:
    at: datetime | None = ChatMessage.objects.filter(state__in=LIVE).aggregate(at=Min("next_attempt_at"))["at"]
    return at


@dataclass(frozen=True)
class Outcome:
    ok: bool
    ref: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    final: bool = False  # Permanent: not worth another try
    retry_after: float | None = None


async def _try(claimed: Claimed) -> None:
    started_at, began = timezone.now(), time.monotonic()
    outcome = await attempt(claimed)
    duration_ms = round((time.monotonic() - began) * 1000)
    try:
        await database_call(record)(claimed, started_at, duration_ms, outcome)
    except Exception:
        log.exception("Recording the %s of chat message %s failed.", claimed.action, claimed.message_id)
    loop.wake()  # the loop may be sleeping past this row's next try


async def attempt(claimed: Claimed) -> Outcome:
    """One send or edit through the channel's adapter, its failure as an Outcome."""

    try:
        adapter = installed()[claimed.channel]
        with translation.override(claimed.language):  # the words an adapter adds are the owner's language too
            if claimed.action == "send":
                assert claimed.card is not None
                ref = await asyncio.wait_for(adapter.send(claimed.chat_id, claimed.card), timeout())
                return Outcome(True, dict(ref))
            assert claimed.closed is not None
            await asyncio.wait_for(adapter.edit(claimed.ref, claimed.closed), timeout())
            return Outcome(True)
    except Temporary as failed:
        return Outcome(False, error=str(failed) or type(failed).__name__, retry_after=failed.retry_after)
    except Permanent as refused:
        return Outcome(False, error=str(refused) or type(refused).__name__, final=True)
    except TimeoutError:
        return Outcome(False, error=f"no answer within {timeout():g} s")
    except Exception as exc:  # an adapter's bug must not stop the loop; retried, and visible in the admin
        log.exception("The %s adapter failed on chat message %s.", claimed.channel, claimed.message_id)
        return Outcome(False, error=f"{type(exc).__name__}: {exc}")


def record(claimed: Claimed, started_at: datetime, duration_ms: int, outcome: Outcome) -> None:
    """Store the try and decide what happens next: the next step, a retry later, or failed."""

    State = ChatMessage.State
    now = timezone.now()
    with transaction.atomic():
        ChatAttempt.objects.create(
            message_id=claimed.message_id,
            action=claimed.action,
            started_at=started_at,
            duration_ms=duration_ms,
            ok=outcome.ok,
            error=outcome.error,
        )
        row = ChatMessage.objects.select_for_update().filter(pk=claimed.message_id).first()
        if row is None or row.attempts != claimed.number:
            return  # the row was claimed again after this try's lease ran out
        step = State.TO_SEND if claimed.action == "send" else State.TO_EDIT
        changes: dict[str, Any]
        if outcome.ok and claimed.action == "send":
            # Resolved while the send was in flight: the message now needs its edit.
            resolved = row.state == State.DROPPED
            changes = {"state": State.TO_EDIT if resolved else State.SENT, "ref": outcome.ref, "last_error": ""}
            changes |= {"attempts": 0, "next_attempt_at": now}
        elif outcome.ok:
            changes = {"state": State.CLOSED, "last_error": ""}
        elif row.state != step:
            changes = {"last_error": outcome.error}  # dropped meanwhile: nothing more to try
        elif outcome.final or claimed.number >= settings.ASKUSER_CHAT_ATTEMPTS:
            changes = {"state": State.FAILED, "last_error": outcome.error}
            log.warning(
                "Chat %s of message %s to %s failed after %s tries: %s",
                claimed.action,
                claimed.message_id,
                claimed.channel,
                claimed.number,
                outcome.error,
            )
        else:
            retry_at = now + timedelta(seconds=retry_delay(claimed.number, outcome.retry_after))
            changes = {"next_attempt_at": retry_at, "last_error": outcome.error}
        ChatMessage.objects.filter(pk=row.pk).update(**changes)


# --- for the prompt's web page ----------------------------------------------------------------


def undelivered(prompt_ids: list[Any]) -> dict[str, list[str]]:
    """For each prompt (by id as text) the channels its message never reached, for good."""
    if not prompt_ids or not _channels():
        return {}

    failed: dict[str, list[str]] = {}
    rows = ChatMessage.objects.filter(prompt_id__in=prompt_ids, state=ChatMessage.State.FAILED)
    for prompt_id, channel, ref in rows.values_list("prompt_id", "channel", "ref"):
        if not ref and label_of(channel) not in failed.get(str(prompt_id), []):
            failed.setdefault(str(prompt_id), []).append(label_of(channel))
    return failed
