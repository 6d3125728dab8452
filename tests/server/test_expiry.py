"""The deadline loop (askuser_app/server/expiry.py): every overdue prompt expires, whatever one of
them holds; a prompt that cannot be expired is logged by its id and holds up no other."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from askuser_app.delivery import engine
from askuser_app.domain import effects
from askuser_app.models import Prompt, WebhookDelivery
from askuser_app.runtime.asyncdb import database_call
from askuser_app.server import expiry
from tests.conftest import ask_async, until_async


def overdue(prompt_id: Any, **fields: Any) -> None:
    Prompt.objects.filter(pk=prompt_id).update(expires_at=timezone.now() - timedelta(seconds=1), **fields)


def expired(*prompt_ids: Any):
    return lambda: Prompt.objects.filter(pk__in=prompt_ids, reason="expired").count() == len(prompt_ids) or None


@pytest.mark.django_db(transaction=True)
async def test_a_prompt_stored_with_a_port_in_other_digits_expires_with_the_others(agent):
    odd = await ask_async(agent, session="odd", callback_url="https://agent.example.com/hook")
    plain = await ask_async(agent, session="plain")
    await database_call(overdue)(odd.pk, callback_url="http://agent.example.com:+80/hook")
    await database_call(overdue)(plain.pk)

    expiry.ensure_running()
    expiry.loop.wake()

    await until_async(expired(odd.pk, plain.pk))
    engine.ensure_running()
    failed = await until_async(lambda: WebhookDelivery.objects.filter(prompt_id=odd.pk, status="failed").first())
    assert failed.host == "unusable"


@pytest.mark.django_db(transaction=True)
async def test_a_prompt_that_cannot_be_expired_is_logged_by_its_id_and_the_others_expire(agent, caplog):
    broken = await ask_async(agent, session="broken")
    others = [await ask_async(agent, session=f"other-{n}") for n in range(3)]
    for prompt in [broken, *others]:
        await database_call(overdue)(prompt.pk)

    assembled = effects.installed()

    class FailingForTheBrokenOne(type(assembled)):  # type: ignore[misc]
        def prompt_resolved(self, prompt: Prompt, result: dict[str, Any]) -> None:
            if prompt.pk == broken.pk:
                raise RuntimeError("an effect's bug")
            super().prompt_resolved(prompt, result)

    effects.install(FailingForTheBrokenOne())
    try:
        expiry.ensure_running()
        expiry.loop.wake()
        await until_async(expired(*(prompt.pk for prompt in others)))
        # Read while the effect still fails: once it is gone, the running loop's next try succeeds.
        assert (await database_call(Prompt.objects.get)(pk=broken.pk)).status == "pending"
    finally:
        effects.install(assembled)

    said = [record.getMessage() for record in caplog.records if record.name == "askuser"]
    assert f"Expiring prompt {broken.pk} failed; the other prompts are expired all the same." in said
