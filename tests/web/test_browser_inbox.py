"""The inbox in a real browser: two agents' questions answered from one page with the keyboard alone."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from askuser_app.models import Prompt
from tests.browsers import MARKS, WAIT_MS, Human, shot

pytestmark = MARKS

PERMISSION = {
    "id": "permission",
    "header": "Bash",
    "question": "Run this command? rm -rf build/",
    "options": [{"label": "Allow"}, {"label": "Deny"}],
}


def open_inbox(human: Human):
    page = human.context.new_page()
    page.on("pageerror", lambda error: human.errors.append(str(error)))
    page.add_init_script("document.addEventListener('htmx:wsOpen', () => { window.inboxLive = true; })")
    page.goto("/inbox/")
    page.wait_for_function("() => window.inboxLive === true", timeout=WAIT_MS)
    return page


def test_two_agents_questions_are_answered_from_the_inbox_with_the_keyboard_alone(chromium, server, owner, agent_api):
    person = Human(chromium, server, owner, viewport={"width": 1280, "height": 900})
    build = agent_api.ask(PERMISSION, session="build", timeoutSeconds=900)
    build_result = agent_api.wait(build)
    page = open_inbox(person)
    cards = page.locator("#inbox-prompts .inbox-card")
    expect(cards).to_have_count(1)

    # A second agent asks while the first waits: it comes in live, first, as its deadline is sooner.
    deploy = agent_api.ask(session="deploy", timeoutSeconds=300)
    deploy_result = agent_api.wait(deploy)
    expect(cards).to_have_count(2, timeout=WAIT_MS)
    expect(cards.first).to_have_attribute("data-prompt-id", deploy)
    expect(page.locator(f"#prompt-{deploy} .inbox-from")).to_contain_text("deploy")
    shot(page, "inbox")

    page.keyboard.press("j")  # to the first card
    expect(cards.first).to_be_focused()
    page.keyboard.press("j")
    expect(cards.nth(1)).to_be_focused()
    page.keyboard.press("k")
    expect(cards.first).to_be_focused()
    page.keyboard.press("2")  # picks Production; in the inbox a key only picks
    expect(page.locator(f"#prompt-{deploy}").get_by_role("radio", name="Production")).to_be_checked()
    page.keyboard.press("Enter")

    # It folds into "just answered", and the focus goes to the card in its place.
    expect(page.locator(f"#prompt-{deploy}")).to_have_count(0, timeout=WAIT_MS)
    expect(page.locator(f"#answered-{deploy}")).to_contain_text("Production")
    expect(page.locator(f"#prompt-{build}")).to_be_focused()
    page.keyboard.press("1")
    page.keyboard.press("Enter")

    expect(page.locator(f"#answered-{build}")).to_contain_text("Allow", timeout=WAIT_MS)
    expect(page.locator("#inbox-empty")).to_be_visible()
    expect(page.locator("#waiting .waiting-link")).to_have_count(0)  # nothing waits any more
    shot(page, "inbox-answered")
    assert deploy_result.result(timeout=15)["answers"]["answers"] == {"deploy_target": ["Production"]}
    assert build_result.result(timeout=15)["answers"]["answers"] == {"permission": ["Allow"]}
    for prompt_id in (deploy, build):
        prompt = Prompt.objects.get(pk=prompt_id)
        assert (prompt.status, prompt.surface, prompt.resolved_by) == ("answered", "web", owner)
    person.context.close()
    assert person.errors == []


def test_in_the_inbox_s_skips_and_m_asks_for_more_time(chromium, server, owner, agent_api):
    person = Human(chromium, server, owner, viewport={"width": 1280, "height": 900})
    first = agent_api.ask(session="first", timeoutSeconds=300)
    second = agent_api.ask(PERMISSION, session="second", timeoutSeconds=600)
    page = open_inbox(person)

    page.keyboard.press("j")
    page.keyboard.press("m")
    expect(page.locator(f"#more-time-{first}")).to_contain_text("Deadline moved once", timeout=WAIT_MS)
    page.keyboard.press("s")

    expect(page.locator(f"#answered-{first}")).to_contain_text("Skipped", timeout=WAIT_MS)
    assert Prompt.objects.get(pk=first).extended == 1
    assert Prompt.objects.get(pk=first).result["skipped"] == ["deploy_target"]
    assert Prompt.objects.get(pk=second).status == "pending"
    person.context.close()
    assert person.errors == []


def permission_request(session_id: str, command: str) -> dict:
    """A PermissionRequest as Claude Code posts it to an http hook (hooks reference)."""
    return {
        "session_id": session_id,
        "transcript_path": f"/home/alice/.claude/projects/{session_id}.jsonl",
        "cwd": f"/home/alice/{session_id}",
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "as the agent asked"},
    }


def test_two_coding_agents_permissions_are_decided_from_the_inbox_with_the_keyboard_alone(
    chromium,
    server,
    owner,
    agent_api,
):
    person = Human(chromium, server, owner, viewport={"width": 1280, "height": 900})
    page = open_inbox(person)
    cards = page.locator("#inbox-prompts .inbox-card")

    def hook(event: dict):
        url = f"{server.url}/api/v1/hooks?wait=30"
        return agent_api.pool.submit(lambda: httpx.post(url, json=event, headers=agent_api.headers, timeout=60))

    build = hook(permission_request("build-agent", "rm -rf build/"))
    expect(cards).to_have_count(1, timeout=WAIT_MS)
    deploy = hook(permission_request("deploy-agent", "git push --force origin main"))
    expect(cards).to_have_count(2, timeout=WAIT_MS)
    expect(page.locator("#inbox-prompts")).to_contain_text("rm -rf build/")
    expect(page.locator("#inbox-prompts")).to_contain_text("git push --force origin main")
    shot(page, "inbox-permissions")

    # The first card is the first asked (the same deadline, the older first): allow it; deny the other.
    page.keyboard.press("j")
    expect(cards.first).to_be_focused()
    expect(cards.first).to_contain_text("rm -rf build/")
    page.keyboard.press("1")  # Allow
    page.keyboard.press("Enter")
    expect(cards).to_have_count(1, timeout=WAIT_MS)
    expect(cards.first).to_be_focused()
    page.keyboard.press("2")  # Deny
    page.keyboard.press("Enter")
    expect(page.locator("#inbox-empty")).to_be_visible(timeout=WAIT_MS)

    allowed, denied = build.result(timeout=30), deploy.result(timeout=30)
    assert allowed.status_code == denied.status_code == 200
    assert allowed.json() == {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    }
    decision = denied.json()["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny" and "alice" in decision["message"]
    person.context.close()
    assert person.errors == []
