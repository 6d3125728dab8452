"""Webhooks: a resolved prompt's result POSTed, signed, to its agent's callback_url.

One kind of the delivery engine (``engine``), which claims, retries and
shares the attempts out fairly: the request that resolves a prompt never
sends anything; its transaction records a ``WebhookDelivery``
(``prompt_resolved``, called from the one transition in ``services``), and
after commit the engine sends it. A claim is a compare-and-set on the
delivery's attempt count that also pushes ``next_attempt_at`` past the
attempt's timeout, so two processes never send the same attempt and a
process that dies mid-attempt leaves the delivery for any other to retry.
Every attempt is recorded; failures are retried with exponential backoff up
to ``WEBHOOK_ATTEMPTS`` times. Delivery is at least once: receivers drop
repeats by the result's ``id``, which the signature covers (the
``Askuser-Delivery`` and ``Askuser-Attempt`` headers are not signed).

A delivery's host is its URL's host:port, the unit the engine shares an
owner's attempts by and pauses when it keeps timing out. Connecting (and the
TLS handshake) has ``ASKUSER_CONNECT_TIMEOUT``; the answer has
``ASKUSER_WEBHOOK_TIMEOUT``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from askuser_app.delivery import egress, engine
from askuser_app.delivery.engine import Outcome, Tried
from askuser_app.domain import addresses
from askuser_app.models import WebhookAttempt, WebhookDelivery
from askuser_client.client import SIGNATURE_HEADER, sign

if TYPE_CHECKING:
    from askuser_app.models import Prompt

log = logging.getLogger("askuser")

BACKOFF_CAP = 1800.0


def attempts_allowed() -> int:
    return settings.ASKUSER_WEBHOOK_ATTEMPTS


def host_of(url: str) -> str:
    """Its host:port as the sender reads it; a URL it cannot read is recorded all the same, and
    its one attempt refused (``addresses.host_key``): the resolution never fails for it."""
    return addresses.host_key(url)


def timeouts() -> httpx.Timeout:
    """Connecting (TCP and TLS) may take ``ASKUSER_CONNECT_TIMEOUT``; each read and write
    ``ASKUSER_WEBHOOK_TIMEOUT``."""
    return httpx.Timeout(settings.ASKUSER_WEBHOOK_TIMEOUT, connect=settings.ASKUSER_CONNECT_TIMEOUT)


def retry_delay(number: int) -> float:
    """Seconds to wait after failed attempt ``number``: doubling, capped, with ±20 % jitter."""
    return engine.backoff(number, settings.ASKUSER_WEBHOOK_RETRY_BASE, BACKOFF_CAP)


# --- recording (inside the resolving transaction) ---------------------------------------


def prompt_resolved(prompt: Prompt, result: dict[str, Any]) -> None:
    """Record the delivery of ``result`` if the prompt asked for one; send it after commit."""
    if not prompt.callback_url:
        return

    body = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    WebhookDelivery.objects.create(
        prompt=prompt,
        owner_id=prompt.session.owner_id,
        url=prompt.callback_url,
        body=body,
        host=host_of(prompt.callback_url),
    )
    transaction.on_commit(engine.wake, robust=True)


# --- the kind: claiming, sending, recording ---------------------------------------------


@dataclass(frozen=True)
class Claimed:
    """One attempt this process won the right to make."""

    kind: Webhooks
    row_id: int
    owner_id: int
    host: str
    number: int
    url: str
    body: str
    secret: str


class Webhooks:
    """``WebhookDelivery`` rows, as the engine sends them."""

    name = "webhooks"
    related: tuple[str, ...] = ("prompt__agent",)

    def rows(self) -> QuerySet[WebhookDelivery]:
        return WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING)

    def timeout(self) -> float:
        # Past httpx's own bounds, so that an attempt's error names the phase that took too long.
        seconds: float = settings.ASKUSER_CONNECT_TIMEOUT + settings.ASKUSER_WEBHOOK_TIMEOUT + 1.0
        return seconds

    def retry_base(self) -> float:
        seconds: float = settings.ASKUSER_WEBHOOK_RETRY_BASE
        return seconds

    def claim(self, delivery: WebhookDelivery, now: datetime, lease: datetime) -> Claimed | None:
        """The next attempt (a compare-and-set on the attempt count); a delivery out of attempts is failed."""
        mine = WebhookDelivery.objects.filter(
            pk=delivery.pk, status=WebhookDelivery.Status.PENDING, attempt_count=delivery.attempt_count
        )
        if delivery.attempt_count >= attempts_allowed():  # its last attempt died with its process
            mine.update(status=WebhookDelivery.Status.FAILED, finished_at=now)
            return None
        number = delivery.attempt_count + 1
        if not mine.update(attempt_count=number, next_attempt_at=lease):
            return None
        secret = delivery.prompt.agent.webhook_secret
        return Claimed(self, delivery.pk, delivery.owner_id, delivery.host, number, delivery.url, delivery.body, secret)

    async def attempt(self, claimed: Claimed) -> Outcome:
        return await send(claimed)

    def record(self, claimed: Claimed, tried: Tried, paused_until: datetime | None) -> None:
        """Store the attempt and decide what happens next: done, retry later, or give up."""
        now, outcome = timezone.now(), tried.outcome
        WebhookAttempt.objects.create(
            delivery_id=claimed.row_id,
            number=claimed.number,
            started_at=tried.started_at,
            duration_ms=tried.duration_ms,
            status_code=outcome.status,
            error=outcome.error,
            response_excerpt=outcome.excerpt,
        )
        # Only while this attempt is still the delivery's latest claim.
        mine = WebhookDelivery.objects.filter(
            pk=claimed.row_id, status=WebhookDelivery.Status.PENDING, attempt_count=claimed.number
        )
        if outcome.ok:
            mine.update(status=WebhookDelivery.Status.DELIVERED, finished_at=now)
        elif outcome.final or claimed.number >= attempts_allowed():
            mine.update(status=WebhookDelivery.Status.FAILED, finished_at=now)
            log.warning(
                "Webhook delivery %s failed after %s attempts: %s", claimed.row_id, claimed.number, outcome.error
            )
        else:
            retry_at = now + timedelta(seconds=retry_delay(claimed.number))
            mine.update(next_attempt_at=max(retry_at, paused_until or retry_at))

    def tidy(self) -> None:
        """Deliveries and their attempts stay with their prompts, for staff to read."""


KIND = Webhooks()


async def send(claimed: Claimed) -> Outcome:
    """POST the signed body once, to the address checked for this attempt (``egress.post``)."""
    body = claimed.body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "askuser-webhooks",
        SIGNATURE_HEADER: sign(claimed.secret, body),
        "Askuser-Delivery": str(claimed.row_id),
        "Askuser-Attempt": str(claimed.number),
    }
    try:
        answer = await egress.post(claimed.url, body, headers, addresses.webhook_rules(), timeouts())
    except egress.Refused as refused:
        return Outcome(False, str(refused), final=True)
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return Outcome(False, error, timed_out=isinstance(exc, httpx.TimeoutException))
    error = "" if answer.ok else f"the receiver answered HTTP {answer.status}"
    return Outcome(not error, error, answered=True, status=answer.status, excerpt=answer.excerpt)
