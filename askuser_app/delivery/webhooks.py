"""Webhooks: a resolved prompt's result POSTed, signed, to its agent's callback_url.

The request that resolves a prompt never sends anything: its transaction
records a delivery row (``prompt_resolved``, called from the one transition in
``services``), and after commit a per-process loop, started lazily like the
expiry loop, sends it. Claiming an attempt is a compare-and-set on the
delivery's attempt count, so two processes never send the same attempt; the
claim also pushes ``next_attempt_at`` past the attempt's timeout, so a process
that dies mid-attempt leaves the delivery for any other process to retry.
Every attempt is recorded; failures are retried with exponential backoff up
to ``WEBHOOK_ATTEMPTS`` times. Delivery is at least once: receivers drop
repeats by the result's ``id``, which the signature covers (the
``Askuser-Delivery`` and ``Askuser-Attempt`` headers are not signed).

Fairness: a process holds at most ``PER_HOST`` attempts in flight to one
callback host (host:port) and takes due deliveries in turns across hosts, so
receivers that never answer cannot take every slot. A host whose attempts
keep timing out backs off on its own: each timeout in a row doubles a pause
(stored in ``WebhookHost``, so every process keeps it) that pushes back all
its pending deliveries; any answer from the host ends it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import F, Min, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from askuser_app.agents.client import SIGNATURE_HEADER, sign
from askuser_app.delivery import egress
from askuser_app.domain import addresses
from askuser_app.models import WebhookAttempt, WebhookDelivery, WebhookHost
from askuser_app.runtime.asyncdb import database_call
from askuser_app.runtime.background import Loop

if TYPE_CHECKING:
    from askuser_app.models import Prompt, WebhookDelivery

log = logging.getLogger("askuser")

RECHECK = 5.0  # deliveries recorded by other processes are seen within this
CONCURRENCY = 16  # attempts in flight per process
# Attempts in flight to one host per process: a receiver that never answers
# holds at most this many of the CONCURRENCY slots, the rest serve other hosts.
PER_HOST = 2
BACKOFF_CAP = 1800.0


def attempts_allowed() -> int:
    return settings.ASKUSER_WEBHOOK_ATTEMPTS


def host_pause(timeouts: int) -> float:
    """Seconds a host's deliveries wait after ``timeouts`` attempts in a row got no answer in time."""
    first: float = settings.ASKUSER_WEBHOOK_RETRY_BASE
    return min(first * 2.0 ** (timeouts - 1), BACKOFF_CAP)


def host_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


def retry_delay(number: int) -> float:
    """Seconds to wait after failed attempt ``number``: doubling, capped, with ±20 % jitter."""
    first: float = settings.ASKUSER_WEBHOOK_RETRY_BASE
    base = min(first * 2.0 ** (number - 1), BACKOFF_CAP)
    return base * random.uniform(0.8, 1.2)


# --- recording (inside the resolving transaction) ---------------------------------------


def on_prompt_resolved(sender: Any, *, prompt: Prompt, result: dict[str, Any], **kwargs: Any) -> None:
    """``domain.signals.prompt_resolved``: inside the transition's transaction."""
    prompt_resolved(prompt, result)


def prompt_resolved(prompt: Prompt, result: dict[str, Any]) -> None:
    """Record the delivery of ``result`` if the prompt asked for one; send it after commit."""
    if not prompt.callback_url:
        return

    body = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    host, now = host_of(prompt.callback_url), timezone.now()
    # A host backing off gets the new delivery at the end of its pause too.
    paused = WebhookHost.objects.filter(host=host, paused_until__gt=now).values_list("paused_until", flat=True)
    due = paused.first() or now
    WebhookDelivery.objects.create(prompt=prompt, url=prompt.callback_url, body=body, host=host, next_attempt_at=due)
    transaction.on_commit(wake, robust=True)


# --- the delivery loop ------------------------------------------------------------------


_sending: dict[asyncio.Task[None], str] = {}  # each attempt in flight, and its host


async def _turn() -> datetime | None:
    """Start the attempts now due (a bounded number at once); the next is due when?"""
    busy = Counter(_sending.values())
    for claimed in await database_call(claim_due)(CONCURRENCY - len(_sending), busy):
        task = asyncio.ensure_future(_attempt(claimed))
        _sending[task] = claimed.host
        task.add_done_callback(_sending.pop)
    return await database_call(next_due)()


loop = Loop("Delivering webhooks", _turn, recheck=RECHECK)
ensure_running = loop.ensure_running
wake = loop.wake


@dataclass(frozen=True)
class Claimed:
    """One attempt this process won the right to make."""

    delivery_id: int
    number: int
    url: str
    body: str
    secret: str
    host: str


def claim_due(limit: int, busy: Mapping[str, int]) -> list[Claimed]:
    """Claim up to ``limit`` due attempts, sharing them out by host (``busy``: in flight per host).

    A delivery out of attempts is marked failed."""

    now = timezone.now()
    lease = now + timedelta(seconds=settings.ASKUSER_WEBHOOK_TIMEOUT + 30)
    claimed = []
    for delivery in fair_share(now, limit, busy):
        mine = WebhookDelivery.objects.filter(
            pk=delivery.pk, status=WebhookDelivery.Status.PENDING, attempt_count=delivery.attempt_count
        )
        if delivery.attempt_count >= attempts_allowed():  # its last attempt died with its process
            mine.update(status=WebhookDelivery.Status.FAILED, finished_at=now)
            continue
        number = delivery.attempt_count + 1
        if mine.update(attempt_count=number, next_attempt_at=lease):
            secret = delivery.prompt.agent.webhook_secret
            claimed.append(Claimed(delivery.pk, number, delivery.url, delivery.body, secret, delivery.host))
    return claimed


def fair_share(now: datetime, limit: int, busy: Mapping[str, int]) -> list[WebhookDelivery]:
    """Up to ``limit`` due deliveries in turns: each host's longest waiting first, then each
    host's second, … never more than PER_HOST in flight to one host."""

    if limit <= 0:
        return []
    due = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now)
    full = [host for host, count in busy.items() if count >= PER_HOST]
    turn = Window(RowNumber(), partition_by=F("host"), order_by=F("next_attempt_at").asc())
    ranked = due.exclude(host__in=full).annotate(turn=turn).filter(turn__lte=PER_HOST)
    rows = ranked.select_related("prompt__agent").order_by("turn", "next_attempt_at")
    share: list[WebhookDelivery] = [
        d for d in rows[: limit + len(busy) * PER_HOST] if d.turn + busy.get(d.host, 0) <= PER_HOST
    ]
    return share[:limit]


def next_due() -> datetime | None:
    pending = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING)
    at: datetime | None = pending.aggregate(at=Min("next_attempt_at"))["at"]
    return at


async def _attempt(claimed: Claimed) -> None:
    started_at, began = timezone.now(), time.monotonic()
    try:
        outcome = await send(claimed)
    except Exception as exc:  # a bug must not leave the attempt unrecorded (and retried only when its lease ends)
        log.exception("Webhook attempt %s of delivery %s failed.", claimed.number, claimed.delivery_id)
        outcome = Outcome(None, f"{type(exc).__name__}: {exc}")
    duration_ms = round((time.monotonic() - began) * 1000)
    try:
        await database_call(record)(claimed, started_at, duration_ms, outcome)
    except Exception:
        log.exception("Recording webhook attempt %s of delivery %s failed.", claimed.number, claimed.delivery_id)
    loop.wake()  # the loop may be sleeping past this delivery's next attempt


@dataclass(frozen=True)
class Outcome:
    """What one attempt got: the HTTP status (None without an answer), why it failed, the answer's start."""

    status: int | None
    error: str = ""
    excerpt: str = ""
    final: bool = False  # not worth retrying: the address is refused
    timed_out: bool = False  # no answer in time: the host may be overwhelmed


async def send(claimed: Claimed) -> Outcome:
    """POST the signed body once, to the address checked for this attempt."""
    body = claimed.body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "askuser-webhooks",
        SIGNATURE_HEADER: sign(claimed.secret, body),
        "Askuser-Delivery": str(claimed.delivery_id),
        "Askuser-Attempt": str(claimed.number),
    }
    timeout = httpx.Timeout(settings.ASKUSER_WEBHOOK_TIMEOUT)
    try:
        answer = await egress.post(claimed.url, body, headers, addresses.webhook_rules(), timeout)
    except egress.Refused as refused:
        return Outcome(None, str(refused), final=True)
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return Outcome(None, error, timed_out=isinstance(exc, httpx.TimeoutException))
    error = "" if answer.ok else f"the receiver answered HTTP {answer.status}"
    return Outcome(answer.status, error, answer.excerpt)


def record(claimed: Claimed, started_at: datetime, duration_ms: int, outcome: Outcome) -> None:
    """Store the attempt and decide what happens next: done, retry later, or give up."""

    now, error = timezone.now(), outcome.error
    with transaction.atomic():
        WebhookAttempt.objects.create(
            delivery_id=claimed.delivery_id,
            number=claimed.number,
            started_at=started_at,
            duration_ms=duration_ms,
            status_code=outcome.status,
            error=error,
            response_excerpt=outcome.excerpt,
        )
        # Only while this attempt is still the delivery's latest claim.
        mine = WebhookDelivery.objects.filter(
            pk=claimed.delivery_id, status=WebhookDelivery.Status.PENDING, attempt_count=claimed.number
        )
        paused_until = _host_timed_out(claimed.host, now) if outcome.timed_out else None
        if outcome.status is not None:
            _host_answered(claimed.host)
        if not error:
            mine.update(status=WebhookDelivery.Status.DELIVERED, finished_at=now)
        elif outcome.final or claimed.number >= attempts_allowed():
            mine.update(status=WebhookDelivery.Status.FAILED, finished_at=now)
            log.warning("Webhook delivery %s failed after %s attempts: %s", claimed.delivery_id, claimed.number, error)
        else:
            retry_at = now + timedelta(seconds=retry_delay(claimed.number))
            mine.update(next_attempt_at=max(retry_at, paused_until or retry_at))


def _host_timed_out(host: str, now: datetime) -> datetime:
    """One more timeout in a row: the host's pending deliveries all wait out a doubled pause."""

    WebhookHost.objects.get_or_create(host=host)
    row = WebhookHost.objects.select_for_update().get(host=host)
    row.timeouts += 1
    row.paused_until = now + timedelta(seconds=host_pause(row.timeouts))
    row.save(update_fields=["timeouts", "paused_until"])
    waiting = WebhookDelivery.objects.filter(host=host, status=WebhookDelivery.Status.PENDING)
    waiting.filter(next_attempt_at__lt=row.paused_until).update(next_attempt_at=row.paused_until)
    log.warning("Webhook host %s timed out %s times in a row; it waits until %s.", host, row.timeouts, row.paused_until)
    return row.paused_until


def _host_answered(host: str) -> None:
    """Any answer, even an error status, shows the host is back: its pause ends."""

    WebhookHost.objects.filter(host=host, timeouts__gt=0).update(timeouts=0, paused_until=None)
