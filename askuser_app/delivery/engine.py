"""The one delivery engine: everything askuser sends goes out through it, fairly.

A change that should reach someone (a resolution for an agent's callback_url,
a prompt for a chat, a mail, a push) never sends anything itself: its
transaction records a row of one of the engine's **kinds**, and after commit
(``wake``) the engine's loop in each server process sends it. A kind
(``webhooks.KIND``: ``WebhookDelivery`` rows; ``messages.KIND``: ``Delivery``
rows, for Telegram, Slack, Discord, email, push and Discord's follow-ups) says
which of its rows still have an attempt to make, how to claim one, how to
make the attempt and how to record what came of it. The engine does the rest,
the same for every kind:

- **Claim with a lease.** A kind claims a due row by a compare-and-set on its
  attempt count that also pushes ``next_attempt_at`` to the lease's end,
  twice the attempt's time, so two processes never make the same attempt, and
  a process killed mid-attempt leaves the row to any other once the lease
  runs out: nothing is lost, and one success is never recorded twice.
- **Attempt, bounded.** An attempt takes the kind's ``timeout()`` at most. An
  adapter that blocks (an SDK built on ``requests``, smtplib) runs on the
  engine's own threads, one per slot (``blocking``), so no attempt queues for
  a thread behind another owner's.
- **Record, retry.** Every attempt is recorded; a failure is retried after
  doubling, jittered delays (``backoff``; never sooner than the receiver's
  Retry-After), and a permanent failure or the last attempt fails the row.
- **Fair: per owner first, then per host.** At most ``SLOTS`` attempts are in
  flight per process. Each owner with something in flight or due may hold an
  equal share of them, counting one share kept free for an owner who has
  nothing in flight yet: while fewer than ``SLOTS`` owners are busy, a
  newcomer finds a slot at once, however slow the others' receivers. Owners
  are served longest-waiting first; within an owner, at most ``PER_HOST``
  attempts go to one host at once, and its hosts take turns.
- **A host that keeps timing out pauses, for that owner.** Each of an owner's
  attempts in a row that gets no answer in time doubles a pause of the
  (owner, host) pair (kept in ``DeliveryHost``, so every process keeps it)
  during which everything of that owner due to that host, of any kind, waits;
  any answer from the host to that owner ends it. Other owners and other hosts
  are not affected: one owner's slow path, token or load on a host they share
  pauses no one else. An attempt's clock runs only while it works, not while
  it waits for the engine's own resources (a name lookup's turn: ``names``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ParamSpec, Protocol, TypeVar

from django.db import transaction
from django.db.models import Exists, F, Min, OuterRef, Q, QuerySet, Subquery, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from askuser_app.delivery import names
from askuser_app.models import DeliveryHost
from askuser_app.runtime.asyncdb import database_call
from askuser_app.runtime.background import Loop

log = logging.getLogger("askuser")
P = ParamSpec("P")
R = TypeVar("R")

SLOTS = 24  # attempts in flight per process, of every kind together
PER_HOST = 2  # attempts in flight per process for one owner to one host
RECHECK = 5.0  # rows recorded by other processes are seen within this
TIDY_EVERY = 3600.0
PAUSE_CAP = 1800.0


# --- what kinds and the engine say to each other --------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one attempt got. The engine reads the first five fields; the rest are a kind's own."""

    ok: bool
    error: str = ""
    final: bool = False  # not worth another attempt: a refused address, a blocked bot
    retry_after: float | None = None  # the receiver asked for at least this long before the next
    timed_out: bool = False  # no answer in time: the host may be overwhelmed
    answered: bool = False  # the host answered (whatever it said): a pause of it ends
    status: int | None = None  # a webhook receiver's HTTP status
    excerpt: str = ""  # the start of a webhook receiver's answer
    ref: Mapping[str, Any] = field(default_factory=dict)  # where a sent message lives on its platform


@dataclass(frozen=True)
class Tried:
    """One attempt made: what came of it, when it started and how long it took."""

    outcome: Outcome
    started_at: datetime
    duration_ms: int


class Claim(Protocol):
    """One attempt this process won the right to make."""

    @property
    def kind(self) -> Kind: ...

    @property
    def row_id(self) -> int: ...

    @property
    def owner_id(self) -> int: ...

    @property
    def host(self) -> str: ...


class Kind(Protocol):
    """A kind of row the engine sends. Its rows have ``owner``, ``host`` and ``next_attempt_at``."""

    name: str
    related: tuple[str, ...]  # what ``claim`` reads of a row's relations (select_related)

    def rows(self) -> QuerySet[Any]:
        """Its rows with an attempt still to make, due or not (in flight too)."""
        ...

    def timeout(self) -> float:
        """Seconds one attempt may take; a claim's lease is twice as long."""
        ...

    def retry_base(self) -> float:
        """Seconds before a first retry; a host's first pause lasts as long."""
        ...

    def claim(self, row: Any, now: datetime, lease: datetime) -> Claim | None:
        """Claim ``row`` (a compare-and-set that moves its ``next_attempt_at`` to ``lease``), or
        settle it for good (out of attempts, no longer wanted), or lose it to another process: None."""
        ...

    async def attempt(self, claim: Any) -> Outcome:
        """Make the attempt; its failure as an Outcome."""
        ...

    def record(self, claim: Any, tried: Tried, paused_until: datetime | None) -> None:
        """Store the attempt and decide what follows (in the engine's transaction); a retry
        waits until ``paused_until`` at least, while the host pauses."""
        ...

    def tidy(self) -> None:
        """Now and then (hourly): forget what is no longer needed."""
        ...


KINDS: list[Kind] = []


def register(*kinds: Kind) -> None:
    """The kinds the engine sends (``AskuserAppConfig.ready`` names them)."""
    KINDS.extend(kind for kind in kinds if kind not in KINDS)


def backoff(number: int, first: float, cap: float, at_least: float | None = None) -> float:
    """Seconds to wait after failed attempt ``number``: doubling from ``first``, capped, ±20 % jitter,
    never under ``at_least`` (a receiver's Retry-After)."""
    delay = min(first * 2.0 ** (number - 1), cap) * random.uniform(0.8, 1.2)
    return max(delay, at_least or 0.0)


_threads = ThreadPoolExecutor(SLOTS, thread_name_prefix="askuser-delivery")


async def blocking(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``func`` on one of the engine's threads, in this context (the owner's language): for an
    adapter whose SDK blocks. There is one per slot, so an attempt never waits for a thread."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_threads, lambda: context.run(func, *args, **kwargs))


# --- sharing the slots out ----------------------------------------------------------------------


@dataclass
class Busy:
    """The attempts in flight in this process: in all, per owner, and per owner and host."""

    total: int = 0
    owners: Counter[int] = field(default_factory=Counter)
    hosts: Counter[tuple[int, str]] = field(default_factory=Counter)

    @classmethod
    def of(cls, claims: Iterable[Claim]) -> Busy:
        busy = cls()
        for claim in claims:
            busy.total += 1
            busy.owners[claim.owner_id] += 1
            busy.hosts[(claim.owner_id, claim.host)] += 1
        return busy

    def full(self) -> list[tuple[int, str]]:
        """Each (owner, host) that may take no more attempts now."""
        return [pair for pair, count in self.hosts.items() if count >= PER_HOST]


def claim_due(slots: int = SLOTS, busy: Busy | None = None) -> list[Claim]:
    """Claim the attempts now due that fit in ``slots`` beside those ``busy``, shared out fairly."""
    return _claim(slots, busy or Busy())[0]


def _claim(slots: int, busy: Busy) -> tuple[list[Claim], bool]:
    """The claims, and whether any due row was taken up (claimed, settled or lost to another process)."""
    now = timezone.now()
    _hold_for_paused_hosts(now)
    room = slots - busy.total
    if room <= 0:
        return [], False
    full = busy.full()
    waiting = _owners_due(now, full, room + len(busy.owners))
    share = max(1, slots // (len(set(busy.owners) | set(waiting)) + 1))
    claimed: list[Claim] = []
    taken_up = False
    for owner, kinds in waiting.items():
        take = min(share - busy.owners[owner], room - len(claimed))
        for kind, row in _turns(now, owner, kinds, take, busy, full) if take > 0 else []:
            taken_up = True
            claim = kind.claim(row, now, lease_end(kind, now))
            if claim is not None:
                claimed.append(claim)
    return claimed, taken_up


def lease_end(kind: Kind, now: datetime) -> datetime:
    """How long a claimed attempt keeps its row from every other process: twice its time, so
    that only a process that died mid-attempt ever lets it run out."""
    return now + timedelta(seconds=2 * kind.timeout())


def _owners_due(now: datetime, full: list[tuple[int, str]], limit: int) -> dict[int, list[Kind]]:
    """Up to ``limit`` owners with a row due on a host they may send to, longest waiting first,
    each with the kinds they have due."""
    blocked = Q()
    for owner, host in full:
        blocked |= Q(owner_id=owner, host=host)
    first: dict[int, datetime] = {}
    kinds_of: dict[int, list[Kind]] = {}
    for kind in KINDS:
        due = kind.rows().filter(next_attempt_at__lte=now)
        if full:
            due = due.exclude(blocked)
        oldest = due.values_list("owner_id").annotate(first=Min("next_attempt_at")).order_by("first")
        for owner, at in oldest[:limit]:
            first[owner] = min(at, first.get(owner, at))
            kinds_of.setdefault(owner, []).append(kind)
    return {owner: kinds_of[owner] for owner in sorted(first, key=first.__getitem__)[:limit]}


def _turns(
    now: datetime, owner: int, kinds: list[Kind], take: int, busy: Busy, full: list[tuple[int, str]]
) -> list[tuple[Kind, Any]]:
    """Up to ``take`` of the owner's due rows: each host's longest waiting first, then each
    host's second, … never more than ``PER_HOST`` in flight to one host."""
    hosts_full = [host for someone, host in full if someone == owner]
    started = sum(1 for someone, _host in busy.hosts if someone == owner)
    candidates: list[tuple[int, datetime, Kind, Any]] = []
    for kind in kinds:
        due = kind.rows().filter(owner_id=owner, next_attempt_at__lte=now)
        if hosts_full:
            due = due.exclude(host__in=hosts_full)
        turn = Window(RowNumber(), partition_by=F("host"), order_by=F("next_attempt_at").asc())
        ranked = due.annotate(turn=turn).filter(turn__lte=PER_HOST).select_related(*kind.related)
        for row in ranked.order_by("turn", "next_attempt_at")[: take + started * PER_HOST]:
            candidates.append((row.turn, row.next_attempt_at, kind, row))
    candidates.sort(key=lambda candidate: (candidate[0], candidate[1]))
    chosen: list[tuple[Kind, Any]] = []
    per_host: Counter[str] = Counter()
    for _turn, _at, kind, row in candidates:
        if busy.hosts[(owner, row.host)] + per_host[row.host] < PER_HOST and len(chosen) < take:
            per_host[row.host] += 1
            chosen.append((kind, row))
    return chosen


def _hold_for_paused_hosts(now: datetime) -> None:
    """An owner's rows that came due for a host paused for them wait out the pause, as their others do."""
    paused = DeliveryHost.objects.filter(paused_until__gt=now)
    if not paused.exists():
        return
    theirs = paused.filter(owner_id=OuterRef("owner_id"), host=OuterRef("host"))
    until = Subquery(theirs.values("paused_until")[:1])
    for kind in KINDS:
        kind.rows().filter(Exists(theirs), next_attempt_at__lte=now).update(next_attempt_at=until)


def next_due(after: datetime) -> datetime | None:
    """When the first row not yet due at ``after`` comes due, of any kind. A row due already but
    not claimed waits for a slot: an attempt that ends wakes the loop."""
    found = [kind.rows().filter(next_attempt_at__gt=after).aggregate(at=Min("next_attempt_at"))["at"] for kind in KINDS]
    return min((at for at in found if at is not None), default=None)


# --- attempting and recording -------------------------------------------------------------------


async def attempt(claim: Claim) -> Tried:
    """Make the claimed attempt, within the kind's time; its failure, or an adapter's bug, as an Outcome."""
    kind = claim.kind
    started_at, began = timezone.now(), time.monotonic()
    try:
        async with asyncio.timeout(kind.timeout()) as clock:
            # Whatever the attempt waits for in the engine's own queues stops this clock (``names``).
            names.ATTEMPT.set(names.Attempt(claim.owner_id, clock))
            outcome = await kind.attempt(claim)
    except TimeoutError:
        outcome = Outcome(False, f"Timeout: no answer within {kind.timeout():g} s", timed_out=True)
    except Exception as exc:  # a bug must not stop the loop; retried, and visible in the admin
        log.exception("The %s attempt of row %s failed.", kind.name, claim.row_id)
        outcome = Outcome(False, f"{type(exc).__name__}: {exc}")
    return Tried(outcome, started_at, round((time.monotonic() - began) * 1000))


def record(claim: Claim, tried: Tried) -> None:
    """Store the attempt, keep its owner's pause of its host, and let its kind decide what follows."""
    outcome = tried.outcome
    with transaction.atomic():
        paused_until = None
        if outcome.timed_out:
            paused_until = _host_timed_out(claim.owner_id, claim.host, claim.kind.retry_base())
        if outcome.answered:
            _host_answered(claim.owner_id, claim.host)
        claim.kind.record(claim, tried, paused_until)


def host_pause(timeouts: int, first: float) -> float:
    """Seconds an owner's deliveries to a host wait after ``timeouts`` attempts in a row got no answer in time."""
    return min(first * 2.0 ** (timeouts - 1), PAUSE_CAP)


def _host_timed_out(owner_id: int, host: str, first: float) -> datetime:
    """One more of the owner's attempts in a row timed out there: the owner's deliveries to the
    host pause, twice as long as last time. Another owner's do not: the path, the token, the
    load may be the first owner's own."""
    DeliveryHost.objects.get_or_create(owner_id=owner_id, host=host)
    row = DeliveryHost.objects.select_for_update().get(owner_id=owner_id, host=host)
    row.timeouts += 1
    row.paused_until = timezone.now() + timedelta(seconds=host_pause(row.timeouts, first))
    row.save(update_fields=["timeouts", "paused_until"])
    log.warning(
        "Host %s timed out %s times in a row for user %s; their deliveries to it wait until %s.",
        host,
        row.timeouts,
        owner_id,
        row.paused_until,
    )
    return row.paused_until


def _host_answered(owner_id: int, host: str) -> None:
    """Any answer, even an error, shows the host is back for this owner: their pause ends."""
    DeliveryHost.objects.filter(owner_id=owner_id, host=host, timeouts__gt=0).update(timeouts=0, paused_until=None)


# --- the loop -------------------------------------------------------------------------------------

_flying: dict[asyncio.Task[None], Claim] = {}  # each attempt in flight in this process
_tidied_at = 0.0


async def _turn() -> datetime | None:
    """Start the attempts now due that have a slot; the next turn is due when?"""
    # Only this event loop's attempts count: a loop closed with attempts pending left them behind.
    running = asyncio.get_running_loop()
    for task in [task for task in _flying if task.done() or task.get_loop() is not running]:
        _flying.pop(task, None)
    now = timezone.now()
    claimed, taken_up = await database_call(_claim)(SLOTS, Busy.of(_flying.values()))
    for claim in claimed:
        task = asyncio.ensure_future(_attempt_and_record(claim))
        _flying[task] = claim
        task.add_done_callback(_landed)
    await _tidy()
    if taken_up and len(_flying) < SLOTS:
        return now  # rows were taken up: more may be due behind them
    return await database_call(next_due)(now)


def _landed(task: asyncio.Task[None]) -> None:
    _flying.pop(task, None)


async def _attempt_and_record(claim: Claim) -> None:
    tried = await attempt(claim)
    try:
        await database_call(record)(claim, tried)
    except Exception:
        log.exception("Recording the %s attempt of row %s failed.", claim.kind.name, claim.row_id)
    loop.wake()  # a slot is free, and the loop may be sleeping past this row's next attempt


async def _tidy() -> None:
    global _tidied_at
    if time.monotonic() - _tidied_at > TIDY_EVERY:
        _tidied_at = time.monotonic()
        for kind in KINDS:
            await database_call(kind.tidy)()


loop = Loop("Delivering", _turn, recheck=RECHECK)
ensure_running = loop.ensure_running
wake = loop.wake
