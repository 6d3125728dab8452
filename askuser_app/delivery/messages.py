"""Messages of prompts to people: one kind of the delivery engine (``engine``), for every
chat app and notifier.

The request that creates or resolves a prompt never talks to a platform. Its
transaction records a ``Delivery`` per linked identity of the owner and per
recipient a ``Notifier`` (email, push) names (``prompt_created``), or marks the
prompt's deliveries for an edit (``prompt_resolved``), both called from
``services``; after commit the engine sends them, each through its channel's
adapter, as the one registry finds it (``channels/<name>/adapter.py``).

Each row is one small state machine, so an edit never overtakes its send:
``to_send → sent → to_edit → closed``. A prompt resolved before its message
was sent drops the row; one resolved while the send is in flight is edited as
soon as the send lands (``record`` sees the row ``maybe_sent`` and asks for
the edit).

A send whose outcome is unknown when its prompt resolves (in flight, or its
process was killed mid-send, so its card may be on the platform with no
``ref`` to edit it by) is ``maybe_sent``: never dropped in silence, never sent
again as pending. Once its lease runs out without the send landing (the
process died, or the try timed out), the engine tells the outcome in a
follow-up message (``tell``: "Deploy: Answered elsewhere" and the prompt's
page), the one thing every platform allows without the card's id; a push
follow-up carries the prompt's tag, so it replaces the card's notification on
the device. A send the platform refused (a Permanent failure) was not sent:
that row is dropped. A row with a ``notice`` (Discord's follow-up to a tap) is one text
sent once: ``to_send → closed``; so is one without a prompt, a coding agent's
news for the person (``agent_news``: "Claude Code finished"), which every
channel tells (``Telling``). Newer news of a session replaces its older news
still waiting for the same address (``replace_waiting_news``): an agent that
floods news leaves one row per address to send, never a backlog. Claiming a try is a compare-and-set on the
row's attempt count that also pushes ``next_attempt_at`` past the try's
timeout, so two processes never make the same try, and a process that dies
mid-try leaves the row for any other. A platform's ``Temporary`` failure is
retried with doubling delays (at least its ``retry_after``); a ``Permanent``
one, or the last try, marks the row failed, which staff see in the admin and
the person on the prompt's page.

A channel whose folder says ``not_while_seen`` (Web Push) is not sent while one of
the person's tabs is in sight (``runtime.presence``), asked as the engine claims
the row: the row is dropped, saying so for staff. A prompt's push is recorded
due after the person's grace (``Recipient.after``), so the tab has that long to
be seen and the prompt to be answered; an agent's news is pushed at once, or
not at all while a tab is in sight, where its line shows live.

A row's host is where its adapter sends it: a push service's host:port, the
channel's name for the rest (one platform API), the unit the engine shares an
owner's tries by and pauses when it keeps timing out.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, cast

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone, translation

from askuser_app.delivery import channels, engine
from askuser_app.delivery.channels.base import (
    Adapter,
    Card,
    Closed,
    News,
    Noticing,
    Notifier,
    Permanent,
    Recipient,
    Telling,
    Temporary,
)
from askuser_app.delivery.channels.chats.core import card, closed, prune_seen, session_url
from askuser_app.delivery.engine import Outcome, Tried
from askuser_app.models import (
    LIVE_DELIVERY,
    ChatLink,
    Delivery,
    DeliveryAttempt,
    Message,
    Preferences,
    Prompt,
    Session,
)
from askuser_app.runtime import caching, presence
from askuser_app.runtime.i18n import of_owner

log = logging.getLogger("askuser")

BACKOFF_CAP = 600.0
IN_SIGHT = "not needed: a tab of the person was in sight"


def timeout() -> float:
    """Seconds one send or edit may take."""
    seconds: float = settings.ASKUSER_CHAT_TIMEOUT
    return seconds


def retry_delay(number: int, retry_after: float | None = None) -> float:
    """Seconds to wait after failed try ``number``: doubling, capped, ±20 % jitter, never under ``retry_after``."""
    return engine.backoff(number, settings.ASKUSER_CHAT_RETRY_BASE, BACKOFF_CAP, retry_after)


def adapters_on() -> dict[str, Adapter]:
    return channels.configured()


def _channels() -> list[str]:
    return list(adapters_on())


# --- recording (inside the creating and the resolving transaction) -----------------------------


def prompt_created(prompt: Prompt) -> None:
    """A message to each recipient of every configured channel: the owner's linked chat
    identities, and whatever a ``Notifier`` (email, push) finds for the owner."""
    configured = adapters_on()
    if not configured:  # every channel is off: nothing is read or written
        return

    now, owner = timezone.now(), prompt.session.owner_id
    # Told apart by name, as the registry lists them: isinstance() of a Protocol took 2 % of a create's CPU.
    linked = [name for name in configured if name not in channels.notifiers()]
    links = ChatLink.objects.filter(user_id=owner, channel__in=linked) if linked else ()
    rows = [
        Delivery(
            prompt=prompt,
            owner_id=owner,
            channel=link.channel,
            link=link,
            address=link.chat_id,
            host=link.channel,
            next_attempt_at=now,
        )
        for link in links
    ]
    reaching = {
        name: cast(Notifier, adapter)
        for name, adapter in configured.items()
        if name in channels.notifiers() and not muted(prompt.session, name)
    }
    rows += [
        Delivery(
            prompt=prompt,
            owner_id=owner,
            channel=name,
            address=to.address,
            host=to.host or name,
            next_attempt_at=now + to.after,
        )
        for name, to in notified(prompt, reaching)
    ]
    if rows:
        Delivery.objects.bulk_create(rows)
        transaction.on_commit(engine.wake, robust=True)


def agent_news(message: Message, *, finished: bool) -> None:
    """A coding agent's news (``message``, a line of its session) to each of the owner's linked chat
    identities and each recipient a notifier reaches: a ``Delivery`` with a ``notice`` and no prompt,
    sent at once and once. That an agent finished is told only to an owner who chose to hear it."""
    configured = adapters_on()
    owner = message.session.owner_id
    if not configured or (finished and not Preferences.objects.filter(user_id=owner, tell_finished=True).exists()):
        return
    now, session = timezone.now(), message.session
    where = {"title": session.title, "url": session_url(session.key), "tag": f"askuser-session-{session.pk}"}
    linked = [name for name in configured if name not in channels.notifiers()]
    links = ChatLink.objects.filter(user_id=owner, channel__in=linked) if linked else ()
    rows = [
        Delivery(
            owner_id=owner,
            session=session,
            channel=link.channel,
            link=link,
            address=link.chat_id,
            host=link.channel,
            notice=message.text,
            ref=where,
            next_attempt_at=now,
        )
        for link in links
    ]
    rows += [
        Delivery(
            owner_id=owner,
            session=session,
            channel=name,
            address=to.address,
            host=to.host or name,
            notice=message.text,
            ref=where,
            next_attempt_at=now,
        )
        for name, adapter in configured.items()
        if name in channels.notifiers() and not muted(session, name)
        for to in cast(Notifier, adapter).reaches(owner)
    ]
    if rows:
        replace_waiting_news(session, rows)
        Delivery.objects.bulk_create(rows)
        transaction.on_commit(engine.wake, robust=True)


def muted(session: Session, channel: str) -> bool:
    """The person muted the session, and the channel heeds it (``Folder.heeds_mute``: Web Push)."""
    return session.muted_at is not None and channel in channels.heeding_mute()


def replace_waiting_news(session: Any, rows: list[Delivery]) -> None:
    """Drop the session's older news still waiting for an address the newer news goes to: an
    agent that keeps sending news leaves one row per address to send, the latest, never a
    backlog. One already in flight is closed if its try lands (``record``), as it was sent."""
    for channel, addresses in _addresses_by_channel(rows).items():
        waiting = Delivery.objects.filter(
            session=session, channel=channel, address__in=addresses, state=Delivery.State.TO_SEND
        )
        waiting.update(state=Delivery.State.DROPPED, last_error="replaced by newer news of its session")


def _addresses_by_channel(rows: list[Delivery]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for row in rows:
        found.setdefault(row.channel, []).append(row.address)
    return found


# --- whom the notifiers reach, kept between creates ---------------------------------------------

# Each notifier's recipients are the owner's: their address and choice, their
# devices. Read on every create, they cost it about 1.3 ms of its 5.8 ms of
# CPU on PostgreSQL, and 165 creates a second instead of 205 (docs/PERFORMANCE.md);
# a person changes them a few times a year. So they are kept in the cache,
# under a generation that any save or delete of a user, their preferences or
# a device renews (``recipients_changed``), as does a changed setting: what
# was kept under an older generation is read again. How long they are kept
# bounds a change made without any of those (an ``update()``).
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

    messages = Delivery.objects.filter(prompt=prompt, notice="")
    # No savepoint of its own: it runs inside the resolution's transaction, and an error here
    # rolls that back whole anyway.
    with transaction.atomic(savepoint=False):
        # Lock first: the engine records a landed send on a thread of its own, and a row it turns
        # from to_send into sent between the two updates below would be neither edited nor told.
        # Nothing else turns a prompt's row into sent or to_send, so the rows locked are all the
        # updates below can change: only those with rows to change are sent (none, for a person
        # without a chat app or a device, the answer's usual case).
        locked = messages.filter(state__in=(Delivery.State.SENT, Delivery.State.TO_SEND)).select_for_update()
        _mark_resolved(messages, set(locked.values_list("state", "attempts")))


def _mark_resolved(messages: QuerySet[Delivery], locked: set[tuple[str, int]]) -> None:
    """Update the rows of ``messages`` whose (state, attempts) are among ``locked``."""
    states = {state for state, _ in locked}
    if Delivery.State.SENT in states:
        messages.filter(state=Delivery.State.SENT).update(
            state=Delivery.State.TO_EDIT, attempts=0, next_attempt_at=timezone.now(), last_error=""
        )
        transaction.on_commit(engine.wake, robust=True)
    sending = messages.filter(state=Delivery.State.TO_SEND)
    if (Delivery.State.TO_SEND, 0) in locked:
        sending.filter(attempts=0).update(state=Delivery.State.DROPPED)  # never tried: nothing to close
    if any(state == Delivery.State.TO_SEND and attempts for state, attempts in locked):
        # A try was claimed: in flight (it asks for the edit when it lands) or killed with its process.
        # Its lease's end, kept, is when the engine sends the follow-up if it never lands.
        sending.update(state=Delivery.State.MAYBE_SENT)


# --- the kind: claiming, trying, recording -----------------------------------------------------


@dataclass(frozen=True)
class Claimed:
    """One try this process won the right to make."""

    kind: Messages
    row_id: int
    owner_id: int
    host: str
    channel: str
    action: Literal["send", "edit", "notice", "tell"]
    number: int
    address: str = ""
    ref: dict[str, Any] = field(default_factory=dict)
    card: Card | None = None
    closed: Closed | None = None
    text: str = ""  # a notice's
    news: News | None = None  # an agent's news (a notice without a prompt)
    language: str = settings.LANGUAGE_CODE  # the owner's: the card's words, and the adapter's


def _muted_since(row: Delivery) -> bool:
    """A row waiting to be sent (a prompt's message, or news) whose session was muted meanwhile,
    through a channel that heeds it: a mute during a delay is kept too."""
    if row.channel not in channels.heeding_mute():
        return False
    session = row.prompt.session if row.prompt is not None else row.session
    return session is not None and session.muted_at is not None


class Messages:
    """``Delivery`` rows, as the engine sends them."""

    name = "messages"
    related: tuple[str, ...] = ("prompt__agent", "prompt__session", "session")

    def rows(self) -> QuerySet[Delivery]:
        return Delivery.objects.filter(LIVE_DELIVERY)

    def timeout(self) -> float:
        return timeout()

    def retry_base(self) -> float:
        seconds: float = settings.ASKUSER_CHAT_RETRY_BASE
        return seconds

    def claim(self, row: Delivery, now: datetime, lease: datetime) -> Claimed | None:
        """The row's next try (a compare-and-set on its attempt count), unless the row is settled:
        out of tries, its channel off, its identity unlinked or its prompt resolved before the send."""
        mine = Delivery.objects.filter(pk=row.pk, state=row.state, attempts=row.attempts)
        sending = row.state == Delivery.State.TO_SEND and not row.notice
        if row.attempts >= settings.ASKUSER_CHAT_ATTEMPTS:  # its last try died with its process
            mine.update(state=Delivery.State.FAILED, last_error=row.last_error or "no answer from the last try")
        elif row.channel not in channels.configured():
            mine.update(state=Delivery.State.FAILED, last_error=f"{row.channel} is not configured on this server")
        elif sending and row.link_id is None and row.channel not in channels.notifiers():
            mine.update(state=Delivery.State.DROPPED, last_error="unlinked before it was sent")
        elif sending and row.prompt is not None and not row.prompt.is_pending:
            # Resolved where no chat app was set up, so its rows were not marked: never send it as pending.
            mine.update(state=Delivery.State.DROPPED, last_error="resolved before it was sent")
        elif row.state == Delivery.State.TO_SEND and _muted_since(row):
            mine.update(state=Delivery.State.DROPPED, last_error="its session was muted before it was sent")
        elif row.state == Delivery.State.TO_SEND and self._needless(row):
            mine.update(state=Delivery.State.DROPPED, last_error=IN_SIGHT)
        elif mine.update(attempts=row.attempts + 1, next_attempt_at=lease):
            return self._claimed(row, of_owner(row.owner_id))
        return None

    @staticmethod
    def _needless(row: Delivery) -> bool:
        """A push (a prompt's or an agent's news) while a tab of its person is in sight: the page
        shows it and notifies itself, so it is not sent, and staff see why (not as a failure)."""
        return row.channel in channels.not_while_seen() and presence.in_sight(row.owner_id)

    def _claimed(self, row: Delivery, language: str) -> Claimed:
        """The try, its message rendered in the owner's language."""
        number, ids = row.attempts + 1, (self, row.pk, row.owner_id, row.host, row.channel)
        prompt = row.prompt
        if prompt is None:
            news = News(row.notice, **{name: str(row.ref.get(name, "")) for name in ("title", "url", "tag")})
            return Claimed(*ids, "tell", number, row.address, news=news, language=language)
        if row.notice:
            return Claimed(*ids, "notice", number, row.address, text=row.notice, language=language)
        with translation.override(language):
            if row.state == Delivery.State.MAYBE_SENT:
                return Claimed(*ids, "tell", number, row.address, news=follow_up(prompt), language=language)
            if row.state == Delivery.State.TO_SEND:
                return Claimed(*ids, "send", number, row.address, card=card(prompt), language=language)
            return Claimed(*ids, "edit", number, ref=dict(row.ref), closed=closed(prompt), language=language)

    async def attempt(self, claimed: Claimed) -> Outcome:
        """One send, edit or notice through the channel's adapter, its failure as an Outcome."""
        adapter = channels.installed()[claimed.channel]
        try:
            with translation.override(claimed.language):  # the words an adapter adds are the owner's language too
                if claimed.action == "send":
                    assert claimed.card is not None
                    ref = await adapter.send(claimed.address, claimed.card)
                    return Outcome(True, answered=True, ref=dict(ref))
                if claimed.action == "notice":
                    await cast(Noticing, adapter).notice(claimed.address, claimed.text)
                    return Outcome(True, answered=True)
                if claimed.action == "tell":
                    assert claimed.news is not None
                    await cast(Telling, adapter).tell(claimed.address, claimed.news)
                    return Outcome(True, answered=True)
                assert claimed.closed is not None
                await adapter.edit(claimed.ref, claimed.closed)
                return Outcome(True, answered=True)
        except Temporary as failed:
            error = str(failed) or type(failed).__name__
            return Outcome(False, error, retry_after=failed.retry_after, timed_out=failed.timed_out)
        except Permanent as refused:
            return Outcome(False, str(refused) or type(refused).__name__, final=True, answered=True)

    def record(self, claimed: Claimed, tried: Tried, paused_until: datetime | None) -> None:
        """Store the try and decide what happens next: the next step, a retry later, or failed."""
        State, outcome = Delivery.State, tried.outcome
        now = timezone.now()
        DeliveryAttempt.objects.create(
            delivery_id=claimed.row_id,
            action=claimed.action,
            started_at=tried.started_at,
            duration_ms=tried.duration_ms,
            ok=outcome.ok,
            error=outcome.error,
        )
        row = Delivery.objects.select_for_update().filter(pk=claimed.row_id).first()
        if row is None or row.attempts != claimed.number:
            return  # the row was claimed again after this try's lease ran out
        step = {"edit": State.TO_EDIT, "tell": State.MAYBE_SENT if row.prompt_id else State.TO_SEND}
        changes: dict[str, Any]
        if outcome.ok and claimed.action == "send":
            # Resolved while the send was in flight: the message now needs its edit.
            resolved = row.state == State.MAYBE_SENT
            changes = {"state": State.TO_EDIT if resolved else State.SENT, "ref": outcome.ref, "last_error": ""}
            changes |= {"attempts": 0, "next_attempt_at": now}
        elif claimed.action == "send" and row.state == State.MAYBE_SENT:
            # Resolved meanwhile. Refused by the platform: not sent. Otherwise it may have been: told.
            changes = {"last_error": outcome.error, "attempts": 0, "next_attempt_at": now}
            changes |= {"state": State.DROPPED} if outcome.final else {}
        elif outcome.ok:
            changes = {"state": State.CLOSED, "last_error": ""}
        elif row.state != step.get(claimed.action, State.TO_SEND):
            changes = {"last_error": outcome.error}  # dropped meanwhile: nothing more to try
        elif outcome.final or claimed.number >= settings.ASKUSER_CHAT_ATTEMPTS:
            changes = {"state": State.FAILED, "last_error": outcome.error}
            log.warning(
                "Chat %s of message %s to %s failed after %s tries: %s",
                claimed.action,
                claimed.row_id,
                claimed.channel,
                claimed.number,
                outcome.error,
            )
        else:
            retry_at = now + timedelta(seconds=retry_delay(claimed.number, outcome.retry_after))
            changes = {"next_attempt_at": max(retry_at, paused_until or retry_at), "last_error": outcome.error}
        Delivery.objects.filter(pk=row.pk).update(**changes)

    def tidy(self) -> None:
        """Inbound events seen over a day ago: platforms retry within minutes."""
        prune_seen()


KIND = Messages()


def follow_up(prompt: Prompt) -> News:
    """What a message that may have been sent says once its prompt resolved: the outcome, as
    news (every channel tells it), under the tag of the prompt's push notification (which it
    replaces on a device)."""
    resolved = closed(prompt)
    return News(f"{resolved.header}: {resolved.outcome}", resolved.header, resolved.url, f"askuser-{prompt.pk}")


# --- for the prompt's web page ----------------------------------------------------------------


def undelivered(prompt_ids: list[Any]) -> dict[str, list[str]]:
    """For each prompt (by id as text) the channels its message never reached, for good."""
    if not prompt_ids or not _channels():
        return {}

    failed: dict[str, list[str]] = {}
    rows = Delivery.objects.filter(prompt_id__in=prompt_ids, state=Delivery.State.FAILED, notice="")
    for prompt_id, channel, ref in rows.values_list("prompt_id", "channel", "ref"):
        if not ref and channels.label_of(channel) not in failed.get(str(prompt_id), []):
            failed.setdefault(str(prompt_id), []).append(channels.label_of(channel))
    return failed
