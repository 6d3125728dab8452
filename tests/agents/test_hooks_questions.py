"""SPEC 4.5: Claude Code's AskUserQuestion through /api/v1/hooks becomes one prompt, and the
person's answers go back as ``updatedInput.answers`` keyed by question text."""

from __future__ import annotations

import asyncio
import json

import pytest

from askuser_app.domain import services
from askuser_app.models import Prompt
from askuser_app.runtime import realtime
from askuser_app.runtime.asyncdb import database_call
from tests.conftest import asgi_request

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 10
BASE = {"session_id": "9b2f0c1e-aq", "cwd": "/home/alice/app", "tool_name": "AskUserQuestion", "tool_use_id": "toolu_1"}
QUESTIONS = [
    {
        "question": f"Question number {n}?",
        "header": f"Head {n}",
        "options": [
            {"label": "Alpha", "description": "The first", "preview": "<b>alpha()</b>"},
            {"label": "Beta", "description": "The second"},
        ],
        "multiSelect": n == 2,
    }
    for n in range(1, 5)
]
PRE = {**BASE, "hook_event_name": "PreToolUse", "tool_input": {"questions": QUESTIONS}}
TWIN = {k: v for k, v in {**PRE, "hook_event_name": "PermissionRequest"}.items() if k != "tool_use_id"}


def post_hook(token: str, event: dict, wait: float = 30) -> asyncio.Future:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    body = json.dumps(event).encode()
    return asyncio.ensure_future(asgi_request("POST", f"/api/v1/hooks?wait={wait}", content=body, headers=headers))


@database_call
def prompts() -> list[Prompt]:
    return list(Prompt.objects.prefetch_related("questions__options").order_by("pk"))


async def asked_prompt() -> Prompt:
    end = asyncio.get_running_loop().time() + DEADLINE
    while True:
        found = await prompts()
        if found and realtime.hub().inboxes.get(realtime.prompt_group(found[0].pk)):
            return found[0]
        assert asyncio.get_running_loop().time() < end, "the hook never parked"
        await asyncio.sleep(0.01)


answer = database_call(services.answer)


def answered_with(answers: dict[str, str]) -> dict:
    updated = {"questions": QUESTIONS, "answers": answers}
    return {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": updated}
    }


async def test_four_questions_become_one_prompt_with_descriptions_and_previews(token, owner):
    calling = post_hook(token, PRE)
    prompt = await asked_prompt()

    questions = list(prompt.questions.all())
    assert [q.text for q in questions] == [q["question"] for q in QUESTIONS]
    assert [q.multi_select for q in questions] == [False, True, False, False]
    assert [(o.label, o.description) for o in questions[0].options.all()] == [
        ("Alpha", "The first"),
        ("Beta", "The second"),
    ]
    assert questions[0].detail == "Alpha\n<b>alpha()</b>"
    await answer(prompt, {f"q{n}": "Alpha" for n in range(1, 5)}, by=owner, surface="web")
    await asyncio.wait_for(calling, DEADLINE)


async def test_answers_go_back_keyed_by_question_text_multi_joined_other_typed_skipped_left_out(token, owner):
    calling = post_hook(token, PRE)
    prompt = await asked_prompt()

    await answer(
        prompt, {"q1": "Beta", "q2": ["Alpha", "Beta"], "q3": "my own words", "q4": None}, by=owner, surface="web"
    )

    response = await asyncio.wait_for(calling, DEADLINE)
    assert response.json() == answered_with(
        {"Question number 1?": "Beta", "Question number 2?": "Alpha, Beta", "Question number 3?": "my own words"}
    )


async def test_no_answer_within_wait_returns_nothing_so_the_terminal_asks(token):
    response = await asyncio.wait_for(post_hook(token, PRE, wait=0), DEADLINE)
    assert response.json() == {}


async def test_everything_skipped_returns_nothing(token, owner):
    calling = post_hook(token, PRE)
    prompt = await asked_prompt()
    await answer(prompt, {f"q{n}": None for n in range(1, 5)}, by=owner, surface="web")
    assert (await asyncio.wait_for(calling, DEADLINE)).json() == {}


async def test_the_permission_request_twin_follows_the_held_question_and_asks_no_second(token, owner):
    pre = post_hook(token, PRE)
    prompt = await asked_prompt()
    twin = post_hook(token, TWIN)
    end = asyncio.get_running_loop().time() + DEADLINE
    while len(realtime.hub().inboxes.get(realtime.prompt_group(prompt.pk), ())) < 2:  # the twin waits on it too
        assert asyncio.get_running_loop().time() < end, "the twin never parked"
        await asyncio.sleep(0.01)
    await answer(prompt, {"q1": "Alpha", "q2": "Beta", "q3": "Alpha", "q4": "Beta"}, by=owner, surface="web")

    said = (await asyncio.wait_for(twin, DEADLINE)).json()
    assert said["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    assert said["hookSpecificOutput"]["decision"]["updatedInput"]["answers"]["Question number 2?"] == "Beta"
    assert (await asyncio.wait_for(pre, DEADLINE)).json()["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert len(await prompts()) == 1


async def test_the_twin_after_an_unanswered_question_asks_nothing_new(token):
    assert (await asyncio.wait_for(post_hook(token, PRE, wait=0), DEADLINE)).json() == {}

    response = await asyncio.wait_for(post_hook(token, TWIN, wait=0), DEADLINE)

    assert response.json() == {}  # nobody answered: the terminal asks
    assert len(await prompts()) == 1


async def test_the_twin_alone_asks_when_no_pretooluse_did(token, owner):
    """With only the PermissionRequest hook installed, the questions are asked there."""
    calling = post_hook(token, TWIN)
    prompt = await asked_prompt()
    await answer(prompt, {"q1": "Beta", "q2": None, "q3": None, "q4": None}, by=owner, surface="web")

    said = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]
    assert said["decision"]["behavior"] == "allow"
    assert said["decision"]["updatedInput"]["answers"] == {"Question number 1?": "Beta"}
