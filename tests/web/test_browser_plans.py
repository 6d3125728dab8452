"""A coding agent's plan in a real browser: rendered, nothing of it run or fetched, approved
from the inbox with the keyboard alone."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from tests.browsers import MARKS, WAIT_MS, Human, shot

pytestmark = MARKS

PLAN_INPUT = {
    "plan": "## Retry the upload\n\n1. Wrap `upload()` in **retry**\n2. Add a test\n\n"
    "<script>window.planRan = true</script>\n\n"
    "![pixel](http://127.0.0.1:9/pixel.png) [bad](javascript:window.planRan=true)"
}
EXIT_PLAN_MODE = {
    "session_id": "plan-agent",
    "transcript_path": "/home/alice/.claude/projects/plan-agent.jsonl",
    "cwd": "/home/alice/uploader",
    "permission_mode": "plan",
    "hook_event_name": "PreToolUse",
    "tool_name": "ExitPlanMode",
    "tool_input": PLAN_INPUT,
    "tool_use_id": "toolu_plan_browser",
}


def test_a_plan_is_shown_rendered_and_approved_from_the_inbox_by_keyboard(chromium, server, owner, agent_api):
    person = Human(chromium, server, owner, viewport={"width": 1280, "height": 900})
    page = person.context.new_page()
    page.on("pageerror", lambda error: person.errors.append(str(error)))
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url) if "pixel" in request.url else None)
    page.add_init_script("document.addEventListener('htmx:wsOpen', () => { window.inboxLive = true; })")
    page.goto("/inbox/")
    page.wait_for_function("() => window.inboxLive === true", timeout=WAIT_MS)
    url = f"{server.url}/api/v1/hooks?wait=30"
    hook = agent_api.pool.submit(lambda: httpx.post(url, json=EXIT_PLAN_MODE, headers=agent_api.headers, timeout=60))

    card = page.locator("#inbox-prompts .inbox-card")
    expect(card).to_have_count(1, timeout=WAIT_MS)
    plan = card.locator(".detail.plan")
    expect(plan.get_by_role("heading", name="Retry the upload")).to_be_visible()
    expect(plan.locator("strong")).to_have_text("retry")
    expect(plan).to_contain_text("<script>window.planRan = true</script>")  # shown, not run
    expect(plan.get_by_role("link", name="pixel")).to_have_attribute("href", "http://127.0.0.1:9/pixel.png")
    expect(plan.get_by_role("link", name="bad")).to_have_count(0)
    shot(page, "inbox-plan")

    page.keyboard.press("j")
    expect(card).to_be_focused()
    page.keyboard.press("1")  # Approve; in the inbox a key only picks
    expect(card.get_by_role("radio", name="Approve")).to_be_checked()
    page.keyboard.press("Enter")
    expect(page.locator("#inbox-empty")).to_be_visible(timeout=WAIT_MS)

    output = hook.result(timeout=30).json()
    assert output["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert output["hookSpecificOutput"]["updatedInput"] == PLAN_INPUT
    assert page.evaluate("() => window.planRan === undefined")
    assert fetched == []
    person.context.close()
    assert person.errors == []
