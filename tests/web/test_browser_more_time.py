"""More time in a real browser: one tab asks for it, every tab's countdown moves, the agent sees it."""

from __future__ import annotations

from datetime import datetime

import httpx

from askuser_app.domain import contract, services
from askuser_app.models import Prompt
from tests.browsers import MARKS, WAIT_MS, Human, panel_open, shot

pytestmark = MARKS


def shown_deadline(page) -> str:
    return page.locator("#prompt-panel .countdown").get_attribute("data-expires-at")


def test_more_time_in_one_tab_moves_the_countdown_in_both_and_the_agent_sees_it(human, agent_api):
    first, second = human.open(), human.open()
    prompt_id = agent_api.ask()
    panel_open(first)
    panel_open(second)
    before = shown_deadline(second)
    assert second.locator("#prompt-panel .countdown").inner_text().startswith(("14:", "15:"))  # 15 minutes to go

    first.locator("#prompt-panel").get_by_role("button", name="More time (+15 min)").click()

    # The other tab, never reloaded, counts down to the new deadline.
    second.wait_for_function(
        "before => document.querySelector('#prompt-panel .countdown').dataset.expiresAt !== before",
        arg=before,
        timeout=WAIT_MS,
    )
    moved = datetime.fromisoformat(shown_deadline(second)) - datetime.fromisoformat(before)
    assert moved.total_seconds() == 900
    second.wait_for_function(
        "() => /^(29|30):/.test(document.querySelector('#prompt-panel .countdown').textContent)", timeout=WAIT_MS
    )
    assert second.locator("#prompt-panel").get_by_text("Deadline moved once").is_visible()
    body = httpx.get(f"{agent_api.server.url}/api/v1/prompts/{prompt_id}", headers=agent_api.headers).json()
    assert body["extended"] == 1
    assert body["expires_at"] == contract.iso(Prompt.objects.get(pk=prompt_id).expires_at)
    assert body["expires_at"] == contract.iso(datetime.fromisoformat(shown_deadline(first)))  # what both tabs show
    shot(first, "more-time-once")

    for count in (2, 3):
        first.locator("#prompt-panel").get_by_role("button", name="More time (+15 min)").click()
        first.wait_for_function(
            f"() => /moved {count} times/.test(document.querySelector('.more-time').textContent)", timeout=WAIT_MS
        )

    # No more may be added: the button is gone in both tabs, and the countdown shows an hour.
    for page in (first, second):
        page.wait_for_function("() => !document.querySelector('.more-time-button')", timeout=WAIT_MS)
        page.wait_for_function(
            "() => /^(59:|1h 00m)/.test(document.querySelector('#prompt-panel .countdown').textContent)",
            timeout=WAIT_MS,
        )
    assert Prompt.objects.get(pk=prompt_id).extended == 3
    assert (
        httpx.get(f"{agent_api.server.url}/api/v1/prompts/{prompt_id}", headers=agent_api.headers).json()["extended"]
        == 3
    )


def test_the_phone_card_offers_more_time_too(chromium, server, owner, agent, agent_api):
    services.post_agent_message(agent, "support-42", "Quick question from your agent.")
    person = Human(chromium, server, owner, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = person.open()
    prompt_id = agent_api.ask()
    button = panel_open(page).get_by_role("button", name="More time (+15 min)")

    assert button.bounding_box()["height"] >= 44  # touch-sized
    button.tap()

    page.wait_for_selector("text=Deadline moved once", timeout=WAIT_MS)
    assert Prompt.objects.get(pk=prompt_id).extended == 1
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    person.context.close()
    assert person.errors == []
