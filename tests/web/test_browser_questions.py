"""Claude Code's AskUserQuestion in a real browser: four questions, their descriptions and
previews shown, answered from the inbox with the keyboard alone (a multi-select, an Other typed)."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from tests.browsers import MARKS, WAIT_MS, Human, shot

pytestmark = MARKS

QUESTIONS = [
    {
        "question": "Which library should parse the dates?",
        "header": "Library",
        "options": [
            {"label": "dateutil", "description": "Lenient, already a dependency", "preview": "parse('5 Dec')"},
            {"label": "Arrow", "description": "A new dependency"},
        ],
        "multiSelect": False,
    },
    {
        "question": "Which formats must it accept?",
        "header": "Formats",
        "options": [
            {"label": "ISO 8601", "description": "2026-12-05"},
            {"label": "RFC 2822", "description": "Sat, 05 Dec 2026"},
            {"label": "Unix time", "description": "1796428800"},
        ],
        "multiSelect": True,
    },
    {
        "question": "What should a bad date do?",
        "header": "Errors",
        "options": [
            {"label": "Raise", "description": "A ValueError"},
            {"label": "Return None", "description": "The caller checks"},
        ],
        "multiSelect": False,
    },
    {
        "question": "Where do the tests go?",
        "header": "Tests",
        "options": [
            {"label": "tests/unit", "description": "Beside the others"},
            {"label": "tests/dates", "description": "A folder of their own"},
        ],
        "multiSelect": False,
    },
]
ASK_USER_QUESTION = {
    "session_id": "question-agent",
    "transcript_path": "/home/alice/.claude/projects/question-agent.jsonl",
    "cwd": "/home/alice/calendar",
    "permission_mode": "default",
    "hook_event_name": "PreToolUse",
    "tool_name": "AskUserQuestion",
    "tool_input": {"questions": QUESTIONS},
    "tool_use_id": "toolu_questions_browser",
}


def test_four_questions_are_answered_from_the_inbox_by_keyboard(chromium, server, owner, agent_api):
    person = Human(chromium, server, owner, viewport={"width": 1280, "height": 900})
    page = person.context.new_page()
    page.on("pageerror", lambda error: person.errors.append(str(error)))
    page.add_init_script("document.addEventListener('htmx:wsOpen', () => { window.inboxLive = true; })")
    page.goto("/inbox/")
    page.wait_for_function("() => window.inboxLive === true", timeout=WAIT_MS)
    url = f"{server.url}/api/v1/hooks?wait=30"
    hook = agent_api.pool.submit(lambda: httpx.post(url, json=ASK_USER_QUESTION, headers=agent_api.headers, timeout=60))

    card = page.locator("#inbox-prompts .inbox-card")
    expect(card).to_have_count(1, timeout=WAIT_MS)
    steps = card.locator(".step")
    expect(steps).to_have_count(4)
    first = steps.nth(0)
    expect(first).to_be_visible()
    expect(first.locator(".question")).to_have_text("Which library should parse the dates?")
    expect(first.get_by_text("Lenient, already a dependency")).to_be_visible()
    expect(first.locator(".detail")).to_be_visible()
    expect(first.locator(".detail")).to_have_text("dateutil\nparse('5 Dec')")  # the preview, under its label
    shot(page, "inbox-ask-user-question")

    page.keyboard.press("j")
    expect(card).to_be_focused()
    page.keyboard.press("1")  # in the inbox a key only picks
    expect(first.get_by_role("radio", name="dateutil")).to_be_checked()
    page.keyboard.press("Enter")

    formats = steps.nth(1)
    expect(formats).to_be_visible()
    expect(card.locator("[data-progress]")).to_have_text("2/4")
    page.keyboard.press("1")
    page.keyboard.press("3")
    expect(formats.get_by_role("checkbox", name="ISO 8601")).to_be_checked()
    expect(formats.get_by_role("checkbox", name="RFC 2822")).not_to_be_checked()
    expect(formats.get_by_role("checkbox", name="Unix time")).to_be_checked()
    page.keyboard.press("Enter")

    errors = steps.nth(2)
    expect(errors).to_be_visible()
    page.keyboard.press("3")  # the key after the options: Other
    other = errors.get_by_role("textbox", name="Other")
    expect(other).to_be_focused()
    page.keyboard.type("Log it and keep the raw text")
    page.keyboard.press("Enter")

    where = steps.nth(3)
    expect(where).to_be_visible()
    expect(card.locator("[data-progress]")).to_have_text("4/4")
    page.keyboard.press("2")
    expect(where.get_by_role("radio", name="tests/dates")).to_be_checked()
    page.keyboard.press("Enter")
    expect(page.locator("#inbox-empty")).to_be_visible(timeout=WAIT_MS)
    done = page.locator("#inbox-answered .answered-line")
    expect(done).to_have_count(4)
    expect(done.nth(1)).to_contain_text("ISO 8601, Unix time")
    expect(done.nth(2).locator("q.free")).to_have_text("Log it and keep the raw text")

    output = hook.result(timeout=30).json()
    assert output == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {
                "questions": QUESTIONS,
                "answers": {
                    "Which library should parse the dates?": "dateutil",
                    "Which formats must it accept?": "ISO 8601, Unix time",
                    "What should a bad date do?": "Log it and keep the raw text",
                    "Where do the tests go?": "tests/dates",
                },
            },
        }
    }
    person.context.close()
    assert person.errors == []
