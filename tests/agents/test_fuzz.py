"""Bad input, generated: Schemathesis against the OpenAPI document of a live
server, and Hypothesis payloads against the validation layer. Every request
gets a clear 4xx (or a valid answer), never a 5xx, and a refused one stores
nothing."""

from __future__ import annotations

import copy
import json
import re
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pytest
import schemathesis
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from askuser_app.domain import prefs
from askuser_app.models import Message, Prompt, PushSubscription, Session
from askuser_client.client import verify_signature
from controlui.asgi import application
from tests.conftest import QUESTION, asgi_request, connect, log_in, payload
from tests.servers import DaphneServer

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def server(server_env):
    daphne = DaphneServer({**server_env, "ASKUSER_RATE_LIMIT": "0", "ASKUSER_MESSAGE_RATE_LIMIT": "0"}).start()
    yield daphne
    daphne.stop()


# What the issue asks of every response: no 5xx, and the documented statuses,
# content types and shapes. (Business rules such as distinct labels cannot be
# expressed in a schema, so "every schema-valid request is accepted" is not one.)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def operations(server) -> list:
    schema = schemathesis.openapi.from_url(f"{server.url}/api/v1/openapi.json")
    return [result.ok() for result in schema.get_all_operations()]


def test_no_operation_fails_or_breaks_its_documented_shape(server, token):
    auth = {"Authorization": f"Bearer {token}"}
    checked = []
    for operation in operations(server):

        @given(case=operation.as_strategy())
        @settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def call(case):
            if case.query and isinstance(case.query.get("wait"), int | float):
                case.query["wait"] = min(case.query["wait"], 0.05)  # a generated wait could hold 55 s
            response = case.call(base_url=server.url, headers=auth, timeout=30)
            assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.text}"
            case.validate_response(response, checks=CHECKS)

        call()
        checked.append(f"{operation.method.upper()} {operation.path}")
    assert len(checked) >= 7, checked


# --- the validation layer, with generated payloads ------------------------------------------------

JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(st.characters(codec="utf-8"), max_size=40),
)
JSON = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
NASTY_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "\ud800",
        "\u202e",
        "\u200b",
        "🦄" * 300,
        "x" * 70_000,
        "<script>x</script>",
        "Other",
        "\n\n",
    ]
)
PATHS = [
    ("questions",),
    ("questions", 0),
    ("questions", 0, "id"),
    ("questions", 0, "header"),
    ("questions", 0, "question"),
    ("questions", 0, "options"),
    ("questions", 0, "options", 0),
    ("questions", 0, "options", 0, "label"),
    ("questions", 0, "options", 1, "description"),
    ("questions", 0, "multiSelect"),
    ("timeoutSeconds",),
    ("session",),
    ("run_kind",),
]


def set_at(body, path, value):
    target = body
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value


def nested(depth: int):
    value = "deep"
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def broken_payloads(draw):
    """A valid payload with one thing wrong in it."""
    body = payload(QUESTION, copy.deepcopy({**QUESTION, "id": "second", "multiSelect": True}))
    path = draw(st.sampled_from(PATHS))
    kind = draw(st.sampled_from(["json", "text", "deep", "extra"]))
    if kind == "json":
        set_at(body, path, draw(JSON))
    elif kind == "text":
        set_at(body, path, draw(NASTY_TEXT))
    elif kind == "deep":
        set_at(body, path, nested(draw(st.integers(50, 900))))  # deeper: tested as raw bytes in test_contract
    else:
        target = body
        for part in path[:-1]:
            target = target[part]
        if isinstance(target, dict):
            target[draw(st.text(min_size=1, max_size=10).filter(lambda k: k not in target))] = draw(JSON)
    return body


def stored_nothing() -> bool:
    return not (Prompt.objects.exists() or Session.objects.exists() or Message.objects.exists())


@given(broken_payloads())
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_broken_payload_gets_a_clear_4xx_and_stores_nothing(api, body):
    response = api.ask(body)

    if response.status_code == 201:  # the change happened to be valid (e.g. a new label)
        Prompt.objects.all().delete()
        Session.objects.all().delete()
        return
    assert response.status_code in (400, 403, 413, 422), response.content
    error = response.json()
    assert error["error"] and error["detail"].strip()
    assert stored_nothing()


@given(JSON)
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_json_at_all_is_refused_cleanly(api, value):
    for path in ("/prompts", "/sessions/s1/messages"):
        response = api.post(path, raw=json.dumps(value).encode())
        assert response.status_code in (400, 422), response.content
    assert stored_nothing()


@given(st.binary(max_size=2000))
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_bytes_at_all_are_refused_cleanly(api, raw):
    response = api.post("/prompts", raw=raw)

    assert response.status_code in (400, 413, 422)
    assert stored_nothing()


def test_a_megabyte_body_is_refused(api):
    body = json.dumps(payload(QUESTION, session="x" * (1024 * 1024))).encode()

    response = api.post("/prompts", raw=body)

    assert response.status_code == 413 and stored_nothing()


# --- the Control UI's forms and socket parameters, and verify_signature ------------------------

# Digits str.isdigit() says yes to that are not ASCII: int() refuses "²" and "①", and reads "١" as 1
# and "२" as 2. A number in a form, a query or a header is ASCII digits or refused.
NON_ASCII_DIGITS = ["²", "١", "२", "①"]
NUMBERS = st.sampled_from(
    [*NON_ASCII_DIGITS, "1²", "٣٤", "０", "-1", " 1", "1\n", "1_0", "1.0", "1e3", "9" * 5000, "9" * 20, "\x00"]
)
FORM_TEXT = st.one_of(st.text(st.characters(codec="utf-8"), max_size=30), NUMBERS)
FORM_FIELDS = st.dictionaries(
    st.sampled_from(["q-deploy_target", "q-deploy_target-other", "q-extras", "q-nope", "action"]),
    st.lists(FORM_TEXT, min_size=1, max_size=3),
    max_size=4,
)


def pending_or_new(agent) -> Prompt:
    """The session's pending prompt; a new one when the last example answered it."""
    from askuser_app.domain import contract, services

    prompt = Prompt.objects.filter(status=Prompt.Status.PENDING).first()
    return prompt or services.ask(agent, contract.parse_create(payload())).prompt


@pytest.fixture
def person(owner):
    from django.test import Client

    client = Client()
    client.force_login(owner)
    return client


@given(FORM_FIELDS, st.booleans())
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_answer_form_is_answered_or_refused_clearly_and_a_refusal_changes_nothing(agent, person, fields, htmx):
    prompt = pending_or_new(agent)
    headers = {"HX-Request": "true"} if htmx else {}

    response = person.post(f"/s/support-42/prompts/{prompt.pk}/answer", fields, headers=headers)

    assert response.status_code in ((200, 422) if htmx else (302, 422)), response.content[:300]
    if response.status_code == 422:  # said why, in the panel, and left the prompt as it was
        assert re.search(r'<p id="panel-error"[^>]*>[^<]+</p>', response.content.decode())
        assert Prompt.objects.get(pk=prompt.pk).is_pending


@given(FORM_TEXT)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_composer_text_is_posted_or_refused_clearly(agent, person, text):
    pending_or_new(agent)

    response = person.post("/s/support-42/messages", {"text": text}, headers={"HX-Request": "true"})

    assert response.status_code in (200, 422), response.content[:300]


QUERY_VALUE = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=30),
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    NUMBERS,
    st.sampled_from(["1e9", "", "%", "%ZZ", "&&=", "\x00"]),
)


async def socket_outcome(owner, key: str, query: str) -> tuple[bool, Any]:
    socket = await connect(f"/ws/sessions/{quote(key, safe='')}/?{query}", owner)
    connected, code = await socket.connect(timeout=10)
    if connected:
        await socket.receive_from(timeout=10)  # the state as of joining
        await socket.disconnect()
    return connected, code


@given(
    st.dictionaries(st.sampled_from(["since", "shown", "extended", "waiting", "other"]), QUERY_VALUE, max_size=4),
    st.booleans(),
)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_socket_parameters_open_the_socket_or_close_it_cleanly(agent, owner, params, raw):
    from askuser_app.domain import services

    services.post_agent_message(agent, "support-42", "Hello")
    query = "&".join(f"{k}={v}" for k, v in params.items()) if raw else urlencode(params)

    connected, code = async_to_sync(socket_outcome)(owner, "support-42", query)

    assert connected, code


@given(st.text(st.characters(codec="utf-8", exclude_characters="/"), min_size=1, max_size=140))
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_session_key_in_a_socket_path_is_found_or_closed_as_not_found(owner, key):
    connected, code = async_to_sync(socket_outcome)(owner, key, "")

    assert (connected, code) == (False, 4404)


# --- numbers in forms, queries and headers: ASCII digits, or a clear refusal ------------------------


def with_non_ascii_digits(test):
    """Each of ``NON_ASCII_DIGITS`` as an example, whatever else is drawn."""
    for digit in NON_ASCII_DIGITS:
        test = example(digit)(test)
    return test


@pytest.fixture
def phone(owner) -> PushSubscription:
    endpoint = "https://push.example/phone"
    return PushSubscription.objects.create(user=owner, endpoint=endpoint, p256dh="k", auth="a", device="Phone")


@given(FORM_TEXT)
@with_non_ascii_digits
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_removing_a_push_device_by_anything_but_its_number_is_refused_and_removes_nothing(person, phone, value):
    response = person.post("/settings/push/remove", {"device": value})

    if value == str(phone.pk):  # drawn by chance: removed, as asked
        phone.save()
        return
    assert response.status_code == 404
    assert PushSubscription.objects.filter(pk=phone.pk).exists()


@given(FORM_TEXT)
@with_non_ascii_digits
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_an_email_delay_is_saved_or_refused_clearly_and_a_refusal_changes_nothing(owner, person, value):
    before = prefs.of(owner).email_after

    response = person.post("/settings/email/", {"email_after": value}, headers={"HX-Request": "true"})

    assert response.status_code in (200, 422), response.content[:300]
    if response.status_code == 422:
        assert "Choose Off or one of the delays listed." in response.content.decode()
        assert prefs.of(owner).email_after == before


@given(NUMBERS | st.text(max_size=12))
@with_non_ascii_digits
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_wait_that_is_not_an_ascii_number_of_seconds_is_refused_naming_it(api, agent, value):
    from askuser_app.domain import contract, services

    prompt = Prompt.objects.filter(status=Prompt.Status.NO_ANSWER).first()
    if prompt is None:  # resolved, so that any wait accepted returns at once
        prompt = services.ask(agent, contract.parse_create(payload())).prompt
        services.cancel(prompt, agent=agent)

    response = api.get(f"/prompts/{prompt.pk}?{urlencode({'wait': value})}")

    assert response.status_code in (200, 422), response.content[:300]
    if response.status_code == 422:
        assert response.json()["errors"] == [{"path": "wait", "message": "must be a number of seconds from 0 to 55"}]
    if value in NON_ASCII_DIGITS:
        assert response.status_code == 422


@given(NUMBERS | st.text(max_size=12))
@with_non_ascii_digits
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_an_after_that_is_not_an_ascii_message_id_is_refused_naming_it(api, agent, value):
    from askuser_app.domain import services

    if not Session.objects.exists():
        services.post_agent_message(agent, "support-42", "Hello")

    response = api.get(f"/sessions/support-42/messages?{urlencode({'after': value, 'wait': 0})}")

    assert response.status_code in (200, 422), response.content[:300]
    if response.status_code == 422:
        assert response.json()["errors"] == [{"path": "after", "message": "must be a message id (an integer from 0)"}]
    if value in NON_ASCII_DIGITS:
        assert response.status_code == 422


# Content-Length as it comes on the wire: bytes, read as latin-1 (where "²" is one byte).
LENGTHS = st.one_of(
    st.sampled_from([digit.encode("utf-8") for digit in NON_ASCII_DIGITS]),
    st.sampled_from([b"\xb2", b"\xb3", b"\xb9", b"1\xb2", b" 1", b"1_0", b"-1", b"+1", b"1.0", b"", b"9" * 30]),
    st.binary(max_size=8).filter(lambda raw: not raw.isdigit()),
)


# Every route's body goes through the front door, which reads Content-Length for them all.
BODY_ROUTES = ["/api/v1/prompts", "/mcp", "/chat/telegram/webhook", "/chat/slack/events", "/settings/push/remove"]


@given(LENGTHS, st.sampled_from(BODY_ROUTES))
@example(b"\xb2", "/api/v1/prompts")
@example(b"\xb2", "/chat/telegram/webhook")
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_content_length_that_is_not_ascii_digits_is_refused_before_anything_is_read(token, raw, path):
    headers = [(b"authorization", f"Bearer {token}".encode()), (b"content-length", raw)]

    response = async_to_sync(asgi_request)("POST", path, headers=headers, content=b"{}")

    assert (response.status_code, response.json()["error"]) == (400, "bad_content_length"), response.content
    assert stored_nothing()


@given(st.dictionaries(st.sampled_from(["p", "days", "agent"]), NUMBERS, min_size=1, max_size=3))
@example({"p": "²", "days": "١", "agent": "२"})
@example({"p": "①", "days": "①", "agent": "①"})
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_page_day_count_or_agent_in_the_admin_is_shown_or_ignored(staff, params):
    from django.test import Client

    client = Client()
    client.force_login(staff)

    listing = client.get("/admin/askuser_app/prompt/", {"p": params.get("p", "1")})
    board = client.get("/admin/askuser_app/prompt/dashboard/", params)

    assert listing.status_code in (200, 302) and board.status_code == 200


@given(NUMBERS)
@with_non_ascii_digits
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_reconnecting_tab_showing_any_extension_count_is_caught_up_cleanly(agent, owner, value):
    from askuser_app.web import ui

    prompt = pending_or_new(agent)
    query = urlencode({"since": ui.timeline_cursor(), "shown": str(prompt.pk), "extended": value})

    cookie = f"{django_settings.SESSION_COOKIE_NAME}={log_in(owner)}".encode()
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie)]

    async def outcome() -> bool:
        socket = WebsocketCommunicator(application, f"/ws/sessions/support-42/?{query}", headers=headers)
        connected, _ = await socket.connect(timeout=10)
        await socket.receive_nothing(timeout=0.1)
        await socket.disconnect()  # raises what the consumer raised
        return connected

    assert async_to_sync(outcome)()


@pytest.mark.parametrize("value", [*NON_ASCII_DIGITS, "1²", "٣٤", "9" * 30, "-1", "1_0", "inf"])
def test_a_retry_after_that_is_not_ascii_digits_counts_as_no_retry_after(value):
    from askuser_app.delivery.channels.discord import adapter as discord
    from askuser_app.delivery.channels.push import adapter as push
    from askuser_app.delivery.channels.slack import adapter as slack
    from askuser_client import client

    header = [(b"Retry-After", value.encode())]

    assert push._retry_after(value) is None
    assert slack._retry_after({"Retry-After": value}) is None
    assert discord._retry_after(httpx.Response(429, headers=header)) is None
    assert client.retry_after(httpx.Response(429, headers=header), 1.5) == 1.5


HEADERS = st.one_of(
    st.none(),
    st.text(max_size=80),
    st.binary(max_size=80),
    st.builds(lambda t, v: f"t={t},v1={v}", st.text(max_size=20), st.text(max_size=70)),
    st.builds(lambda t, v: f"t={t},v1={v}", st.integers(-(2**70), 2**70), st.text("0123456789abcdef", max_size=70)),
)


@given(HEADERS, st.binary(max_size=200))
@settings(max_examples=300, deadline=None)
def test_verify_signature_says_false_to_any_forged_header_and_never_raises(header, body):
    assert verify_signature("whsec_fuzz", body, header) is False
