"""The language switch in a real browser: the header's switcher, the panel and composer in
Hindi (pushed live), a plain-text reply with a Devanagari digit, and the switcher without JavaScript."""

from __future__ import annotations

from askuser_app.models import Preferences, Prompt
from tests.browsers import MARKS, WAIT_MS, Human, panel_closed, panel_open, shot

pytestmark = MARKS


def switch_to_hindi(page) -> None:
    with page.expect_navigation():
        page.select_option("#language-switcher", "hi")  # JavaScript submits the choice at once
    page.wait_for_function("() => document.documentElement.lang === 'hi'", timeout=WAIT_MS)


def test_switching_to_hindi_in_the_header_shows_the_panel_and_composer_in_hindi(human, agent_api, owner):
    page = human.open()
    assert page.locator("#composer-text").get_attribute("placeholder") == "Message the agent…"

    switch_to_hindi(page)
    prompt_id = agent_api.ask()
    waiting = agent_api.wait(prompt_id)
    panel = panel_open(page)

    assert page.url.endswith("/s/support-42/")  # back on the page it was chosen from
    assert Preferences.objects.get(user=owner).language == "hi"
    assert page.locator("html").get_attribute("dir") == "ltr"
    panel.locator(".countdown:has-text('शेष')").wait_for(timeout=WAIT_MS)  # the live countdown, said by Intl
    text = panel.inner_text()
    for words in ["सभी छोड़ें", "अन्य", "एक चुनें, या अपना उत्तर लिखें।", "Where should this release go first?"]:
        assert words in text, words
    assert "शेष समय:" in (panel.locator("[data-countdown-spoken]").text_content() or "")  # said in minutes
    composer = page.locator("#composer-text")
    assert composer.get_attribute("placeholder") == "उत्तर दें, जैसे 1 या कोई लेबल…"
    assert page.locator("#composer button.send").inner_text() == "भेजें"
    shot(page, "hindi-panel")

    page.keyboard.press("Escape")  # the bar collapses, and the composer is back
    panel.locator(".panel-bar[aria-expanded='false']").wait_for(timeout=WAIT_MS)
    assert panel.locator("[data-toggle-label]").inner_text() == "प्रश्न दिखाएँ"
    composer.fill("२")  # a Devanagari 2: the second option
    composer.press("Enter")
    panel_closed(page)

    result = waiting.result(timeout=WAIT_MS / 1000)
    assert result["status"] == "answered" and result["answers"]["answers"]["deploy_target"] == ["Production"]
    summary = page.locator(f"#item-prompt-{prompt_id}")
    summary.wait_for(timeout=WAIT_MS)
    assert "सादा-टेक्स्ट उत्तर से" in summary.inner_text() and "उत्तर दिया गया" in summary.inner_text()
    assert Prompt.objects.get(pk=prompt_id).surface == "text"


def test_the_switcher_works_without_javascript_before_the_login(chromium, server):
    context = chromium.new_context(base_url=server.url, java_script_enabled=False, locale="en-US")
    try:
        page = context.new_page()
        page.goto("/login/")
        assert page.locator("h1").inner_text() == "Log in"

        page.select_option("#language-switcher", "hi")
        with page.expect_navigation():
            page.click("text=Change language")  # the button a page without JavaScript submits with

        assert page.locator("html").get_attribute("lang") == "hi"
        assert page.locator("h1").inner_text() == "लॉग इन करें"
        assert page.url.endswith("/login/")
    finally:
        context.close()


def test_a_browser_asking_for_hindi_gets_hindi_and_english_is_one_choice_away(chromium, server, owner):
    person = Human(chromium, server, owner, locale="hi-IN")
    try:
        page = person.context.new_page()
        page.goto("/")
        assert page.locator("h1").inner_text() == "सत्र"

        with page.expect_navigation():
            page.select_option("#language-switcher", "en")
        assert page.locator("h1").inner_text() == "Sessions"
        assert Preferences.objects.get(user=owner).language == "en"  # chosen: the browser's no longer decides
    finally:
        person.context.close()
