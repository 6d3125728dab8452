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

import pytest
import schemathesis
from asgiref.sync import async_to_sync
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from askuser_app.client import verify_signature
from askuser_app.models import Message, Prompt, Session

from .conftest import QUESTION, connect, payload
from .servers import DaphneServer

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

FORM_TEXT = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=30),
    st.sampled_from(["²", "١", "０", "-1", " 1", "1\n", "1.0", "1e3", "9" * 5000, "99999999999999999999", "\x00"]),
)
FORM_FIELDS = st.dictionaries(
    st.sampled_from(["q-deploy_target", "q-deploy_target-other", "q-extras", "q-nope", "action"]),
    st.lists(FORM_TEXT, min_size=1, max_size=3),
    max_size=4,
)


def pending_or_new(agent) -> Prompt:
    """The session's pending prompt; a new one when the last example answered it."""
    from askuser_app import contract, services

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
    st.sampled_from(["²", "1e9", "9" * 5000, "", "%", "%ZZ", "&&=", "\x00"]),
)


async def socket_outcome(owner, key: str, query: str) -> tuple[bool, Any]:
    socket = await connect(f"/ws/sessions/{quote(key, safe='')}/?{query}", owner)
    connected, code = await socket.connect(timeout=10)
    if connected:
        await socket.receive_from(timeout=10)  # the state as of joining
        await socket.disconnect()
    return connected, code


@given(st.dictionaries(st.sampled_from(["since", "shown", "other"]), QUERY_VALUE, max_size=3), st.booleans())
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_socket_parameters_open_the_socket_or_close_it_cleanly(agent, owner, params, raw):
    from askuser_app import services

    services.post_agent_message(agent, "support-42", "Hello")
    query = "&".join(f"{k}={v}" for k, v in params.items()) if raw else urlencode(params)

    connected, code = async_to_sync(socket_outcome)(owner, "support-42", query)

    assert connected, code


@given(st.text(st.characters(codec="utf-8", exclude_characters="/"), min_size=1, max_size=140))
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_any_session_key_in_a_socket_path_is_found_or_closed_as_not_found(owner, key):
    connected, code = async_to_sync(socket_outcome)(owner, key, "")

    assert (connected, code) == (False, 4404)


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
