"""A page tells the server whether it is visible, and a person with a page in sight gets no push.

Headless chromium reports every page as visible, whatever is done to it (a minimised window, a
background tab, a frozen page: tried through the DevTools protocol, each still said "visible"), so
the page is made hidden as a browser makes it: ``document.visibilityState`` reads "hidden" and
``visibilitychange`` fires. That the server heard it is read where staff read it: ``/metrics``."""

from __future__ import annotations

import base64
import re
import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from askuser_app.models import Delivery, DeliveryAttempt, PushSubscription
from tests.browsers import MARKS, WAIT_MS, Human
from tests.conftest import auth, payload, until_sync
from tests.servers import DaphneServer, free_port

pytestmark = MARKS

HIDE = """() => {
  Object.defineProperty(document, "visibilityState", { get: () => "hidden", configurable: true });
  Object.defineProperty(document, "hidden", { get: () => true, configurable: true });
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.fixture
def pushing(server_env) -> Iterator[DaphneServer]:
    """A server that pushes at once, to a push service on loopback (none listens there: each
    push is an attempt that fails, which is all these tests need to see that it went)."""
    server = DaphneServer({**server_env, "ASKUSER_PUSH_ALLOW_PRIVATE": "1", "ASKUSER_PUSH_GRACE": "0"})
    server.start()
    yield server
    server.stop()


def device(user: Any) -> None:
    point = ec.generate_private_key(ec.SECP256R1()).public_key()
    raw = point.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    endpoint = f"https://127.0.0.1:{free_port()}/push/laptop"
    PushSubscription.objects.create(
        user=user, endpoint=endpoint, p256dh=b64url(raw), auth=b64url(secrets.token_bytes(16))
    )


def visible_sockets(server: DaphneServer) -> float:
    """How many of the server's sockets say their page is visible, as /metrics reports it."""
    found = re.search(r"^askuser_sockets_visible (\S+)$", httpx.get(f"{server.url}/metrics").text, re.M)
    assert found is not None
    return float(found.group(1))


def push_of(session: str) -> Delivery | None:
    return Delivery.objects.filter(prompt__session__key=session, channel="push").first()


def test_a_page_in_sight_keeps_the_push_back_and_once_hidden_no_longer(chromium, pushing, owner, token):
    device(owner)
    context = Human(chromium, pushing, owner).context
    page = context.new_page()
    try:
        page.goto("/settings/")
        page.wait_for_function("() => window.askuserNotify.told().join() === 'true'", timeout=WAIT_MS)
        until_sync(lambda: visible_sockets(pushing) == 1)

        asked = httpx.post(f"{pushing.url}/api/v1/prompts", json=payload(session="s1"), headers=auth(token))
        assert asked.status_code == 201
        until_sync(lambda: (row := push_of("s1")) is not None and row.state == "dropped")
        assert push_of("s1").last_error == "not needed: a tab of the person was in sight"

        page.evaluate(HIDE)
        page.wait_for_function("() => window.askuserNotify.told().join() === 'false'", timeout=WAIT_MS)
        until_sync(lambda: visible_sockets(pushing) == 0)

        asked = httpx.post(f"{pushing.url}/api/v1/prompts", json=payload(session="s2"), headers=auth(token))
        assert asked.status_code == 201
        until_sync(lambda: DeliveryAttempt.objects.filter(delivery__prompt__session__key="s2").exists())
        assert push_of("s2").state != "dropped"
    finally:
        context.close()


SHOW = """() => {
  Object.defineProperty(document, "visibilityState", { get: () => "visible", configurable: true });
  Object.defineProperty(document, "hidden", { get: () => false, configurable: true });
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_a_page_hidden_as_it_opens_says_so_on_connecting_and_again_once_in_sight(chromium, pushing, owner, token):
    device(owner)
    context = Human(chromium, pushing, owner).context
    context.add_init_script(f"({HIDE})()")
    page = context.new_page()
    try:
        page.goto("/settings/")
        page.wait_for_function("() => window.askuserNotify.told().join() === 'false'", timeout=WAIT_MS)
        assert page.evaluate("() => document.visibilityState") == "hidden"

        asked = httpx.post(f"{pushing.url}/api/v1/prompts", json=payload(session="s1"), headers=auth(token))
        assert asked.status_code == 201
        until_sync(lambda: DeliveryAttempt.objects.filter(delivery__prompt__session__key="s1").exists())

        page.evaluate(SHOW)
        page.wait_for_function("() => window.askuserNotify.told().join() === 'true'", timeout=WAIT_MS)
        until_sync(lambda: visible_sockets(pushing) == 1)
        asked = httpx.post(f"{pushing.url}/api/v1/prompts", json=payload(session="s2"), headers=auth(token))
        assert asked.status_code == 201
        until_sync(lambda: (row := push_of("s2")) is not None and row.state == "dropped")
    finally:
        context.close()
