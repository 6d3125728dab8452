"""Webhooks to a host that keeps timing out: it waits out a growing pause, other hosts do not.

A module of its own, so that its server (with one-second attempts) is the only
one sending while it runs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from askuser_app.models import WebhookAttempt
from tests.conftest import until_sync
from tests.servers import DaphneServer
from tests.webhookfake import Receiver, ask_with_callback, cancel_over_http, delivery_of, finished, never_answering

RETRY_BASE = 1.0
SECOND_PAUSE = timedelta(seconds=2 * RETRY_BASE)  # after two timeouts in a row


@pytest.fixture(scope="module")
def server(server_env):
    env = {
        **server_env,
        "ASKUSER_WEBHOOK_ALLOW_PRIVATE": "1",  # the receivers listen on 127.0.0.1
        "ASKUSER_WEBHOOK_TIMEOUT": "1",
        "ASKUSER_WEBHOOK_RETRY_BASE": str(RETRY_BASE),
        "ASKUSER_WEBHOOK_ATTEMPTS": "4",
    }
    daphne = DaphneServer(env).start()
    yield daphne
    daphne.stop()


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_host_that_keeps_timing_out_pauses_its_deliveries_while_others_are_sent(server, token):
    silent, fast = never_answering(), Receiver()
    try:
        slow_ids = [ask_with_callback(server, token, silent.url, session=f"slow-{n}") for n in range(3)]
        for prompt_id in slow_ids:
            cancel_over_http(server, token, prompt_id)
        until_sync(lambda: len(attempts_of(slow_ids)) >= 2)  # two timeouts in a row
        fast_id = ask_with_callback(server, token, fast.url, session="fast")
        cancel_over_http(server, token, fast_id)
        until_sync(finished(fast_id))
        until_sync(lambda: len(attempts_of(slow_ids)) >= 4)
    finally:
        server.stop()  # before the silent receiver lets its requests go
        silent.close()
        fast.close()

    attempts = attempts_of(slow_ids)
    assert all("Timeout" in a.error.split(":")[0] for a in attempts), [a.error for a in attempts]
    second_timeout = sorted(a.started_at + timedelta(milliseconds=a.duration_ms) for a in attempts)[1]
    later = [a.started_at for a in attempts if a.started_at > second_timeout]
    assert later and min(later) >= second_timeout + SECOND_PAUSE - timedelta(milliseconds=5)
    [sent] = delivery_of(fast_id).attempts.all()
    assert sent.status_code == 204 and sent.started_at < second_timeout + SECOND_PAUSE


def attempts_of(prompt_ids: list[str]) -> list[WebhookAttempt]:
    return list(WebhookAttempt.objects.filter(delivery__prompt_id__in=prompt_ids))
