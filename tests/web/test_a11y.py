"""Accessibility in a real browser: axe-core over every page in the light and
the dark theme, the panel with the keyboard and a screen reader's view of it,
and motion that stops when the system asks for less.

axe-core comes with axe-playwright-python; it runs over whatever is on the
page, so a piece of UI added later is checked by the same tests.
"""

from __future__ import annotations

import httpx
import pytest

from askuser_app.domain import services
from askuser_app.models import Prompt
from tests.browsers import MARKS, WAIT_MS, Human, panel_closed, panel_open
from tests.conftest import EXTRAS, QUESTION

pytestmark = MARKS

axe_api = pytest.importorskip("axe_playwright_python.sync_playwright", reason="install the test requirements")

AXE = axe_api.Axe()
BLOCKING = ("serious", "critical")
SCHEMES = ("light", "dark")
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


def violations(page) -> list[str]:
    """axe-core's serious and critical findings on the page as it is now, one readable line each."""
    found = AXE.run(page).response["violations"]
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[node['target'] for node in v['nodes']]}"
        for v in found
        if v["impact"] in BLOCKING
    ]


@pytest.fixture
def person(chromium, server, owner, agent):
    """Opens a logged-in browser context on demand; closes each and checks no script failed."""
    services.post_agent_message(agent, "support-42", "Hi! I'm getting release 2.4 ready.")
    opened: list[Human] = []

    def open_as(**context) -> Human:
        human = Human(chromium, server, owner, **{**DESKTOP, **context})
        opened.append(human)
        return human

    yield open_as
    for human in opened:
        human.context.close()
        assert human.errors == []


# --- axe-core over every page --------------------------------------------------------------


def sessions_list(person, ask, scheme):
    ask(QUESTION, session="release")  # a row with a pending question, its chip and countdown
    page = person(color_scheme=scheme).context.new_page()
    page.goto("/")
    page.wait_for_selector("#sessions-list .countdown")
    return page


def panel_expanded(person, ask, scheme):
    page = person(color_scheme=scheme).open()
    ask(QUESTION, EXTRAS)
    panel_open(page)
    return page


def panel_collapsed(person, ask, scheme):
    page = panel_expanded(person, ask, scheme)
    page.keyboard.press("Escape")
    page.wait_for_selector("#prompt-panel.is-collapsed")
    return page


def multi_select(person, ask, scheme):
    page = person(color_scheme=scheme).open()
    ask(EXTRAS)
    panel_open(page).get_by_text("Docs").click()  # a chosen option is drawn differently
    return page


def phone_card(person, ask, scheme):
    page = person(color_scheme=scheme, **PHONE).open()
    ask(QUESTION, EXTRAS)
    panel_open(page).scroll_into_view_if_needed()
    return page


def prompt_page(person, ask, scheme):
    prompt_id = ask(QUESTION)
    page = person(color_scheme=scheme).context.new_page()
    page.goto(f"/p/{prompt_id}/")
    panel_open(page)
    return page


def inbox(person, ask, scheme):
    ask(QUESTION, EXTRAS, session="release")  # two cards, one of two questions, and one just answered
    ask(QUESTION, session="deploy", timeoutSeconds=300)
    done = ask(QUESTION, session="done")
    services.skip_all(Prompt.objects.get(pk=done), by=None, surface="web")
    page = person(color_scheme=scheme).context.new_page()
    page.goto("/inbox/")
    page.wait_for_selector(f"#answered-{done}")
    page.keyboard.press("j")  # a focused card is drawn differently
    page.wait_for_selector(".inbox-card:focus")
    return page


def plain_page(path: str):
    def opened(person, ask, scheme):
        page = person(color_scheme=scheme).context.new_page()
        page.goto(path)
        page.wait_for_load_state("networkidle")
        return page

    opened.__name__ = path
    return opened


def login_page(person, ask, scheme):
    page = person(color_scheme=scheme).context
    page.clear_cookies()  # logged out
    page = page.new_page()
    page.goto("/login/")
    return page


VIEWS = [
    sessions_list,
    panel_expanded,
    panel_collapsed,
    multi_select,
    phone_card,
    prompt_page,
    inbox,
    plain_page("/settings/"),
    plain_page("/settings/chat/"),
    login_page,
    plain_page("/no-such-page/"),
]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("view", VIEWS, ids=[view.__name__ for view in VIEWS])
def test_axe_finds_nothing_serious(person, agent_api, view, scheme):
    page = view(person, agent_api.ask, scheme)
    assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") is (scheme == "dark")

    found = violations(page)

    assert found == [], f"{page.url} ({scheme}):\n" + "\n".join(found)


# --- the panel for the keyboard and a screen reader ------------------------------------------------


def active(page) -> dict:
    return page.evaluate(
        """() => { const e = document.activeElement;
        return {id: e.id, tag: e.tagName, inPanel: !!e.closest('#prompt-panel'),
                label: e.closest('label')?.innerText ?? ''}; }"""
    )


def test_a_new_prompt_is_announced_politely(person, agent_api):
    page = person().open()
    region = page.locator("[aria-live=polite][data-announcer]")
    assert region.count() == 1 and region.inner_text() == ""

    agent_api.ask(QUESTION)
    panel_open(page)

    page.wait_for_function("() => document.querySelector('[data-announcer]').textContent.trim() !== ''")
    assert region.inner_text() == "New question from helper: Deploy"
    assert page.locator("#prompt-panel").evaluate("e => e.closest('[aria-live]')") is None  # said once, not re-read


def test_the_options_are_a_named_radiogroup_then_a_named_group_of_checkboxes(person, agent_api):
    page = person().open()
    agent_api.ask(QUESTION, EXTRAS)
    panel = panel_open(page)

    single = panel.get_by_role("radiogroup", name=QUESTION["question"])
    assert single.get_by_role("radio").count() == len(QUESTION["options"])
    assert single.get_by_role("radio", name="Production").is_visible()
    page.keyboard.press("2")
    page.wait_for_selector(".step.is-current[data-step='2']", timeout=WAIT_MS)

    several = panel.get_by_role("group", name=EXTRAS["question"])
    assert several.get_by_role("checkbox").count() == len(EXTRAS["options"])
    several.get_by_role("checkbox", name="Docs").check()
    assert several.get_by_role("checkbox", name="Docs").is_checked()
    assert panel.get_by_role("textbox", name="Other").count() == 1


def test_focus_moves_into_the_panel_when_it_opens_and_to_the_composer_when_it_is_answered(person, agent_api):
    page = person().open()
    prompt_id = agent_api.ask(QUESTION)
    waiting = agent_api.wait(prompt_id)
    panel_open(page)

    page.wait_for_function("() => !!document.activeElement.closest('#prompt-panel')", timeout=WAIT_MS)
    assert active(page)["tag"] == "INPUT" and "Staging" in active(page)["label"]  # the first option
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")  # the keyboard alone answers

    assert waiting.result(timeout=15)["answers"]["answers"] == {"deploy_target": ["Production"]}
    panel_closed(page)
    page.wait_for_function("() => document.activeElement.id === 'composer-text'", timeout=WAIT_MS)


def test_the_standard_keys_alone_answer_a_multi_select_question(person, agent_api):
    page = person().open()
    prompt_id = agent_api.ask(EXTRAS)
    waiting = agent_api.wait(prompt_id)
    panel_open(page)
    page.wait_for_function("() => !!document.activeElement.closest('#prompt-panel')", timeout=WAIT_MS)

    page.keyboard.press("Space")  # the focused first checkbox
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    page.keyboard.press("Space")  # the third
    page.keyboard.press("Enter")

    assert waiting.result(timeout=15)["answers"]["answers"] == {"extras": ["Docs", "Blog post"]}
    panel_closed(page)
    page.wait_for_function("() => document.activeElement.id === 'composer-text'", timeout=WAIT_MS)


def test_focus_returns_to_the_composer_when_the_agent_cancels(person, agent_api):
    page = person().open()
    prompt_id = agent_api.ask(QUESTION)
    panel_open(page)
    page.wait_for_function("() => !!document.activeElement.closest('#prompt-panel')", timeout=WAIT_MS)

    httpx.post(f"{agent_api.server.url}/api/v1/prompts/{prompt_id}/cancel", headers=agent_api.headers)

    panel_closed(page)
    page.wait_for_function("() => document.activeElement.id === 'composer-text'", timeout=WAIT_MS)


def test_collapsing_gives_focus_to_the_composer_and_expanding_takes_it_back(person, agent_api):
    page = person().open()
    agent_api.ask(QUESTION, EXTRAS)
    panel_open(page)
    page.wait_for_function("() => !!document.activeElement.closest('#prompt-panel')", timeout=WAIT_MS)

    page.keyboard.press("Escape")
    assert active(page)["id"] == "composer-text"
    bar = page.get_by_role("button", name="Show the question")
    assert bar.get_attribute("aria-expanded") == "false"
    bar.focus()
    page.keyboard.press("Enter")

    assert active(page)["inPanel"] and active(page)["tag"] == "INPUT"
    assert page.get_by_role("button", name="Hide the question").get_attribute("aria-expanded") == "true"


def test_the_countdown_is_not_announced_every_second(person, agent_api):
    page = person().open()
    agent_api.ask(QUESTION)
    panel_open(page)
    countdown = page.locator("#prompt-panel .countdown")
    shown = countdown.inner_text()
    described = page.locator("#prompt-panel [data-countdown-spoken]").text_content()

    page.wait_for_function(f"() => document.querySelector('#prompt-panel .countdown').innerText !== {shown!r}")

    assert countdown.get_attribute("aria-hidden") == "true"  # the ticking number is not read
    assert countdown.evaluate("e => e.closest('[aria-live], [role=timer], [role=status], [role=log]')") is None
    assert page.locator("#prompt-panel [data-countdown-spoken]").text_content() == described
    assert described.startswith("Time left:") and "minute" in described


# --- motion ------------------------------------------------------------------------------------------------


def chevron_motion(page) -> tuple[str, str]:
    return page.locator("#prompt-panel .chevron").evaluate(
        "e => [getComputedStyle(e).transitionDuration, getComputedStyle(e).animationName]"
    )


def test_motion_stops_when_the_system_asks_for_less(person, agent_api):
    moving, still = person().open(), person(reduced_motion="reduce").open()
    agent_api.ask(QUESTION)
    panel_open(moving)
    panel_open(still)

    assert chevron_motion(moving)[0] != "0s"  # the chevron turns when the panel folds
    assert chevron_motion(still)[0] == "0s"
    everything = still.evaluate(
        """() => [...document.querySelectorAll('*')].filter(e => {
             const style = getComputedStyle(e);
             return style.transitionDuration.split(',').some(d => parseFloat(d) > 0)
               || (style.animationName !== 'none' && parseFloat(style.animationDuration) > 0.001);
           }).map(e => e.className)"""
    )
    assert everything == []
