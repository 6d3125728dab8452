"""Bad input, generated: Schemathesis against the OpenAPI document of a live
server, and Hypothesis payloads against the validation layer. Every request
gets a clear 4xx (or a valid answer), never a 5xx, and a refused one stores
nothing."""

from __future__ import annotations

import copy
import json

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from askuser_app.models import Message, Prompt, Session

from .conftest import QUESTION, payload
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
