"""Web Push end to end: real pushes to a local push service (tests/pushfake.py: https on 127.0.0.1,
trusted through SSL_CERT_FILE), decrypted here with the browser's own keys, the VAPID signature checked against the
server's public key; where pushes may not go; the settings routes; the service worker route."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime
import json
import os
import stat
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import jwt
import pytest
import redis
from asgiref.sync import async_to_sync
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings as live_settings
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.utils import timezone

from askuser_app.delivery import channels, engine
from askuser_app.delivery.channels.base import Temporary
from askuser_app.delivery.channels.push import adapter as push
from askuser_app.domain import contract, prefs, services
from askuser_app.models import Delivery, DeliveryAttempt, Prompt, PushSubscription
from askuser_app.runtime import datadir, presence
from askuser_app.runtime.asyncdb import database_call
from tests import pushfake
from tests.conftest import (
    DEADLINE,
    EXTRAS,
    QUESTION,
    SCALED,
    SCALED_REASON,
    asgi_request,
    auth,
    connect,
    payload,
    until_async,
)
from tests.dnsfake import FakeDNS
from tests.pushfake import REBINDING, Browser, PushService, Received, b64url, serving
from tests.servers import DaphneServer
from tests.threads import requests_thread_held

CHROME_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"


@pytest.fixture
def push_service(tmp_path, monkeypatch, settings) -> Iterator[PushService]:
    with pushfake.https(tmp_path) as service:
        # OpenSSL's (and httpx's) way to trust another certificate authority, which pushes honour.
        monkeypatch.setenv("SSL_CERT_FILE", str(service.certificate))
        settings.ASKUSER_PUSH_ALLOW_PRIVATE = True  # the push service is on 127.0.0.1 here
        settings.ASKUSER_PUBLIC_URL = "https://askuser.example.com"
        settings.ASKUSER_CHAT_RETRY_BASE = 0.05
        settings.ASKUSER_PUSH_GRACE = 0  # pushed at once, unless a test waits for the grace
        yield service


@pytest.fixture
def inside() -> Iterator[PushService]:
    """A server inside the network (plain http on loopback), which no push may reach."""
    with serving() as service:
        yield service


def subscribed(user: Any, browser: Browser, device: str = "Chrome on Linux") -> PushSubscription:
    keys = browser.to_json()["keys"]
    return PushSubscription.objects.create(
        user=user, endpoint=browser.endpoint, p256dh=keys["p256dh"], auth=keys["auth"], device=device
    )


def vapid_claims(received: Received, audience: str) -> dict[str, Any]:
    """The VAPID JWT (RFC 8292 ``vapid t=…,k=…``), verified against the server's own public key."""
    scheme, _, params = received.headers["authorization"].partition(" ")
    parts = dict(p.split("=", 1) for p in params.split(","))
    assert scheme == "vapid" and parts["k"] == push.public_key()
    raw = base64.urlsafe_b64decode(push.public_key() + "==")
    server_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw)
    claims: dict[str, Any] = jwt.decode(parts["t"], server_key, algorithms=["ES256"], audience=audience)
    return claims


async def ask(agent: Any, *questions: dict[str, Any]) -> Prompt:
    created = await database_call(services.ask)(agent, contract.parse_create(payload(*questions)))
    return created.prompt


async def ask_in(agent: Any, session: str) -> Prompt:
    created = await database_call(services.ask)(agent, contract.parse_create(payload(session=session)))
    return created.prompt


async def row_of(prompt: Prompt, state: str) -> Delivery:
    return await until_async(lambda: Delivery.objects.filter(prompt=prompt, state=state).first())


# --- sending through the delivery engine -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_new_prompt_reaches_each_device_encrypted_for_it_and_signed_by_the_server(
    push_service, agent, owner, other_user
):
    laptop, phone = Browser(push_service.endpoint("laptop")), Browser(push_service.endpoint("phone"))
    stranger = Browser(push_service.endpoint("stranger"))
    for user, browser in ((owner, laptop), (owner, phone), (other_user, stranger)):
        await database_call(subscribed)(user, browser)

    prompt = await ask(agent)
    engine.ensure_running()

    [to_laptop] = await asyncio.to_thread(push_service.wait_for, "laptop")
    [to_phone] = await asyncio.to_thread(push_service.wait_for, "phone")
    message = laptop.read(to_laptop.body)
    buttons = message.pop("actions")
    assert [(b["action"], b["title"], b["url"]) for b in buttons] == [
        ("option-0", "Staging (Recommended)", "/push/answer"),
        ("option-1", "Production", "/push/answer"),
        ("mute", "Mute this session", "/push/mute"),
    ]
    assert message == {
        "type": "prompt",
        "tag": f"askuser-{prompt.pk}",
        "title": "helper asks: Deploy",
        "body": "Where should this release go first?",
        "agent": "helper",
        "header": "Deploy",
        "question": "Where should this release go first?",
        "url": f"https://askuser.example.com/p/{prompt.pk}/",
        "prompt_id": str(prompt.pk),
        "expires_at": prompt.expires_at.isoformat(),
        "badge": 1,  # the owner's waiting count, for the installed app's badge
        "more": "More options in askuser.",
        "unreachable": "askuser could not be reached. Open it to answer.",
        "requireInteraction": False,
        "renotify": False,
    }
    on_the_phone = phone.read(to_phone.body)
    # Each device's buttons carry tokens of their own: a device removed answers nothing.
    assert [b["token"] for b in on_the_phone.pop("actions")] != [b["token"] for b in buttons]
    assert on_the_phone == message  # each encrypted for its own browser's keys
    assert to_laptop.body != to_phone.body
    assert to_laptop.headers["content-encoding"] == "aes128gcm" and int(to_laptop.headers["ttl"]) > 0
    claims = vapid_claims(to_laptop, audience=push_service.url)
    assert claims["sub"] == "mailto:askuser@askuser.example.com"
    assert push_service.at("stranger") == []  # another person's device hears nothing of it
    sent = await row_of(prompt, "sent")
    assert sent.ref["tag"] == f"askuser-{prompt.pk}"


@pytest.mark.django_db(transaction=True)
async def test_a_push_goes_out_while_the_thread_that_answers_requests_is_held(push_service, agent, owner):
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)
    await ask(agent)

    async with requests_thread_held():  # a slow request: the engine reads and records on its own thread
        engine.ensure_running()
        [received] = await asyncio.to_thread(push_service.wait_for, "laptop")

    assert laptop.read(received.body)["title"] == "helper asks: Deploy"


@pytest.mark.django_db(transaction=True)
async def test_several_questions_say_how_many_more_there_are(push_service, agent, owner):
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)

    await ask(agent, QUESTION, EXTRAS)
    engine.ensure_running()

    [received] = await asyncio.to_thread(push_service.wait_for, "laptop")
    message = laptop.read(received.body)
    assert message["title"] == "helper asks: Deploy"
    assert message["body"] == "Where should this release go first?\nand 1 more question"


@pytest.mark.django_db(transaction=True)
async def test_the_resolved_prompt_closes_its_notification_on_every_device(push_service, agent, owner):
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)
    prompt = await ask(agent)
    engine.ensure_running()
    await asyncio.to_thread(push_service.wait_for, "laptop")
    await row_of(prompt, "sent")

    await database_call(services.answer)(prompt, {"deploy_target": "Production"}, by=owner, surface="web")

    [_shown, closing] = await asyncio.to_thread(push_service.wait_for, "laptop", 2)
    message = laptop.read(closing.body)
    assert message["type"] == "closed" and message["tag"] == f"askuser-{prompt.pk}"
    assert message["outcome"].startswith("Answered: Production")
    await row_of(prompt, "closed")


@pytest.mark.django_db(transaction=True)
async def test_each_push_about_a_prompt_carries_the_owners_waiting_count_as_it_is_then(
    push_service, agent, owner, other_user
):
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)
    theirs = await database_call(services.create_agent)("theirs", other_user)
    await ask_in(theirs[0], "elsewhere")  # another person's prompt counts for them, not here
    engine.ensure_running()

    first = await ask_in(agent, "support-1")
    [shown] = await asyncio.to_thread(push_service.wait_for, "laptop", 1)
    second = await ask_in(agent, "support-2")
    received = await asyncio.to_thread(push_service.wait_for, "laptop", 2)
    await row_of(second, "sent")
    await database_call(services.answer)(first, {"deploy_target": "Production"}, by=owner, surface="web")
    received = await asyncio.to_thread(push_service.wait_for, "laptop", 3)

    told = [laptop.read(r.body) for r in received]
    assert [(m["type"], m["tag"], m["badge"]) for m in told] == [
        ("prompt", f"askuser-{first.pk}", 1),
        ("prompt", f"askuser-{second.pk}", 2),
        ("closed", f"askuser-{first.pk}", 1),  # counted after the answer: the badge goes down
    ]
    assert laptop.read(shown.body)["badge"] == 1


@pytest.mark.django_db
def test_the_test_notification_carries_no_count(push_service, owner):
    laptop = Browser(push_service.endpoint("laptop"))
    subscribed(owner, laptop)

    push.send_test(owner)

    [received] = push_service.wait_for("laptop")
    assert "badge" not in laptop.read(received.body)


@pytest.mark.django_db(transaction=True)
async def test_a_prompt_resolved_before_its_push_went_out_sends_nothing(push_service, agent, owner):
    await database_call(subscribed)(owner, Browser(push_service.endpoint("laptop")))
    prompt = await ask(agent)  # no loop runs yet: the row waits

    await database_call(services.skip_all)(prompt, by=owner, surface="web")

    await row_of(prompt, "dropped")
    assert await database_call(engine.claim_due)(8) == []
    assert push_service.received == []


@pytest.mark.parametrize("status", [404, 410])
@pytest.mark.django_db(transaction=True)
async def test_a_subscription_the_push_service_no_longer_knows_is_removed(push_service, agent, owner, status):
    push_service.answer(status)
    await database_call(subscribed)(owner, Browser(push_service.endpoint("laptop")))
    prompt = await ask(agent)
    engine.ensure_running()

    failed = await row_of(prompt, "failed")

    assert len(push_service.at("laptop")) == 1  # not retried
    assert f"answered {status}" in failed.last_error and "removed" in failed.last_error
    assert not await database_call(PushSubscription.objects.exists)()


@pytest.mark.django_db(transaction=True)
async def test_a_push_service_error_is_retried_until_it_gets_through(push_service, agent, owner):
    push_service.answer(500)
    push_service.answer(429, {"Retry-After": "0"})
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)
    prompt = await ask(agent)
    engine.ensure_running()

    received = await asyncio.to_thread(push_service.wait_for, "laptop", 3)
    await row_of(prompt, "sent")

    assert [laptop.read(r.body)["tag"] for r in received] == [f"askuser-{prompt.pk}"] * 3
    row = await database_call(PushSubscription.objects.get)()
    assert row.last_used_at is not None


@pytest.mark.django_db
def test_a_push_service_that_does_not_answer_in_time_is_tried_again_later(push_service, owner):
    row = subscribed(owner, Browser(push_service.endpoint("laptop")))
    push_service.hold.clear()

    pushed = async_to_sync(push.push)(row, {"type": "test"}, timeout=0.5)

    push_service.hold.set()
    assert not pushed.ok and pushed.temporary and "could not be reached: ReadTimeout" in pushed.error
    with pytest.raises(Temporary):
        push._pushed_or_raise(pushed)


def test_retry_after_in_seconds_or_as_a_date_is_honoured():
    assert push._retry_after("30") == 30.0
    assert push._retry_after(None) is None
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=120)
    assert 100 < (push._retry_after(later.strftime("%a, %d %b %Y %H:%M:%S GMT")) or 0) <= 120


@pytest.mark.django_db
def test_push_costs_a_create_one_read_when_the_owner_has_no_device(agent, owner, django_assert_num_queries):
    prompt = services.ask(agent, contract.parse_create(payload())).prompt
    with django_assert_num_queries(1):
        assert push.adapter.recipients(prompt) == []


def asked_devices(agent: Any, session: str) -> list[str]:
    """The devices a new prompt in ``session`` is to be pushed to, as its create recorded them."""
    prompt = services.ask(agent, contract.parse_create(payload(session=session))).prompt
    return sorted(Delivery.objects.filter(prompt=prompt, channel="push").values_list("address", flat=True))


@pytest.mark.django_db
def test_a_create_after_the_first_reads_no_device_and_still_pushes_to_each(agent, owner):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    laptop = subscribed(owner, Browser("https://push.example.com/laptop"))
    assert asked_devices(agent, "s1") == [str(laptop.pk)]

    with CaptureQueriesContext(connection) as second:
        assert asked_devices(agent, "s2") == [str(laptop.pk)]
    assert not [q for q in second.captured_queries if "askuser_app_pushsubscription" in q["sql"]]


@pytest.mark.django_db
def test_a_device_added_moved_or_removed_is_followed_by_the_next_create(agent, owner, other_user):
    assert asked_devices(agent, "s1") == []
    laptop = subscribed(owner, Browser("https://push.example.com/laptop"))
    assert asked_devices(agent, "s2") == [str(laptop.pk)]

    laptop.user = other_user  # the browser's endpoint, subscribed again by someone else
    laptop.save()
    assert asked_devices(agent, "s3") == []
    phone = subscribed(owner, Browser("https://push.example.com/phone"))
    assert asked_devices(agent, "s4") == [str(phone.pk)]
    phone.delete()
    assert asked_devices(agent, "s5") == []


@pytest.mark.django_db
def test_a_private_push_endpoint_is_refused_at_send_time_too(owner, settings):
    settings.ASKUSER_PUSH_ALLOW_PRIVATE = False
    keys = Browser("https://127.0.0.1:9/push/x").to_json()["keys"]
    row = PushSubscription(user=owner, endpoint="https://127.0.0.1:9/push/x", p256dh=keys["p256dh"], auth=keys["auth"])

    pushed = async_to_sync(push.push)(row, {"type": "test"}, timeout=1)

    assert not pushed.ok and not pushed.temporary and "resolves to a private address (127.0.0.1)" in pushed.error


# --- where pushes may not go ----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_redirect_from_the_push_service_is_not_followed_and_fails_the_device(
    push_service, inside, agent, owner
):
    push_service.answer(307, {"Location": f"{inside.url}/admin/flush"})
    await database_call(subscribed)(owner, Browser(push_service.endpoint("laptop")))
    prompt = await ask(agent)
    engine.ensure_running()

    failed = await row_of(prompt, "failed")

    assert inside.received == []
    assert len(push_service.at("laptop")) == 1  # not retried: the device failed for good
    assert failed.last_error == "the push service answered 307"
    device = await database_call(PushSubscription.objects.get)()
    assert device.last_error == "the push service answered 307"


@pytest.mark.django_db(transaction=True)
async def test_a_device_stored_with_an_endpoint_the_sender_cannot_read_fails_at_once(push_service, agent, owner):
    await database_call(subscribed)(owner, Browser("https://①②⑦.0.0.1/push/laptop"))  # before subscribe checked it
    prompt = await ask(agent)
    engine.ensure_running()

    failed = await row_of(prompt, "failed")

    tries = await database_call(list)(
        DeliveryAttempt.objects.filter(delivery_id=failed.pk).values_list("error", flat=True)
    )
    assert tries == ["refused: the push endpoint is not a URL the server can send to"]


@pytest.mark.django_db(transaction=True)
async def test_a_device_stored_with_a_port_in_other_digits_fails_and_its_owner_still_asks(
    push_service, agent, owner, token
):
    """An endpoint stored before its port was read as ASCII digits: every create of its owner is
    made, the other device gets its push, and this one's delivery fails at once, saying why."""
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)
    await database_call(subscribed)(owner, Browser("https://push.example:+443/push/old"))

    created = await asgi_request("POST", "/api/v1/prompts", json=payload(), headers=auth(token))

    assert created.status_code == 201
    engine.ensure_running()
    [received] = await asyncio.to_thread(push_service.wait_for, "laptop")
    assert laptop.read(received.body)["type"] == "prompt"
    prompt = await database_call(Prompt.objects.get)(pk=created.json()["id"])
    failed = await row_of(prompt, "failed")
    assert failed.host == "unusable"
    assert failed.last_error == "refused: the push endpoint is not a URL the server can send to"


@pytest.fixture
def rebinding(settings) -> Iterator[list[str]]:
    """A DNS server where REBINDING answers 127.0.0.1 first and 127.0.0.2 afterwards (DNS
    rebinding), which the engine resolves with. The names it was asked, in order."""
    dns = FakeDNS({REBINDING: ["127.0.0.1"]}, then={REBINDING: ["127.0.0.2"]})
    settings.ASKUSER_DNS_SERVERS = [dns.address]
    yield dns.asked
    dns.close()


@pytest.mark.django_db(transaction=True)
async def test_a_push_goes_to_the_address_that_was_checked(push_service, rebinding, agent, owner, monkeypatch):
    # Only the first answer is allowed (as a public address would be); the second is not.
    only_first = dataclasses.replace(push.rules(), allow_private=False, allow_hosts=("127.0.0.1/32",))
    monkeypatch.setattr(push, "rules", lambda: dataclasses.replace(only_first, own_port_only=False))
    port = push_service.url.rsplit(":", 1)[1]
    browser = Browser(f"https://{REBINDING}:{port}/push/laptop")
    await database_call(subscribed)(owner, browser)
    await ask(agent)
    engine.ensure_running()

    [received] = await asyncio.to_thread(push_service.wait_for, "laptop")

    assert rebinding == [REBINDING]  # resolved once, and the push went to that answer
    assert received.headers["host"] == f"{REBINDING}:{port}"
    assert browser.read(received.body)["type"] == "prompt"


@pytest.mark.django_db
def test_a_device_whose_push_cannot_be_made_is_not_reached_and_staff_see_why(push_service, owner, staff):
    subscribed(owner, Browser(push_service.endpoint("laptop")), device="Chrome on Linux")
    broken = subscribed(owner, Browser(push_service.endpoint("old")), device="Firefox on Android")
    PushSubscription.objects.filter(pk=broken.pk).update(p256dh="x")  # stored by hand, not by a browser

    response = browser_for(owner).post("/settings/push/test", headers={"HX-Request": "true"})

    tried = tried_list(response.content.decode())
    assert response.status_code == 200
    assert "Chrome on Linux: delivered." in tried
    assert "Firefox on Android: this device could not be reached." in tried
    assert push_service.at("old") == []
    admin = browser_for(staff).get("/admin/askuser_app/pushsubscription/").content.decode()
    assert "Error: Invalid base64-encoded string" in admin


@pytest.mark.django_db
def test_the_test_notification_says_nothing_of_why_a_device_was_not_reached(push_service, inside, owner, staff):
    subscribed(owner, Browser(push_service.endpoint("laptop")), device="Chrome on Linux")
    push_service.answer(307, {"Location": f"{inside.url}/admin/flush"})

    response = browser_for(owner).post("/settings/push/test", headers={"HX-Request": "true"})

    tried = tried_list(response.content.decode())
    assert "Chrome on Linux: this device could not be reached." in tried
    assert "307" not in tried and "answered" not in tried
    assert inside.received == []
    admin = browser_for(staff).get("/admin/askuser_app/pushsubscription/").content.decode()
    assert "the push service answered 307" in admin


def tried_list(html: str) -> str:
    """The test notification's results, as the settings partial shows them."""
    return html.split('id="push-tried"', 1)[1].split("</ul>", 1)[0]


# --- the settings routes --------------------------------------------------------------------------


def browser_for(user: Any) -> Client:
    client = Client(headers={"User-Agent": CHROME_UA})
    client.force_login(user)
    return client


def post_json(client: Client, url: str, data: Any) -> Any:
    body = data if isinstance(data, (bytes, str)) else json.dumps(data)
    return client.post(url, body, content_type="application/json")


@pytest.mark.django_db
def test_subscribing_stores_this_browser_with_a_name_a_person_recognises(owner, settings):
    settings.ASKUSER_PUSH_ALLOW_PRIVATE = False
    subscription = Browser("https://fcm.googleapis.com/fcm/send/abc123").to_json()

    response = post_json(browser_for(owner), "/settings/push/subscribe", subscription)

    assert response.status_code == 201
    row = PushSubscription.objects.get()
    assert (row.user, row.endpoint, row.device) == (owner, subscription["endpoint"], "Chrome on Linux")
    assert (row.p256dh, row.auth) == (subscription["keys"]["p256dh"], subscription["keys"]["auth"])
    assert response.json() == {"id": row.pk, "device": "Chrome on Linux"}


@pytest.mark.django_db
def test_the_same_browser_subscribing_again_is_one_device(owner, other_user):
    subscription = Browser("https://fcm.googleapis.com/fcm/send/abc123").to_json()
    post_json(browser_for(owner), "/settings/push/subscribe", subscription)

    again = post_json(browser_for(other_user), "/settings/push/subscribe", subscription)  # someone else logs in there

    assert again.status_code == 201
    assert list(PushSubscription.objects.values_list("user", flat=True)) == [other_user.pk]


def _keys(**changes: Any) -> dict[str, Any]:
    subscription = Browser("https://fcm.googleapis.com/fcm/send/abc").to_json()
    subscription["keys"].update(changes)
    return subscription


@pytest.mark.parametrize(
    "body,said",
    [
        (b"not json", "as JSON"),
        ([1, 2], "JSON object"),
        ({"keys": {}}, "no endpoint"),
        ({**_keys(), "endpoint": "http://fcm.googleapis.com/x"}, "https"),
        ({**_keys(), "endpoint": "https://127.0.0.1/x"}, "public address"),
        ({**_keys(), "endpoint": "https://localhost:8443/x"}, "public address"),
        ({**_keys(), "endpoint": "https://[::1]/x"}, "public address"),
        ({**_keys(), "endpoint": "https://LOCALHOST./x"}, "public address"),
        ({**_keys(), "endpoint": "https://127.0.0.1./x"}, "public address"),
        ({**_keys(), "endpoint": "https://①②⑦.0.0.1/x"}, "valid https address"),
        ({**_keys(), "endpoint": "https://127.0.0.1%2e/x"}, "plain https address"),
        ({**_keys(), "endpoint": "https://user:pw@push.example/x"}, "plain https address"),
        ({**_keys(), "endpoint": "https://8.8.8.8:22/x"}, "plain https address"),
        ({**_keys(), "endpoint": "https://push.example:+443/x"}, "valid https address"),
        ({**_keys(), "endpoint": "https://push.example:٤٤٣/x"}, "valid https address"),
        ({**_keys(), "endpoint": "https://x.example/" + "a" * 2100}, "endpoint"),
        ({"endpoint": "https://fcm.googleapis.com/x"}, "no keys"),
        (_keys(p256dh=None), "no p256dh"),
        (_keys(p256dh="!!!"), "p256dh"),
        (_keys(p256dh=b64url(b"\x04" + b"\x00" * 64)), "not a P-256"),
        (_keys(p256dh=b64url(b"\x04" * 10)), "wrong length"),
        (_keys(auth=b64url(b"short")), "wrong length"),
    ],
)
@pytest.mark.django_db
def test_a_bad_subscription_is_refused_and_nothing_is_stored(owner, body, said, settings):
    settings.ASKUSER_PUSH_ALLOW_PRIVATE = False

    response = post_json(browser_for(owner), "/settings/push/subscribe", body)

    assert response.status_code == 400
    assert said in response.json()["error"]
    assert not PushSubscription.objects.exists()


@pytest.mark.django_db
def test_an_eleventh_device_is_refused_until_one_is_removed(owner, other_user):
    client = browser_for(owner)
    for number in range(10):
        linked = post_json(client, "/settings/push/subscribe", Browser(f"https://push.example/{number}").to_json())
        assert linked.status_code == 201
    eleventh = Browser("https://push.example/eleventh").to_json()

    refused = post_json(client, "/settings/push/subscribe", eleventh)
    renewed = post_json(client, "/settings/push/subscribe", Browser("https://push.example/3").to_json())
    theirs = post_json(browser_for(other_user), "/settings/push/subscribe", Browser("https://push.example/x").to_json())

    assert refused.status_code == 400
    assert refused.json()["error"] == (
        "You get notifications on 10 devices already, the most this server allows. Remove a device first."
    )
    assert (renewed.status_code, theirs.status_code) == (201, 201)  # a linked device, another person
    assert PushSubscription.objects.filter(user=owner).count() == 10
    client.post("/settings/push/remove", {"device": PushSubscription.objects.filter(user=owner).first().pk})
    assert post_json(client, "/settings/push/subscribe", eleventh).status_code == 201


@pytest.mark.django_db
def test_subscribing_needs_the_csrf_token(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)

    response = post_json(client, "/settings/push/subscribe", _keys())

    assert response.status_code == 403 and not PushSubscription.objects.exists()


@pytest.mark.django_db
def test_unsubscribing_forgets_only_this_browser_of_this_person(owner, other_user):
    mine, theirs = Browser("https://push.example/mine"), Browser("https://push.example/theirs")
    subscribed(owner, mine)
    subscribed(other_user, theirs)
    client = browser_for(owner)

    refused = post_json(client, "/settings/push/unsubscribe", {"endpoint": theirs.endpoint})
    bad = post_json(client, "/settings/push/unsubscribe", {"nothing": 1})
    done = post_json(client, "/settings/push/unsubscribe", {"endpoint": mine.endpoint})

    assert (refused.status_code, bad.status_code, done.status_code) == (404, 400, 204)
    assert list(PushSubscription.objects.values_list("endpoint", flat=True)) == [theirs.endpoint]


@pytest.mark.django_db
def test_the_settings_page_lists_the_devices_and_removes_one(owner, other_user):
    phone = subscribed(owner, Browser("https://push.example/phone"), device="Firefox on Android")
    subscribed(owner, Browser("https://push.example/laptop"), device="Chrome on Linux")
    theirs = subscribed(other_user, Browser("https://push.example/theirs"), device="Safari on macOS")
    client = browser_for(owner)

    page = client.get("/settings/").content.decode()
    assert "Firefox on Android" in page and "Chrome on Linux" in page and "Safari on macOS" not in page
    assert f'data-public-key="{push.public_key()}"' in page
    assert "Send me a test notification" in page

    assert client.post("/settings/push/remove", {"device": theirs.pk}).status_code == 404
    assert client.post("/settings/push/remove", {"device": "x"}).status_code == 404
    removed = client.post("/settings/push/remove", {"device": phone.pk}, headers={"HX-Request": "true"})

    assert removed.status_code == 200 and "Firefox on Android" not in removed.content.decode()
    assert 'id="push-settings"' in removed.content.decode()
    assert set(PushSubscription.objects.values_list("device", flat=True)) == {"Chrome on Linux", "Safari on macOS"}


@pytest.mark.django_db(transaction=True)
def test_the_test_notification_goes_to_every_device_now_and_says_which_got_it(push_service, owner):
    laptop, old_phone = Browser(push_service.endpoint("laptop")), Browser(push_service.endpoint("old"))
    subscribed(owner, laptop, device="Chrome on Linux")
    subscribed(owner, old_phone, device="Firefox on Android")
    push_service.answer(410, at="old")  # the phone's browser dropped its subscription
    client = browser_for(owner)

    response = client.post("/settings/push/test", headers={"HX-Request": "true"})

    html = response.content.decode()
    assert response.status_code == 200
    assert "Chrome on Linux: delivered." in html
    assert "Firefox on Android: this device could not be reached." in html
    [received] = push_service.at("laptop")
    assert laptop.read(received.body)["type"] == "test"
    assert list(PushSubscription.objects.values_list("device", flat=True)) == ["Chrome on Linux"]


@pytest.mark.django_db
def test_without_javascript_the_test_button_reports_through_the_page(owner):
    response = browser_for(owner).post("/settings/push/test", follow=True)

    assert "No device gets notifications yet." in response.content.decode()


@pytest.mark.django_db
def test_with_push_turned_off_the_routes_say_so(owner, settings):
    settings.ASKUSER_PUSH = False
    client = browser_for(owner)

    assert post_json(client, "/settings/push/subscribe", _keys()).status_code == 404
    assert client.get("/settings/push/key").status_code == 404
    assert "Web Push is turned off on this server." in client.get("/settings/").content.decode()
    assert "push" not in channels.configured()


@pytest.mark.django_db
def test_a_person_chooses_how_long_a_new_question_waits_before_it_is_pushed(owner, agent, settings):
    settings.ASKUSER_PUSH_GRACE = 20
    client = browser_for(owner)
    shown = client.get("/settings/").content.decode()
    assert '<option value="20" selected>After 20 seconds</option>' in shown
    assert '<option value="0">At once</option>' in shown and "After 5 minutes" in shown

    saved = client.post("/settings/push/grace", {"push_grace": "0"}, headers={"HX-Request": "true"})

    text = saved.content.decode()
    assert saved.status_code == 200 and text.startswith('<section class="card push-settings" id="push-settings"')
    assert '<option value="0" selected>At once</option>' in text and "Saved." in text
    prompt = services.ask(agent, contract.parse_create(payload())).prompt
    subscribed(owner, Browser("https://push.example.com/laptop"))
    [due_now] = push.adapter.recipients(prompt)
    assert due_now.after == datetime.timedelta(0)


@pytest.mark.parametrize("bad", ["", "7", "-1", "twenty", "١٠"])
@pytest.mark.django_db
def test_a_grace_not_offered_is_refused_and_nothing_changes(owner, bad):
    prefs.choose_push_grace(owner, 60)

    refused = browser_for(owner).post("/settings/push/grace", {"push_grace": bad}, headers={"HX-Request": "true"})

    assert refused.status_code == 422 and "Choose one of the times listed." in refused.content.decode()
    assert prefs.of(owner).push_grace == 60


@pytest.mark.django_db
def test_without_javascript_the_grace_is_saved_through_the_page(owner):
    response = browser_for(owner).post("/settings/push/grace", {"push_grace": "120"}, follow=True)

    assert "Notification settings saved." in response.content.decode()
    assert '<option value="120" selected>After 2 minutes</option>' in response.content.decode()
    assert prefs.push_grace(prefs.of(owner).push_grace) == datetime.timedelta(minutes=2)


@pytest.mark.django_db
def test_the_key_route_gives_the_public_key_to_pages_other_than_settings(owner):
    assert browser_for(owner).get("/settings/push/key").json() == {"public_key": push.public_key()}


def test_the_service_worker_is_served_from_the_root_for_the_whole_site():
    response = Client().get("/sw.js")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    assert response["Service-Worker-Allowed"] == "/"
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert 'addEventListener("push"' in response.content.decode()


@pytest.mark.parametrize(
    "agent_string,name",
    [
        (CHROME_UA, "Chrome on Linux"),
        ("Mozilla/5.0 (Android 14; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0", "Firefox on Android"),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
            "Version/17.5 Mobile/15E148 Safari/604.1",
            "Safari on iOS",
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
            "Safari/537.36 Edg/131.0.0.0",
            "Edge on Windows",
        ),
        ("", "A browser"),
    ],
)
def test_a_device_is_named_by_its_browser_and_system(agent_string, name):
    assert push.device_name(agent_string) == name


# --- the keys -----------------------------------------------------------------------------------------


def test_the_vapid_key_is_made_once_private_to_the_server(tmp_path):
    first = datadir.vapid_key(tmp_path)
    again = datadir.vapid_key(tmp_path)

    path = tmp_path / "vapid_private_key.pem"
    assert first == again and first.startswith("-----BEGIN PRIVATE KEY-----")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["vapid_private_key.pem"]  # no draft left behind


def test_keys_from_the_environment_are_used_and_checked(settings):
    from py_vapid import Vapid

    made = Vapid()
    made.generate_keys()
    raw = made.private_key.private_numbers().private_value.to_bytes(32, "big")
    point = made.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    settings.ASKUSER_VAPID_PRIVATE_KEY = b64url(raw)  # as `vapid --gen` and web-push tools print it
    settings.ASKUSER_VAPID_PUBLIC_KEY = b64url(point)
    assert push.public_key() == b64url(point)

    settings.ASKUSER_VAPID_PUBLIC_KEY = b64url(b"\x04" + b"\x01" * 64)
    with pytest.raises(ImproperlyConfigured):
        push.public_key()
    settings.ASKUSER_VAPID_PRIVATE_KEY = "not a key"
    with pytest.raises(ImproperlyConfigured):
        push.vapid()


# --- a coding agent's news ---------------------------------------------------------------------------------


@database_call
def agent_finished(agent: Any, owner: Any, *, chosen: bool) -> None:
    prefs.choose_tell_finished(owner, chosen)
    services.post_agent_note(
        agent, "cc-job", "Claude Code finished: all green", title="Claude Code · app", tell="finished"
    )


@pytest.mark.django_db(transaction=True)
async def test_a_finished_agent_is_pushed_to_each_device_when_the_person_chose_it(push_service, agent, owner):
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)

    await agent_finished(agent, owner, chosen=True)
    engine.ensure_running()

    [received] = await asyncio.to_thread(push_service.wait_for, "laptop")
    message = laptop.read(received.body)
    assert message["type"] == "news"
    assert (message["title"], message["body"]) == ("Claude Code · app", "Claude Code finished: all green")
    assert message["url"] == "https://askuser.example.com/s/cc-job/"
    row = await until_async(lambda: Delivery.objects.filter(prompt=None, state="closed").first())
    assert row.channel == "push"


@pytest.mark.django_db(transaction=True)
async def test_a_finished_agent_is_not_pushed_unless_the_person_chose_it(push_service, agent, owner):
    await database_call(subscribed)(owner, Browser(push_service.endpoint("laptop")))

    await agent_finished(agent, owner, chosen=False)

    assert await database_call(Delivery.objects.count)() == 0


# --- only when needed: after the person's grace, and never while a tab of theirs is in sight ---------


@pytest.fixture
async def tabs() -> AsyncIterator[list[Any]]:
    """The Control UI's sockets a test opens (``tab``), each closed afterwards."""
    opened: list[Any] = []
    yield opened
    for socket in opened:
        await socket.disconnect()


async def tab(tabs: list[Any], user: Any, *, visible: bool) -> Any:
    """A page of ``user``'s open on any page (its socket), saying whether it is visible, as notify.js does."""
    socket = await connect(f"/ws/sessions/?only=waiting&visible={int(visible)}&lang=en", user)
    connected, _ = await socket.connect(timeout=DEADLINE)
    assert connected
    tabs.append(socket)
    return socket


async def says(socket: Any, user: Any, *, visible: bool) -> None:
    """The page becomes visible or hidden, and the server has heard it: in the scaled mode, has
    kept its word in Redis, where the other processes read it. (This process's own count changes
    first, and its word is written after; waiting on the count alone let another process ask
    Redis in between.)"""
    await socket.send_to(text_data=json.dumps({"visible": visible}))
    await until_async(lambda: True if heard(user.pk) == visible else None)


def heard(user_id: int) -> bool:
    """Whether this process has said that ``user_id`` has a tab in sight, where others hear it."""
    if not presence.scaled():
        return presence.in_sight(user_id)
    with redis.Redis.from_url(live_settings.REDIS_URL) as server:
        return server.zscore(f"{live_settings.REDIS_PREFIX}:presence:{user_id}", presence.PROCESS) is not None


async def push_due_now(prompt: Prompt) -> None:
    """The grace is over: the engine's clock, moved on as the engine's tests move it."""
    await database_call(Delivery.objects.filter(prompt=prompt, channel="push").update)(next_attempt_at=timezone.now())
    engine.ensure_running()
    engine.wake()


@pytest.mark.django_db(transaction=True)
async def test_a_new_prompt_is_pushed_only_once_the_persons_grace_is_over(push_service, agent, owner, settings):
    settings.ASKUSER_PUSH_GRACE = 20
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)

    prompt = await ask(agent)

    row = await row_of(prompt, "to_send")
    waits = row.next_attempt_at - prompt.created_at
    assert waits == pytest.approx(datetime.timedelta(seconds=20), abs=datetime.timedelta(seconds=1))
    assert await database_call(engine.claim_due)(8) == []  # not due yet
    await push_due_now(prompt)
    [received] = await asyncio.to_thread(push_service.wait_for, "laptop")
    assert laptop.read(received.body)["tag"] == f"askuser-{prompt.pk}"


@pytest.mark.django_db(transaction=True)
async def test_a_prompt_answered_within_the_grace_is_never_pushed(push_service, agent, owner, settings):
    settings.ASKUSER_PUSH_GRACE = 20
    await database_call(subscribed)(owner, Browser(push_service.endpoint("laptop")))
    prompt = await ask(agent)

    await database_call(services.answer)(prompt, {"deploy_target": "Production"}, by=owner, surface="web")

    await row_of(prompt, "dropped")
    await push_due_now(prompt)
    assert await database_call(engine.claim_due)(8) == []
    assert push_service.received == []


@pytest.mark.django_db(transaction=True)
async def test_a_person_who_chose_at_once_is_pushed_at_once_whatever_the_servers_grace(
    push_service, agent, owner, settings
):
    settings.ASKUSER_PUSH_GRACE = 300
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)
    await database_call(prefs.choose_push_grace)(owner, 0)

    prompt = await ask(agent)
    engine.ensure_running()

    [received] = await asyncio.to_thread(push_service.wait_for, "laptop")
    assert laptop.read(received.body)["tag"] == f"askuser-{prompt.pk}"
    row = await row_of(prompt, "sent")
    assert row.next_attempt_at is not None


@pytest.mark.django_db(transaction=True)
async def test_with_a_tab_in_sight_the_push_is_not_sent_and_staff_see_why(push_service, agent, owner, tabs, settings):
    settings.ASKUSER_PUSH_GRACE = 20
    await database_call(subscribed)(owner, Browser(push_service.endpoint("laptop")))
    await tab(tabs, owner, visible=True)
    prompt = await ask(agent)

    await push_due_now(prompt)

    row = await row_of(prompt, "dropped")
    assert row.last_error == "not needed: a tab of the person was in sight" and row.attempts == 0
    assert push_service.received == []
    assert not await database_call(DeliveryAttempt.objects.exists)()  # no failed attempt either


@pytest.mark.django_db(transaction=True)
async def test_a_tab_that_is_hidden_or_closed_no_longer_keeps_the_push_back(push_service, agent, owner, tabs):
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)
    front = await tab(tabs, owner, visible=True)
    behind = await tab(tabs, owner, visible=False)

    await says(front, owner, visible=False)
    first = await ask(agent)
    engine.ensure_running()
    [received] = await asyncio.to_thread(push_service.wait_for, "laptop")
    assert laptop.read(received.body)["tag"] == f"askuser-{first.pk}"

    await says(behind, owner, visible=True)
    await database_call(services.skip_all)(first, by=owner, surface="web")
    second = await database_call(services.ask)(agent, contract.parse_create(payload(session="s2")))
    await row_of(second.prompt, "dropped")

    await behind.disconnect()  # closed: it stops counting at once
    tabs.remove(behind)
    assert not presence.in_sight(owner.pk)
    await database_call(services.skip_all)(second.prompt, by=owner, surface="web")
    third = await database_call(services.ask)(agent, contract.parse_create(payload(session="s3")))
    await row_of(third.prompt, "sent")


@pytest.mark.django_db(transaction=True)
async def test_another_persons_tab_in_sight_does_not_keep_back_my_push(push_service, agent, owner, other_user, tabs):
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)
    await tab(tabs, other_user, visible=True)

    prompt = await ask(agent)
    engine.ensure_running()

    [received] = await asyncio.to_thread(push_service.wait_for, "laptop")
    assert laptop.read(received.body)["tag"] == f"askuser-{prompt.pk}"


@pytest.mark.django_db(transaction=True)
async def test_an_agents_news_is_pushed_at_once_but_not_while_a_tab_is_in_sight(
    push_service, agent, owner, tabs, settings
):
    settings.ASKUSER_PUSH_GRACE = 300  # news has no grace: nothing answers it meanwhile
    laptop = Browser(push_service.endpoint("laptop"))
    await database_call(subscribed)(owner, laptop)
    shown = await tab(tabs, owner, visible=True)

    await database_call(services.post_agent_note)(agent, "cc-job", "Claude Code is waiting", tell="waiting")
    engine.ensure_running()
    dropped = await until_async(lambda: Delivery.objects.filter(prompt=None, state="dropped").first())
    assert dropped.last_error == "not needed: a tab of the person was in sight"

    await says(shown, owner, visible=False)
    await database_call(services.post_agent_note)(agent, "cc-job", "Claude Code finished", tell="waiting")
    [received] = await asyncio.to_thread(push_service.wait_for, "laptop")
    assert laptop.read(received.body)["body"] == "Claude Code finished"
    assert push_service.received == [received]


@pytest.mark.django_db(transaction=True)
async def test_a_page_that_says_something_else_changes_nothing(push_service, agent, owner, tabs):
    socket = await tab(tabs, owner, visible=False)
    for said in ("hello", json.dumps({"visible": "yes"}), json.dumps([True]), json.dumps({"visible": True}) + " " * 64):
        await socket.send_to(text_data=said)
    await socket.send_to(bytes_data=b'{"visible": true}')
    assert await socket.receive_nothing()

    assert not presence.in_sight(owner.pk)


@pytest.mark.scaled
@pytest.mark.live
@pytest.mark.skipif(not SCALED, reason=SCALED_REASON)
@pytest.mark.django_db(transaction=True)
async def test_a_tab_in_sight_in_one_process_keeps_back_the_push_of_another_until_its_word_runs_out(
    push_service, server_env, agent, token, owner, tabs, monkeypatch, settings
):
    """The scaled mode: this process holds the page's socket, a Daphne process beside it sends
    the pushes, and what they share is Redis. A process that stops renewing its word (killed)
    keeps nobody "in sight" once the word runs out."""
    env = {
        **server_env,
        "SSL_CERT_FILE": os.environ["SSL_CERT_FILE"],
        "ASKUSER_PUSH_ALLOW_PRIVATE": "1",
        "ASKUSER_PUSH_GRACE": "0",
        "ASKUSER_PUBLIC_URL": "https://askuser.example.com",
    }
    sender = DaphneServer(env)
    await asyncio.to_thread(sender.start)
    try:
        laptop = Browser(push_service.endpoint("laptop"))
        await database_call(subscribed)(owner, laptop)
        shown = await tab(tabs, owner, visible=True)

        async def asked(session: str) -> Prompt:
            created = await asyncio.to_thread(
                httpx.post, f"{sender.url}/api/v1/prompts", json=payload(session=session), headers=auth(token)
            )
            assert created.status_code == 201, created.text
            return await database_call(Prompt.objects.get)(pk=created.json()["id"])

        kept_back = await row_of(await asked("s1"), "dropped")
        assert kept_back.last_error == "not needed: a tab of the person was in sight"

        await says(shown, owner, visible=False)
        second = await asked("s2")
        [received] = await asyncio.to_thread(push_service.wait_for, "laptop")
        assert laptop.read(received.body)["tag"] == f"askuser-{second.pk}"

        monkeypatch.setattr(presence, "LASTS", 0.5)  # and no loop renews it here: as if killed
        await says(shown, owner, visible=True)
        key = f"{settings.REDIS_PREFIX}:presence:{owner.pk}"
        with redis.Redis.from_url(settings.REDIS_URL) as server:
            await until_async(lambda: True if server.zcount(key, f"({time.time()}", "+inf") == 0 else None)
        third = await asked("s3")
        [_, received] = await asyncio.to_thread(push_service.wait_for, "laptop", 2)
        assert laptop.read(received.body)["tag"] == f"askuser-{third.pk}"
    finally:
        await asyncio.to_thread(sender.stop)
