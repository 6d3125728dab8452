"""The delivery engine (askuser_app/delivery/engine.py) handles each row alone: a row it fails on
is logged by its id and put off, and every other row is claimed and sent as usual."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone

from askuser_app.delivery import engine, webhooks
from askuser_app.domain import contract, services
from askuser_app.models import WebhookDelivery
from tests.conftest import payload


class FailingFor(webhooks.Webhooks):
    """Webhooks, with a bug that shows on one row only."""

    def __init__(self, broken: int) -> None:
        self.broken = broken

    def claim(self, delivery: WebhookDelivery, now: datetime, lease: datetime) -> webhooks.Claimed | None:
        if delivery.pk == self.broken:
            raise RuntimeError("a kind's bug")
        return super().claim(delivery, now, lease)


def resolved_with_callback(agent: Any, session: str, host: str) -> WebhookDelivery:
    request = contract.parse_create(payload(session=session, callback_url=f"http://{host}/h"))
    prompt = services.ask(agent, request).prompt
    services.cancel(prompt, agent=agent)
    return WebhookDelivery.objects.get(prompt=prompt)


@pytest.mark.django_db
def test_a_row_the_engine_fails_on_is_logged_and_put_off_and_the_others_are_claimed(
    settings, agent, monkeypatch, caplog
):
    settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE = True
    broken, *others = [resolved_with_callback(agent, f"s{n}", f"10.0.0.{n + 1}") for n in range(3)]
    monkeypatch.setattr(engine, "KINDS", [FailingFor(broken.pk)])

    claimed = engine.claim_due()

    assert sorted(claim.row_id for claim in claimed) == sorted(row.pk for row in others)
    broken.refresh_from_db()
    assert broken.attempt_count == 0 and broken.next_attempt_at > timezone.now()  # not first again at once
    said = [record.getMessage() for record in caplog.records if record.name == "askuser"]
    assert f"Claiming webhooks row {broken.pk} failed; the others go on." in said
