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
- **A backlog costs its owner, not the server.** A turn reads each owner's
  oldest due row and then a few rows at a time by indexed ``LIMIT``s, never
  all of an owner's due rows (past a host at its limit, host by host: its
  backlog is stepped over, not read); turns are at least ``CALM`` apart, however
  many wakes come between; and the engine's database work runs on a thread
  of its own (``database``), never on the one that the requests of people
  and agents share.
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

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Exists, Min, OuterRef, QuerySet, Subquery
from django.utils import timezone

from askuser_app.delivery import names
from askuser_app.models import DeliveryHost
from askuser_app.runtime import metrics
from askuser_app.runtime.asyncdb import OwnThread
from askuser_app.runtime.background import Loop

log = logging.getLogger("askuser")
P = ParamSpec("P")
R = TypeVar("R")

SLOTS = 24  # attempts in flight per process, of every kind together
PER_HOST = 2  # attempts in flight per process for one owner to one host
RECHECK = 5.0  # rows recorded by other processes are seen within this
CALM = 0.05  # seconds at least between two turns: a burst of wakes makes one turn
SKIPPABLE = 50  # rows of closed hosts an owner's first read may pass before it goes host by host
HOSTS_READ = 4 * SLOTS  # an owner's hosts read one by one at most, in a turn, while one is closed
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
    waiting = _owners_due(now, room + len(busy.owners))
    share = max(1, slots // (len(set(busy.owners) | set(waiting)) + 1))
    claimed: list[Claim] = []
    taken_up = False
    for owner, kinds in waiting.items():
        take = min(share - busy.owners[owner], room - len(claimed))
        for kind, row in _turns(now, owner, kinds, take, busy, full) if take > 0 else []:
            taken_up = True
            claim = _claimed(kind, row, now)
            if claim is not None:
                claimed.append(claim)
    return claimed, taken_up


def _claimed(kind: Kind, row: Any, now: datetime) -> Claim | None:
    """``kind.claim``; a row it fails on (a bug, a row no code expects) is logged and waits out a
    lease, so that it neither stops the turn nor comes first again at once: the others go on."""
    try:
        return kind.claim(row, now, lease_end(kind, now))
    except Exception:
        log.exception("Claiming %s row %s failed; the others go on.", kind.name, row.pk)
        kind.rows().filter(pk=row.pk).update(next_attempt_at=lease_end(kind, now))
        return None


def lease_end(kind: Kind, now: datetime) -> datetime:
    """How long a claimed attempt keeps its row from every other process: twice its time, so
    that only a process that died mid-attempt ever lets it run out."""
    return now + timedelta(seconds=2 * kind.timeout())


def _owners_due(now: datetime, limit: int) -> dict[int, list[Kind]]:
    """Up to ``limit`` owners with a row due, longest waiting first, each with the kinds they have due.

    Each owner's oldest due row is one step down the (owner, next_attempt_at) index, so a turn
    costs the same whether an owner has one row due or 30,000. An owner whose due rows all wait
    for a host at its limit is among them; ``_turns`` finds nothing for them, and the owner, busy
    with those attempts, is counted in ``limit`` already."""
    first: dict[int, datetime] = {}
    kinds_of: dict[int, list[Kind]] = {}
    for kind in KINDS:
        oldest = kind.rows().filter(owner_id=OuterRef("pk"), next_attempt_at__lte=now).order_by("next_attempt_at")
        owners = get_user_model().objects.annotate(first=Subquery(oldest.values("next_attempt_at")[:1]))
        for owner, at in owners.filter(first__isnull=False).order_by("first").values_list("pk", "first")[:limit]:
            first[owner] = min(at, first.get(owner, at))
            kinds_of.setdefault(owner, []).append(kind)
    return {owner: kinds_of[owner] for owner in sorted(first, key=first.__getitem__)[:limit]}


def _turns(
    now: datetime, owner: int, kinds: list[Kind], take: int, busy: Busy, full: list[tuple[int, str]]
) -> list[tuple[Kind, Any]]:
    """Up to ``take`` of the owner's due rows: each host's longest waiting first, then each
    host's second, … never more than ``PER_HOST`` in flight to one host.

    Read a few at a time, oldest first (an indexed ``LIMIT``), never ranked whole: a host
    that reaches its limit is left out of the next read."""
    in_flight = Counter({host: count for (someone, host), count in busy.hosts.items() if someone == owner})
    closed = {host for someone, host in full if someone == owner}
    chosen: list[Due] = []
    while len(chosen) < take:
        window = (take - len(chosen)) * PER_HOST
        read = _oldest_due(now, owner, kinds, closed, {(due.kind, due.pk) for due in chosen}, window)
        picked = _in_turns(read, in_flight)[: take - len(chosen)]
        chosen += picked
        in_flight.update(due.host for due in picked)
        closed |= {host for host, count in in_flight.items() if count >= PER_HOST}
        if len(read) < window or not picked:
            break
    return _rows_of(chosen)


@dataclass(frozen=True)
class Due:
    """A due row as a turn weighs it; the row itself is read once it is chosen."""

    kind: Kind
    pk: int
    host: str
    at: datetime


def _oldest_due(
    now: datetime, owner: int, kinds: list[Kind], closed: set[str], chosen: set[tuple[Kind, int]], count: int
) -> list[Due]:
    """The owner's ``count`` longest waiting due rows, of every kind, on hosts not ``closed``,
    leaving out those ``chosen`` already.

    One read down the (owner, next_attempt_at) index, a few rows more than asked for; when a
    closed host's backlog fills that read, each open host's oldest instead (``_each_host``): a
    filter on the host would have the database walk the whole backlog to find nothing."""
    read: list[Due] = []
    for kind in kinds:
        due = kind.rows().filter(owner_id=owner, next_attempt_at__lte=now).order_by("next_attempt_at")
        limit = count + len(chosen) + SKIPPABLE
        rows = [Due(kind, pk, host, at) for pk, host, at in due.values_list("pk", "host", "next_attempt_at")[:limit]]
        fresh = [due for due in rows if due.host not in closed and (kind, due.pk) not in chosen]
        if len(rows) == limit and len(fresh) < count:
            fresh = [due for due in _each_host(kind, now, owner, closed) if (kind, due.pk) not in chosen]
        read += fresh
    read.sort(key=lambda due: due.at)
    return read[:count]


def _each_host(kind: Kind, now: datetime, owner: int, closed: set[str]) -> list[Due]:
    """The oldest due rows of each of the owner's hosts not ``closed`` (``PER_HOST`` each), read
    host after host down the (owner, host, next_attempt_at) index: one step over a closed host's
    backlog, however long, instead of a walk through it. Hosts past the first ``HOSTS_READ`` (by
    name) wait for a later turn: an owner with that many hosts due is one whose own wait it is."""
    due = kind.rows().filter(owner_id=owner, next_attempt_at__lte=now).order_by("host", "next_attempt_at")
    read: list[Due] = []
    after = None
    for _step in range(HOSTS_READ):
        # Bounded by host from the first step (from "" on), so that the host index is the one read.
        step = due.filter(host__gte="") if after is None else due.filter(host__gt=after)
        rows = list(step.values_list("pk", "host", "next_attempt_at")[:PER_HOST])
        if not rows:
            break
        after = rows[0][1]
        if after not in closed:
            read += [Due(kind, pk, host, at) for pk, host, at in rows if host == after]
    return read


def _in_turns(read: list[Due], in_flight: Counter[str]) -> list[Due]:
    """``read`` (oldest first) as hosts take turns: each host's first, then each one's second, …
    none beyond ``PER_HOST`` with those ``in_flight`` to it."""
    turn_of = Counter(in_flight)
    ranked: list[tuple[int, int, Due]] = []
    for position, due in enumerate(read):
        turn_of[due.host] += 1
        if turn_of[due.host] <= PER_HOST:
            ranked.append((turn_of[due.host], position, due))
    return [due for _turn, _position, due in sorted(ranked, key=lambda item: item[:2])]


def _rows_of(chosen: list[Due]) -> list[tuple[Kind, Any]]:
    """The chosen rows, read whole with what their kind's ``claim`` reads of their relations."""
    rows: dict[tuple[int, int], Any] = {}
    for kind in {id(due.kind): due.kind for due in chosen}.values():
        found = kind.rows().select_related(*kind.related).in_bulk([due.pk for due in chosen if due.kind is kind])
        rows |= {(id(kind), pk): row for pk, row in found.items()}
    return [(due.kind, rows[key]) for due in chosen if (key := (id(due.kind), due.pk)) in rows]


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
        transaction.on_commit(lambda: metrics.attempted(claim.kind.name, outcome.ok, outcome.timed_out))


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

# The engine's database work runs on its own thread: a turn or a record never queues a
# person's or an agent's request behind it on the thread ``database_call`` shares.
database = OwnThread("askuser-engine-db")
_flying: dict[asyncio.Task[None], Claim] = {}  # each attempt in flight in this process
_tidied_at = 0.0


async def _turn() -> datetime | None:
    """Start the attempts now due that have a slot; the next turn is due when?"""
    # Only this event loop's attempts count: a loop closed with attempts pending left them behind.
    running = asyncio.get_running_loop()
    for task in [task for task in _flying if task.done() or task.get_loop() is not running]:
        _flying.pop(task, None)
    now = timezone.now()
    claimed, taken_up = await database.run(_claim)(SLOTS, Busy.of(_flying.values()))
    for claim in claimed:
        task = asyncio.ensure_future(_attempt_and_record(claim))
        _flying[task] = claim
        task.add_done_callback(_landed)
    await _tidy()
    if taken_up and len(_flying) < SLOTS:
        return now  # rows were taken up: more may be due behind them
    return await database.run(next_due)(now)


def _landed(task: asyncio.Task[None]) -> None:
    _flying.pop(task, None)


async def _attempt_and_record(claim: Claim) -> None:
    tried = await attempt(claim)
    try:
        await database.run(record)(claim, tried)
    except Exception:
        log.exception("Recording the %s attempt of row %s failed.", claim.kind.name, claim.row_id)
    loop.wake()  # a slot is free, and the loop may be sleeping past this row's next attempt


async def _tidy() -> None:
    global _tidied_at
    if time.monotonic() - _tidied_at > TIDY_EVERY:
        _tidied_at = time.monotonic()
        for kind in KINDS:
            try:
                await database.run(kind.tidy)()
            except Exception:
                log.exception("Tidying %s failed; the other kinds are tidied all the same.", kind.name)


loop = Loop("Delivering", _turn, recheck=RECHECK, calm=CALM)
ensure_running = loop.ensure_running
wake = loop.wake
