"""Webhooks: a resolved prompt's result POSTed, signed, to a receiver on 127.0.0.1, retried and recorded;
private addresses refused unless allowed."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from django.test import Client

from askuser_app.domain import contract, services
from askuser_app.models import Prompt, WebhookAttempt, WebhookDelivery, new_webhook_secret
from askuser_client.client import sign, verify_signature
from tests.conftest import DEADLINE, auth, payload, until_sync
from tests.servers import DaphneServer
from tests.webhookfake import (
    ATTEMPT_TIMEOUT,
    ATTEMPTS,
    RETRY_BASE,
    WEBHOOK_ENV,
    Receiver,
    ask_with_callback,
    cancel_over_http,
    delivery_of,
    finished,
    never_answering,
)


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def webhook_env(server_env):
    return {**server_env, **WEBHOOK_ENV}


@pytest.fixture(scope="module")
def server(webhook_env):
    daphne = DaphneServer(webhook_env).start()
    yield daphne
    daphne.stop()


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_resolution_posts_the_signed_result_to_the_callback_url(server, receiver, agent, token):
    prompt_id = ask_with_callback(server, token, receiver.url)

    cancelled = httpx.post(f"{server.url}/api/v1/prompts/{prompt_id}/cancel", headers=auth(token))
    until_sync(finished(prompt_id))

    [(headers, body)] = receiver.requests
    assert json.loads(body) == cancelled.json() == Prompt.objects.get(pk=prompt_id).result
    assert verify_signature(agent.webhook_secret, body, headers["Askuser-Signature"])
    assert not verify_signature(new_webhook_secret(), body, headers["Askuser-Signature"])
    assert headers["Content-Type"] == "application/json"
    delivery = delivery_of(prompt_id)
    assert headers["Askuser-Delivery"] == str(delivery.pk)
    assert (delivery.status, [a.status_code for a in delivery.attempts.all()]) == ("delivered", [204])


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_failing_receiver_gets_retries_with_growing_delays_each_recorded(server, agent, token):
    receiver = Receiver(fail_first=2)
    try:
        prompt_id = ask_with_callback(server, token, receiver.url)
        httpx.post(f"{server.url}/api/v1/prompts/{prompt_id}/cancel", headers=auth(token))
        until_sync(finished(prompt_id))
    finally:
        receiver.close()

    delivery = delivery_of(prompt_id)
    attempts = list(delivery.attempts.all())
    assert delivery.status == "delivered"
    assert [(a.number, a.status_code) for a in attempts] == [(1, 500), (2, 500), (3, 204)]
    assert attempts[0].error == "the receiver answered HTTP 500" and attempts[2].error == ""
    for n in (1, 2):  # never earlier than the backoff allows (doubling, at most 20 % early)
        gap = (attempts[n].started_at - attempts[n - 1].started_at).total_seconds()
        assert gap >= 0.8 * RETRY_BASE * 2 ** (n - 1)
    bodies = {body for _, body in receiver.requests}
    assert len(bodies) == 1  # every attempt carries the same bytes, each freshly signed
    assert all(verify_signature(agent.webhook_secret, body, h["Askuser-Signature"]) for h, body in receiver.requests)
    assert [h["Askuser-Attempt"] for h, _ in receiver.requests] == ["1", "2", "3"]


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_an_unreachable_receiver_is_given_up_after_the_last_attempt(server, token):
    closed = Receiver()
    closed.close()  # nothing listens on its port any more
    prompt_id = ask_with_callback(server, token, closed.url)

    httpx.post(f"{server.url}/api/v1/prompts/{prompt_id}/cancel", headers=auth(token))
    until_sync(finished(prompt_id))

    delivery = delivery_of(prompt_id)
    assert delivery.status == "failed" and delivery.finished_at is not None
    assert [(a.number, a.status_code) for a in delivery.attempts.all()] == [(n, None) for n in range(1, ATTEMPTS + 1)]
    assert all(a.error.startswith("ConnectError") for a in delivery.attempts.all())


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_the_request_that_resolves_the_prompt_never_waits_for_the_delivery(server, receiver, token):
    receiver.release.clear()  # the receiver holds every request until told
    prompt_id = ask_with_callback(server, token, receiver.url)

    cancelled = httpx.post(f"{server.url}/api/v1/prompts/{prompt_id}/cancel", headers=auth(token), timeout=DEADLINE)
    until_sync(lambda: len(receiver.requests) == 1)  # the delivery is in flight, held by the receiver…
    assert cancelled.status_code == 200  # …and the cancel has long returned
    assert delivery_of(prompt_id).status == "pending"

    receiver.release.set()
    until_sync(finished(prompt_id))
    assert delivery_of(prompt_id).status == "delivered"


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_delivery_recorded_while_the_server_was_down_is_sent_after_the_restart(webhook_env, receiver, token, owner):
    first = DaphneServer(webhook_env).start()
    try:
        prompt_id = ask_with_callback(first, token, receiver.url)
        first.kill()
        prompt = Prompt.objects.get(pk=prompt_id)
        services.answer(prompt, {"deploy_target": "Production"}, by=owner, surface="web")
        assert delivery_of(prompt_id).status == "pending"

        second = DaphneServer(webhook_env, port=first.port).start()
        try:
            until_sync(finished(prompt_id))
        finally:
            second.stop()
    finally:
        first.stop()

    [(_, body)] = receiver.requests
    assert json.loads(body)["answers"] == {"answers": {"deploy_target": ["Production"]}}


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_receivers_that_never_answer_do_not_delay_another_owners_webhook(server, token, other_user, settings):
    settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE = True
    silent, fast = never_answering(), Receiver()
    try:
        slow_agent, _ = services.create_agent("slow", other_user)
        for n in range(64):
            body = contract.parse_create(payload(session=f"slow-{n}", callback_url=silent.url))
            services.cancel(services.ask(slow_agent, body).prompt, agent=slow_agent)
        until_sync(lambda: len(silent.requests) >= 2)  # the server is busy with them

        prompt_id = ask_with_callback(server, token, fast.url)
        cancel_over_http(server, token, prompt_id)

        until_sync(lambda: len(fast.requests) == 1, within=ATTEMPT_TIMEOUT)
        assert len(silent.requests) < 16  # the silent host holds a few slots, never all
    finally:
        silent.close()
        fast.close()
        # The server would go on retrying the silent host while the test's tables are emptied
        # (a deadlock with the flush on PostgreSQL): end those deliveries first, so that no try is
        # claimed any more, then wait until every try claimed so far has recorded its attempt.
        slow = WebhookDelivery.objects.filter(prompt__agent__owner=other_user)
        slow.update(status="failed")

        def recorded() -> bool:
            claimed = sum(slow.values_list("attempt_count", flat=True))
            return WebhookAttempt.objects.filter(delivery__in=slow).count() >= claimed

        until_sync(recorded, within=ATTEMPT_TIMEOUT * 2)


@pytest.mark.django_db
def test_a_prompt_without_a_callback_url_records_no_delivery(api, owner):
    prompt = Prompt.objects.get(pk=api.ask().json()["id"])
    services.answer(prompt, {"deploy_target": "Production"}, by=owner)

    assert not WebhookDelivery.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://agent.example.com/hook", "must be an http:// or https:// URL with a host"),
        ("https:///hook", "must be an http:// or https:// URL with a host"),
        ("https://user:pw@agent.example.com/hook", "must not carry credentials"),
        ("https://agent.example.com/a hook", "must be a URL without spaces"),
        ("https://agent.example.com:port/hook", "must be a valid http:// or https:// URL"),
        ("https://agent.example.com:99999/hook", "must be a valid http:// or https:// URL"),
        # Ports httpx reads as 80 with int() (and urllib refuses): ASCII digits only.
        ("http://agent.example.com:+80/hook", "must be a valid http:// or https:// URL"),
        ("http://agent.example.com:8_0/hook", "must be a valid http:// or https:// URL"),
        ("http://agent.example.com:٨٠/hook", "must be a valid http:// or https:// URL"),
        ("http://agent.example.com:８０/hook", "must be a valid http:// or https:// URL"),
        ("http://agent.example.com:0/hook", "must be a valid http:// or https:// URL"),
        ("http://①②⑦.0.0.1/hook", "must be a valid http:// or https:// URL"),  # the sender's parser refuses it
        ("https://127.0.0.1%2e/hook", "must name its host in letters, digits, hyphens and dots"),
        ("https://agent.example.com/" + "h" * 2048, "must be at most 2048 characters"),
    ],
)
def test_a_bad_callback_url_is_refused_with_a_clear_message_and_nothing_is_stored(api, url, message):
    response = api.ask(payload(callback_url=url))

    assert response.status_code == 422
    [error] = response.json()["errors"]
    assert error["path"] == "callback_url" and error["message"].startswith(message)
    assert not Prompt.objects.exists()


PRIVATE_HOSTS = [
    ("127.0.0.1", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("[::1]", "::1"),
    ("[::ffff:127.0.0.1]", "127.0.0.1"),
    ("localhost", "127.0.0.1"),
    ("api.localhost", "127.0.0.1"),
    ("10.0.0.5", "10.0.0.5"),
    ("192.168.1.20", "192.168.1.20"),
    ("169.254.169.254", "169.254.169.254"),
    ("[fe80::1]", "fe80::1"),
    ("0.0.0.0", "0.0.0.0"),
    ("224.0.0.1", "224.0.0.1"),
    ("LOCALHOST.", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"),
    # IPv6 addresses a relay or translator turns into a private IPv4 one: 6to4, Teredo, NAT64.
    ("[2002:7f00:1::]", "2002:7f00:1::"),
    ("[2002:a00:1:1::1]", "2002:a00:1:1::1"),
    ("[2002:c0a8:114::]", "2002:c0a8:114::"),
    ("[2001:0:4136:e378:8000:63bf:f5ff:fffe]", "2001:0:4136:e378:8000:63bf:f5ff:fffe"),
    ("[64:ff9b::7f00:1]", "64:ff9b::7f00:1"),
    ("[64:ff9b::a9fe:a9fe]", "64:ff9b::a9fe:a9fe"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("host", "address"), PRIVATE_HOSTS)
def test_a_callback_url_naming_a_private_address_is_refused_at_create_time(api, host, address):
    response = api.ask(payload(callback_url=f"http://{host}:8080/admin/"))

    assert response.status_code == 422
    [error] = response.json()["errors"]
    assert error["path"] == "callback_url"
    assert f"non-public address ({address})" in error["message"]
    assert "ASKUSER_WEBHOOK_ALLOW_PRIVATE=1" in error["message"]
    assert not Prompt.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "https://agent.example.com/hook",
        "http://8.8.8.8/hook",
        "http://[2606:4700::1]/h",
        "http://[2002:808:808::1]/h",  # 6to4 of a public address
        "http://[64:ff9b::808:808]/h",  # NAT64 of a public address, as DNS64 answers on an IPv6-only host
    ],
)
def test_a_callback_url_naming_a_public_host_is_accepted(api, url):
    assert api.ask(payload(callback_url=url)).status_code == 201


@pytest.mark.django_db
def test_private_callback_urls_are_accepted_when_the_operator_allows_them(api, settings):
    settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE = True

    assert api.ask(payload(session="s1", callback_url="http://127.0.0.1:9000/hook")).status_code == 201
    assert api.ask(payload(session="s2", callback_url="http://localhost/hook")).status_code == 201


@pytest.mark.django_db
def test_the_allow_list_admits_its_hosts_and_networks_only(api, settings):
    settings.ASKUSER_WEBHOOK_ALLOW_HOSTS = ["agents.internal", "10.0.0.0/8", "localhost"]

    assert api.ask(payload(session="s1", callback_url="http://10.1.2.3/hook")).status_code == 201
    assert api.ask(payload(session="s2", callback_url="http://localhost:9000/hook")).status_code == 201
    assert api.ask(payload(session="s3", callback_url="http://192.168.0.1/hook")).status_code == 422
    assert api.ask(payload(session="s4", callback_url="http://127.0.0.1/hook")).status_code == 422


def test_the_tool_schema_leaves_callback_url_to_the_api():
    assert "callback_url" not in contract.tool_definition()["input_schema"]["properties"]


@pytest.mark.django_db
def test_staff_see_each_delivery_with_its_attempts_in_the_admin(api, staff, owner):
    prompt = Prompt.objects.get(pk=api.ask(payload(callback_url="https://agent.example.com/hook")).json()["id"])
    services.answer(prompt, {"deploy_target": "Production"}, by=owner)
    delivery = WebhookDelivery.objects.get()
    failed = "the receiver answered HTTP 503"
    delivery.attempts.create(number=1, started_at=delivery.created_at, duration_ms=12, status_code=503, error=failed)
    browser = Client()
    browser.force_login(staff)

    listing = browser.get("/admin/askuser_app/webhookdelivery/")
    page = browser.get(f"/admin/askuser_app/webhookdelivery/{delivery.pk}/change/")

    assert listing.status_code == 200 and "https://agent.example.com/hook" in listing.content.decode()
    assert page.status_code == 200 and failed in page.content.decode()


def readme_receiver():
    """docs/WEBHOOKS.md's webhook receiver, as a reader would copy it."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "WEBHOOKS.md").read_text()
    block = next(b.split("```")[0] for b in page.split("```python\n")[1:] if "def receive(" in b)
    resumed: list[dict] = []
    namespace = {"resume_run": resumed.append}
    exec(block, namespace)
    return namespace["receive"], resumed


def test_the_readme_receiver_handles_a_result_once_however_often_it_is_delivered():
    receive, resumed = readme_receiver()
    secret = new_webhook_secret()
    body = json.dumps({"status": "no_answer", "id": "4f1c", "reason": "cancelled"}).encode()
    signed = sign(secret, body)

    first = receive(secret, body, {"Askuser-Signature": signed, "Askuser-Delivery": "7", "Askuser-Attempt": "1"})
    retry = receive(secret, body, {"Askuser-Signature": sign(secret, body), "Askuser-Delivery": "7"})
    replay = receive(secret, body, {"Askuser-Signature": signed, "Askuser-Delivery": "8"})  # the header is not signed

    assert (first, retry, replay) == (200, 200, 200)
    assert resumed == [json.loads(body)]


@pytest.mark.parametrize("signature", ["t=²,v1=00", "t=1,v1=é", "", None])
def test_the_readme_receiver_refuses_a_forged_header_with_400(signature):
    receive, resumed = readme_receiver()
    headers = {} if signature is None else {"Askuser-Signature": signature}

    assert receive(new_webhook_secret(), b'{"id": "4f1c"}', headers) == 400
    assert resumed == []


def test_the_readme_receiver_refuses_an_altered_body():
    receive, resumed = readme_receiver()
    secret = new_webhook_secret()
    signed = sign(secret, b'{"id": "4f1c", "status": "no_answer"}')

    assert receive(secret, b'{"id": "4f1c", "status": "answered"}', {"Askuser-Signature": signed}) == 400
    assert resumed == []
