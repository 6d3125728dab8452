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
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from .asyncdb import database_call
from .background import Loop
from .client import SIGNATURE_HEADER, sign

if TYPE_CHECKING:
    from .models import Prompt

log = logging.getLogger("askuser")

RECHECK = 5.0  # deliveries recorded by other processes are seen within this
CONCURRENCY = 16  # attempts in flight per process, so one slow receiver delays no other
BACKOFF_CAP = 1800.0
EXCERPT = 500


def attempts_allowed() -> int:
    return settings.ASKUSER_WEBHOOK_ATTEMPTS


def retry_delay(number: int) -> float:
    """Seconds to wait after failed attempt ``number``: doubling, capped, with ±20 % jitter."""
    base = min(settings.ASKUSER_WEBHOOK_RETRY_BASE * 2 ** (number - 1), BACKOFF_CAP)
    return base * random.uniform(0.8, 1.2)


# --- recording (inside the resolving transaction) ---------------------------------------


def prompt_resolved(prompt: Prompt, result: dict[str, Any]) -> None:
    """Record the delivery of ``result`` if the prompt asked for one; send it after commit."""
    if not prompt.callback_url:
        return
    from .models import WebhookDelivery

    body = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    WebhookDelivery.objects.create(prompt=prompt, url=prompt.callback_url, body=body)
    transaction.on_commit(wake, robust=True)


# --- the delivery loop ------------------------------------------------------------------


_sending: set[asyncio.Task[None]] = set()


async def _turn() -> datetime | None:
    """Start the attempts now due (a bounded number at once); the next is due when?"""
    for claimed in await database_call(claim_due)(CONCURRENCY - len(_sending)):
        task = asyncio.ensure_future(_attempt(claimed))
        _sending.add(task)
        task.add_done_callback(_sending.discard)
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


def claim_due(limit: int) -> list[Claimed]:
    """Claim up to ``limit`` due attempts; a delivery out of attempts is marked failed."""
    from .models import WebhookDelivery

    now = timezone.now()
    lease = now + timedelta(seconds=settings.ASKUSER_WEBHOOK_TIMEOUT + 30)
    due = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now)
    claimed = []
    for delivery in due.select_related("prompt__agent").order_by("next_attempt_at")[: max(limit, 0)]:
        mine = WebhookDelivery.objects.filter(
            pk=delivery.pk, status=WebhookDelivery.Status.PENDING, attempt_count=delivery.attempt_count
        )
        if delivery.attempt_count >= attempts_allowed():  # its last attempt died with its process
            mine.update(status=WebhookDelivery.Status.FAILED, finished_at=now)
            continue
        number = delivery.attempt_count + 1
        if mine.update(attempt_count=number, next_attempt_at=lease):
            secret = delivery.prompt.agent.webhook_secret
            claimed.append(Claimed(delivery.pk, number, delivery.url, delivery.body, secret))
    return claimed


def next_due() -> datetime | None:
    from .models import WebhookDelivery

    pending = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING)
    return pending.aggregate(at=Min("next_attempt_at"))["at"]


async def _attempt(claimed: Claimed) -> None:
    started_at, began = timezone.now(), time.monotonic()
    status, error, excerpt = await send(claimed)
    duration_ms = round((time.monotonic() - began) * 1000)
    try:
        await database_call(record)(claimed, started_at, duration_ms, status, error, excerpt)
    except Exception:
        log.exception("Recording webhook attempt %s of delivery %s failed.", claimed.number, claimed.delivery_id)
    loop.wake()  # the loop may be sleeping past this delivery's next attempt


async def send(claimed: Claimed) -> tuple[int | None, str, str]:
    """POST the signed body once: (HTTP status or None, error, start of the response)."""
    body = claimed.body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "askuser-webhooks",
        SIGNATURE_HEADER: sign(claimed.secret, body),
        "Askuser-Delivery": str(claimed.delivery_id),
        "Askuser-Attempt": str(claimed.number),
    }
    try:
        async with (
            httpx.AsyncClient(timeout=settings.ASKUSER_WEBHOOK_TIMEOUT, follow_redirects=False) as http,
            http.stream("POST", claimed.url, content=body, headers=headers) as response,
        ):
            excerpt = await _excerpt(response)
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, ""
    error = "" if response.is_success else f"the receiver answered HTTP {response.status_code}"
    return response.status_code, error, excerpt


async def _excerpt(response: httpx.Response) -> str:
    read = b""
    async for chunk in response.aiter_raw():
        read += chunk
        if len(read) >= EXCERPT:
            break
    return read[:EXCERPT].decode(errors="replace")


def record(
    claimed: Claimed, started_at: datetime, duration_ms: int, status: int | None, error: str, excerpt: str
) -> None:
    """Store the attempt and decide what happens next: done, retry later, or give up."""
    from .models import WebhookAttempt, WebhookDelivery

    now = timezone.now()
    with transaction.atomic():
        WebhookAttempt.objects.create(
            delivery_id=claimed.delivery_id,
            number=claimed.number,
            started_at=started_at,
            duration_ms=duration_ms,
            status_code=status,
            error=error,
            response_excerpt=excerpt,
        )
        # Only while this attempt is still the delivery's latest claim.
        mine = WebhookDelivery.objects.filter(
            pk=claimed.delivery_id, status=WebhookDelivery.Status.PENDING, attempt_count=claimed.number
        )
        if not error:
            mine.update(status=WebhookDelivery.Status.DELIVERED, finished_at=now)
        elif claimed.number >= attempts_allowed():
            mine.update(status=WebhookDelivery.Status.FAILED, finished_at=now)
            log.warning("Webhook delivery %s failed after %s attempts: %s", claimed.delivery_id, claimed.number, error)
        else:
            mine.update(next_attempt_at=now + timedelta(seconds=retry_delay(claimed.number)))
