"""Webhooks refused at send time, by this process's own engine.

Apart from tests/delivery/test_webhooks.py on purpose: that module keeps a Daphne server
running on the same test database, with private addresses allowed, and its engine (started
with the server) would pick these deliveries up and send them under its own settings.
"""

from __future__ import annotations

import pytest
from django.db import transaction

from askuser_app.delivery import egress, engine
from askuser_app.domain import addresses, contract, services
from askuser_app.models import Prompt, WebhookDelivery
from askuser_app.runtime.asyncdb import database_call
from tests.conftest import asgi_request, ask_async, auth, payload, until_async
from tests.webhookfake import Receiver, delivery_of, finished


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


def ask_and_cancel(agent, url: str) -> str:
    prompt = services.ask(agent, contract.parse_create(payload(callback_url=url))).prompt
    services.cancel(prompt, agent=agent)
    return prompt.pk


@pytest.mark.django_db(transaction=True)
async def test_a_callback_name_resolving_to_a_private_address_is_refused_once_and_never_sent(settings, receiver, agent):
    settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE = True  # when the prompt was made

    def made_then_closed() -> str:
        # One transaction: the engine (on a thread of its own) sees the delivery only once the
        # setting no longer allows private addresses.
        with transaction.atomic():
            prompt_id = ask_and_cancel(agent, hook)
            settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE = False
        return prompt_id

    hook = receiver.url.replace("127.0.0.1", "localhost")
    prompt_id = await database_call(made_then_closed)()

    engine.ensure_running()
    delivery = await until_async(lambda: delivery_of(prompt_id) if finished(prompt_id)() else None)

    [attempt] = await database_call(list)(delivery.attempts.all())
    assert delivery.status == "failed"  # at once: refused addresses are not retried
    assert attempt.error.startswith("refused: callback_url resolves to a private address (")
    assert attempt.error.endswith("set ASKUSER_WEBHOOK_ALLOW_PRIVATE=1 to allow")
    assert receiver.requests == []


@pytest.mark.django_db(transaction=True)
async def test_a_callback_url_the_sender_cannot_parse_is_a_recorded_failed_attempt(agent):
    """A delivery recorded before create time read URLs as the sender does: it fails once, recorded."""

    def resolved_with_an_old_url() -> str:
        prompt = ask_and_cancel(agent, "https://agent.example.com/hook")
        WebhookDelivery.objects.filter(prompt_id=prompt).update(url="http://①②⑦.0.0.1/hook")
        return prompt

    prompt_id = await database_call(resolved_with_an_old_url)()

    engine.ensure_running()
    delivery = await until_async(lambda: delivery_of(prompt_id) if finished(prompt_id)() else None)

    [attempt] = await database_call(list)(delivery.attempts.all())
    assert delivery.status == "failed" and attempt.status_code is None
    assert attempt.error == "refused: callback_url is not a URL the server can send to"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("port", ["+80", "8_0", "٨٠"])
async def test_a_prompt_stored_with_such_a_port_is_cancelled_and_its_delivery_refused_once(agent, token, port):
    """A callback_url stored before its port was read as ASCII digits: the cancel is made, and the
    delivery fails at once, saying why, without sending anything."""
    prompt = await ask_async(agent, callback_url="https://agent.example.com/hook")
    stored = f"http://agent.example.com:{port}/hook"
    await database_call(Prompt.objects.filter(pk=prompt.pk).update)(callback_url=stored)

    cancelled = await asgi_request("POST", f"/api/v1/prompts/{prompt.pk}/cancel", headers=auth(token))

    assert cancelled.status_code == 200 and cancelled.json()["reason"] == "cancelled"
    engine.ensure_running()
    delivery = await until_async(lambda: delivery_of(prompt.pk) if finished(prompt.pk)() else None)
    [attempt] = await database_call(list)(delivery.attempts.all())
    assert delivery.status == "failed" and attempt.status_code is None
    assert attempt.error == "refused: callback_url is not a URL the server can send to"


async def test_a_send_goes_to_the_checked_address_with_the_name_in_host_and_tls(settings):
    settings.ASKUSER_WEBHOOK_ALLOW_HOSTS = ["localhost"]

    pinned = await egress.pin("https://localhost:8443/askuser-hook?x=1", addresses.webhook_rules())

    assert pinned.url.host in ("127.0.0.1", "::1") and pinned.url.port == 8443
    assert pinned.url.path == "/askuser-hook" and pinned.url.query == b"x=1"
    assert pinned.host_header == "localhost:8443"
    assert pinned.extensions == {"sni_hostname": "localhost"}
