"""SPEC 3.1: every validation rule, its field path and sentence, and that nothing is stored."""

from __future__ import annotations

import json

import pytest

from askuser_app.domain import contract
from askuser_app.models import Prompt, Question, Run, Session
from tests.conftest import QUESTION, payload


def question(**changes):
    q = json.loads(json.dumps(QUESTION))
    q.update(changes)
    return q


def options(*labels):
    return [{"label": label} for label in labels]


REJECTED = [
    # (body, field path, words the message must contain)
    (payload(questions=[]), "questions", "must have 1 to 3 questions (got 0)"),
    (payload(questions=[question(id=f"q{i}") for i in range(4)]), "questions", "must have 1 to 3 questions (got 4)"),
    (payload(question(id="DeployTarget")), "questions[0].id", "snake_case"),
    (payload(question(id="1st")), "questions[0].id", "snake_case"),
    (payload(question(id="a" * 65)), "questions[0].id", "at most 64 characters"),
    (payload(question(), question(header="Other")), "questions[1].id", "duplicates questions[0].id"),
    (payload(question(header="   ")), "questions[0].header", "must not be blank"),
    (payload(question(question="")), "questions[0].question", "must not be blank"),
    (payload(question(question="x" * 501)), "questions[0].question", "at most 500 characters"),
    (payload(question(options=options("Only"))), "questions[0].options", "must have 2 to 4 options (got 1)"),
    (
        payload(question(options=options("a", "b", "c", "d", "e"))),
        "questions[0].options",
        "must have 2 to 4 options (got 5)",
    ),
    (payload(question(options=options("Yes", "  "))), "questions[0].options[1].label", "must not be blank"),
    (payload(question(options=options("Yes", "n" * 65))), "questions[0].options[1].label", "at most 64 characters"),
    (
        payload(question(options=[{"label": "Yes", "description": "d" * 201}, {"label": "No"}])),
        "questions[0].options[0].description",
        "at most 200 characters",
    ),
    (
        payload(question(options=options("Staging", " staging "))),
        "questions[0].options[1].label",
        "duplicates questions[0].options[0].label",
    ),
    (payload(question(options=options("Yes", "Other"))), "questions[0].options[1].label", 'must not be "Other"'),
    (payload(question(options=options("Yes", "other…"))), "questions[0].options[1].label", 'must not be "Other"'),
    (payload(question(options=options("Yes", "OTHER..."))), "questions[0].options[1].label", 'must not be "Other"'),
    (payload(question(multiSelect="yes")), "questions[0].multiSelect", "must be true or false"),
    (payload(question(multiSelect=1)), "questions[0].multiSelect", "must be true or false"),
    (payload(timeoutSeconds=60.5), "timeoutSeconds", "must be an integer"),
    (payload(timeoutSeconds="60"), "timeoutSeconds", "must be an integer"),
    (payload(timeoutSeconds=True), "timeoutSeconds", "must be an integer"),
    (payload(question(colour="red")), "questions[0].colour", "is not a known field"),
    (
        payload(question(options=[{"label": "a", "emoji": "x"}, {"label": "b"}])),
        "questions[0].options[0].emoji",
        "is not a known field",
    ),
    (payload(extra=True), "extra", "is not a known field"),
    (payload(question(question="Pick\x00one")), "questions[0].question", "control characters"),
    (payload(question(header="\u200b\u200b")), "questions[0].header", "must not be blank"),
    (payload(question(header="Two\u2028lines")), "questions[0].header", "must be one line (found U+2028"),
    (payload(question(options=options("Yes", "N\u2029o"))), "questions[0].options[1].label", "found U+2029"),
    (payload(title="claude-code\u2028billing"), "title", "must be one line (found U+2028, a line break)"),
    (payload(question(header="Prod\u202e")), "questions[0].header", "text-direction characters (found U+202E)"),
    (
        payload(question(question="Deploy to \u202enoitcudorP?")),
        "questions[0].question",
        "text-direction characters (found U+202E)",
    ),
    (payload(question(options=options("Yes", "Ye\u200bs"))), "questions[0].options[1].label", "found U+200B"),
    (payload(question(options=options("Yes", "\u2067No"))), "questions[0].options[1].label", "found U+2067"),
    (payload(question(options=options("Yes", "Ye\u200ds"))), "questions[0].options[1].label", "found U+200D"),
    (
        payload(question(options=[{"label": "Yes", "description": "Safe\u200f"}, {"label": "No"}])),
        "questions[0].options[0].description",
        "found U+200F",
    ),
    (
        payload(question(options=options("Ｙｅｓ", "yes"))),
        "questions[0].options[1].label",
        "duplicates questions[0].options[0].label",
    ),
    (
        payload(question(options=options("Café", "cafe\u0301"))),
        "questions[0].options[1].label",
        "duplicates questions[0].options[0].label",
    ),
    (payload(session=""), "session", "must not be blank"),
    (payload(session="has space"), "session", "letters, digits"),
    (payload(run_kind="helper"), "run_kind", "must be one of 'main' or 'subagent'"),
    ({"questions": [QUESTION]}, "session", "is required"),
    (payload(questions="deploy"), "questions", "must be a list"),
    (payload(questions=["deploy"]), "questions[0]", "must be an object"),
]


@pytest.mark.parametrize("body,path,words", REJECTED)
def test_it_rejects_a_broken_rule_naming_the_field_and_stores_nothing(api, body, path, words):
    response = api.ask(body)

    assert response.status_code == 422, response.content
    error = response.json()
    assert error["error"] == "invalid_request"
    assert any(e["path"] == path and words in e["message"] for e in error["errors"]), error
    assert error["detail"].startswith(f"{error['errors'][0]['path']}: ")
    assert not Prompt.objects.exists() and not Session.objects.exists() and not Run.objects.exists()


def test_it_reports_every_broken_rule_at_once(api):
    body = payload(question(id="Bad", options=options("x")), timeoutSeconds="soon")

    errors = api.ask(body).json()["errors"]

    assert {e["path"] for e in errors} == {"questions[0].id", "questions[0].options", "timeoutSeconds"}


@pytest.mark.parametrize(
    "given,stored", [(5, 30), (29, 30), (30, 30), (900, 900), (3600, 3600), (9999, 3600), (-4, 30)]
)
def test_it_clamps_the_timeout(api, given, stored):
    created = api.ask(payload(timeoutSeconds=given)).json()

    prompt = Prompt.objects.get(pk=created["id"])
    assert prompt.timeout_seconds == stored == created["timeoutSeconds"]
    assert (prompt.expires_at - prompt.created_at).total_seconds() == stored
    assert any("clamped" in w for w in created["warnings"]) == (given != stored)


def test_the_timeout_defaults_to_fifteen_minutes(api):
    created = api.ask(payload()).json()

    assert created["timeoutSeconds"] == 900


@pytest.mark.parametrize(
    "header,shown",
    [
        ("Deploy", "Deploy"),
        ("Deployment target", "Deployment t"),
        ("部署目标选择器部署目标选择器", "部署目标选择器部署目标选"),
        ("👨‍👩‍👧‍👦" * 4 + " family trip", "👨‍👩‍👧‍👦" * 4 + " family"),
        ("Cafe\u0301 cafe\u0301 cafe\u0301", "Cafe\u0301 cafe\u0301 ca"),
        ("🇯🇵🇫🇷🇩🇪🇬🇧🇺🇸🇮🇳🇧🇷🇨🇦🇲🇽🇪🇸🇮🇹🇳🇱🇸🇪", "🇯🇵🇫🇷🇩🇪🇬🇧🇺🇸🇮🇳🇧🇷🇨🇦🇲🇽🇪🇸🇮🇹🇳🇱"),
    ],
)
def test_it_truncates_the_header_to_twelve_characters_without_splitting_one(api, header, shown):
    created = api.ask(payload(question(header=header))).json()

    stored = Question.objects.get(prompt_id=created["id"])
    assert stored.header == shown
    assert stored.header_full == header
    assert ("truncated" in " ".join(created["warnings"])) == (header != shown)


def test_joiners_inside_an_emoji_or_a_joining_script_are_kept(api):
    labels = ["क्\u200dष", "می\u200cخواهم", "\U0001f468\u200d\U0001f469\u200d\U0001f467 trip"]
    body = payload(question(options=options(*labels)))

    response = api.ask(body)

    assert response.status_code == 201, response.content
    assert [o.label for o in Question.objects.get().options.all()] == labels


def test_it_trims_every_string(api):
    body = payload(
        question(
            id="  deploy_target ",
            header="  Deploy ",
            question="  Where first?  ",
            options=[{"label": "  Staging  ", "description": "  Safe  "}, {"label": "Production "}],
        ),
        session=" support-42 ",
    )

    created = api.ask(body).json()

    stored = Question.objects.get(prompt_id=created["id"])
    assert (stored.key, stored.header, stored.text) == ("deploy_target", "Deploy", "Where first?")
    assert [(o.label, o.description) for o in stored.options.all()] == [("Staging", "Safe"), ("Production", "")]
    assert created["session"] == "support-42"


def test_it_accepts_a_recommended_option_out_of_place_with_a_warning(api):
    body = payload(question(options=options("Production", "Staging (Recommended)")))

    response = api.ask(body)

    assert response.status_code == 201
    assert response.json()["warnings"] == ["questions[0].options: put the recommended option first."]


def test_a_recommended_option_first_gets_no_warning(api):
    assert api.ask(payload()).json()["warnings"] == []


def test_multi_select_defaults_to_false_and_keeps_its_value(api):
    created = api.ask(payload(question(), question(id="extras", header="Extras", multiSelect=True))).json()

    flags = list(Question.objects.filter(prompt_id=created["id"]).values_list("multi_select", flat=True))
    assert flags == [False, True]


@pytest.mark.parametrize(
    "raw,status,code",
    [
        (b"{not json", 400, "invalid_json"),
        (b"", 400, "invalid_json"),
        (b"[1, 2]", 422, "invalid_request"),
        (b"\xff\xfe", 400, "invalid_json"),
        (b"[" * 30_000 + b"]" * 30_000, 400, "invalid_json"),
        (b"[" * 100_000 + b"]" * 100_000, 413, "body_too_large"),
        (json.dumps(payload(question(question="x" * 70_000))).encode(), 413, "body_too_large"),
        (b"{" + b" " * (2 * 1024 * 1024) + b"}", 413, "body_too_large"),
    ],
)
def test_it_rejects_a_body_that_is_not_a_json_object_or_too_large(api, raw, status, code):
    response = api.post("/prompts", raw=raw)

    assert response.status_code == status
    assert response.json()["error"] == code
    assert response.json()["detail"]
    assert not Prompt.objects.exists()


def test_the_tool_definition_carries_the_schema_and_the_guidance(api):
    tool = api.get("/tool").json()

    assert tool["name"] == "ask_user"
    schema = tool["input_schema"]
    assert set(schema["properties"]) == {"questions", "timeoutSeconds"}
    assert schema["additionalProperties"] is False
    guidance = tool["description"]
    for words in (
        "decisions that belong to the user",
        "at most three",
        "(Recommended)",
        'Never add an "Other" option',
        "best judgement",
        "permission",
    ):
        assert words in guidance


def test_the_tool_schema_matches_what_the_api_accepts():
    schema = contract.tool_definition()["input_schema"]
    question_schema = schema["$defs"]["QuestionIn"]

    assert schema["properties"]["questions"]["maxItems"] == 3
    assert question_schema["properties"]["options"]["minItems"] == 2
    assert question_schema["properties"]["options"]["maxItems"] == 4
    assert question_schema["properties"]["id"]["pattern"] == "^[a-z][a-z0-9_]*$"
