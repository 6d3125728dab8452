"""SPEC 4.5: a coding agent's plan (``ExitPlanMode``) posted to /api/v1/hooks is asked as
Approve / Keep planning, and the answer goes back in the shape Claude Code accepts for it."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import Client

from askuser_app.domain import hooks, services
from askuser_app.models import Prompt
from askuser_app.runtime import realtime
from askuser_app.runtime.asyncdb import database_call
from tests.conftest import asgi_request

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 10
PLAN_TEXT = "# Plan\n\n1. Add `retry()`\n2. Test it\n\n<script>alert(1)</script>"
PLAN = {
    "session_id": "8d0c6a52-4f0e-4bb1-a3f5-2a6c9d1e7b31",
    "transcript_path": "/home/alice/.claude/projects/p.jsonl",
    "cwd": "/home/alice/app",
    "permission_mode": "plan",
    "hook_event_name": "PreToolUse",
    "tool_name": "ExitPlanMode",
    "tool_input": {"plan": PLAN_TEXT, "planFilePath": "/home/alice/.claude/plans/p.md"},
    "tool_use_id": "toolu_plan_1",
}
TWIN = {k: v for k, v in PLAN.items() if k != "tool_use_id"} | {
    "hook_event_name": "PermissionRequest",
    "permission_suggestions": [],
}
answer = database_call(services.answer)


def post_hook(token: str, event: dict, wait: float = 30) -> asyncio.Future:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    body = json.dumps(event).encode()
    return asyncio.ensure_future(asgi_request("POST", f"/api/v1/hooks?wait={wait}", content=body, headers=headers))


@database_call
def prompts() -> list[Prompt]:
    return list(Prompt.objects.prefetch_related("questions__options").order_by("created_at"))


async def asked_prompt() -> Prompt:
    """The hook's prompt, once the hook call waits on it."""
    end = asyncio.get_running_loop().time() + DEADLINE
    while True:
        found = await prompts()
        if found and realtime.hub().inboxes.get(realtime.prompt_group(found[-1].pk)):
            return found[-1]
        assert asyncio.get_running_loop().time() < end, "the hook never parked"
        await asyncio.sleep(0.01)


async def test_a_plan_is_asked_as_approve_or_keep_planning_with_the_plan_shown(token, owner):
    calling = post_hook(token, PLAN)
    prompt = await asked_prompt()
    question = prompt.questions.all()[0]
    assert prompt.hook_kind == "plan"
    assert [o.label for o in question.options.all()] == ["Approve", "Keep planning"]
    assert question.detail == PLAN_TEXT
    await answer(prompt, {"plan": "Approve"}, by=owner, surface="web")
    output = (await asyncio.wait_for(calling, DEADLINE)).json()
    # A bare allow leaves Claude Code's own dialog up: the input as given goes back with it.
    assert output == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "Plan approved in askuser",
            "updatedInput": PLAN["tool_input"],
        }
    }


async def test_keep_planning_with_the_persons_words_denies_with_them_as_the_reason(token, owner):
    calling = post_hook(token, PLAN)
    prompt = await asked_prompt()
    await answer(prompt, {"plan": "Split step 2 into unit and integration tests"}, by=owner, surface="web")
    said = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]
    assert said["permissionDecision"] == "deny"
    assert said["permissionDecisionReason"] == "Split step 2 into unit and integration tests"


async def test_keep_planning_alone_denies_with_a_sentence_the_model_can_read(token, owner):
    calling = post_hook(token, TWIN)
    prompt = await asked_prompt()
    await answer(prompt, {"plan": "Keep planning"}, by=owner, surface="web")
    decision = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    assert "keep planning" in decision["message"]


async def test_a_plan_nobody_answers_returns_nothing_so_the_terminal_asks(token, owner):
    output = (await asyncio.wait_for(post_hook(token, PLAN, wait=0), DEADLINE)).json()
    assert output == {}


async def test_an_approved_permission_request_carries_the_input_never_a_bare_allow(token, owner):
    calling = post_hook(token, TWIN)
    prompt = await asked_prompt()
    await answer(prompt, {"plan": "Approve"}, by=owner, surface="web")
    decision = (await asyncio.wait_for(calling, DEADLINE)).json()["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow", "updatedInput": PLAN["tool_input"]}


async def test_the_permission_request_after_a_plans_pre_tool_use_asks_nothing_again(token, owner):
    assert (await asyncio.wait_for(post_hook(token, PLAN, wait=0), DEADLINE)).json() == {}
    # Nobody answered the PreToolUse question: the twin returns {} at once, and asks no second question.
    assert (await asyncio.wait_for(post_hook(token, TWIN, wait=30), DEADLINE)).json() == {}
    assert len(await prompts()) == 1


async def test_the_permission_request_while_the_plan_is_still_asked_takes_its_answer(token, owner):
    first = post_hook(token, PLAN)
    prompt = await asked_prompt()
    twin = post_hook(token, TWIN)
    await asyncio.sleep(0)  # the twin's request is on its way; the answer may come before or after it parks
    await answer(prompt, {"plan": "Approve"}, by=owner, surface="web")
    decision = (await asyncio.wait_for(twin, DEADLINE)).json()["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow", "updatedInput": PLAN["tool_input"]}
    assert (await asyncio.wait_for(first, DEADLINE)).json()["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert len(await prompts()) == 1


@database_call
def page(owner, path: str) -> str:
    client = Client()
    client.force_login(owner)
    return client.get(path).content.decode()


async def test_the_plan_shows_as_markdown_on_the_inbox_and_the_session_page(token, owner):
    hostile = (
        "## Steps\n\n- **bold** step\n\n<script>alert(1)</script>\n<img src=x onerror=alert(2)>\n\n"
        "[run](javascript:alert(3)) [docs](https://example.com/d) ![tracker](https://evil.example/pixel.png)"
    )
    calling = post_hook(token, {**PLAN, "tool_input": {"plan": hostile}})
    prompt = await asked_prompt()
    for path in ("/inbox/", f"/s/{hooks.session_key(PLAN)}/"):
        html = await page(owner, path)
        assert "<h2>Steps</h2>" in html and "<strong>bold</strong>" in html
        assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
        assert "<img src=x" not in html and "&lt;img src=x" in html
        assert 'href="javascript:' not in html
        assert "<img" not in html.split('class="detail plan"')[1].split("</div>")[0]
        assert 'href="https://evil.example/pixel.png"' in html  # the image as a link, never fetched
    await answer(prompt, {"plan": "Approve"}, by=owner, surface="web")
    await asyncio.wait_for(calling, DEADLINE)
