"""The Control UI in a real browser (Debian's chromium, driven by Playwright)
against a real Daphne process: what only a browser can show.

Screenshots of the expanded panel, the collapsed bar, the summary and the
phone layout are saved in test-artifacts/.
"""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path

import httpx
from django.utils import timezone
from playwright.sync_api import expect

from askuser_app.delivery.channels.telegram.adapter import SECRET_HEADER
from askuser_app.domain import contract, services
from askuser_app.models import Prompt
from tests.browsers import MARKS, WAIT_MS, Agent, Human, answer_held, panel_closed, panel_open, shot
from tests.chatfake import SECRET, TOKEN, FakeTelegram, tap_update, text_update
from tests.conftest import EXTRAS, PASSWORD, QUESTION, payload
from tests.servers import DaphneServer

pytestmark = MARKS


def test_a_prompt_arrives_live_is_answered_with_the_mouse_and_the_agent_gets_the_result(human, agent_api):
    page = human.open()

    prompt_id = agent_api.ask(QUESTION, EXTRAS)
    waiting = agent_api.wait(prompt_id)

    panel = panel_open(page)
    assert page.title().startswith("(1) ")
    shot(page, "panel-expanded")
    panel.get_by_text("Production").click()
    page.wait_for_selector(".step.is-current[data-step='2']", timeout=WAIT_MS)
    panel.get_by_text("Docs").click()
    panel.get_by_text("Blog post").click()
    panel.locator("[data-action=submit]").click()

    result = waiting.result(timeout=15)
    assert {k: result[k] for k in ("status", "answers")} == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"], "extras": ["Docs", "Blog post"]}},
    }
    panel_closed(page)
    summary = page.locator(f"#item-prompt-{prompt_id}")
    assert "Production" in summary.inner_text() and "Docs, Blog post" in summary.inner_text()
    shot(page, "summary")


def test_keyboard_only(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask(QUESTION, EXTRAS)
    waiting = agent_api.wait(prompt_id)
    panel = panel_open(page)

    page.wait_for_function("() => document.activeElement && document.activeElement.closest('#prompt-panel') !== null")
    page.keyboard.press("2")  # a single-select choice moves on by itself
    page.wait_for_selector(".step.is-current[data-step='2']", timeout=WAIT_MS)
    page.keyboard.press("1")
    page.keyboard.press("3")
    assert panel.locator(".step.is-current input[aria-checked='true']").count() == 2
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")

    result = waiting.result(timeout=15)
    assert result["answers"]["answers"] == {"deploy_target": ["Production"], "extras": ["Docs", "Blog post"]}


def test_clicking_the_option_of_a_single_single_select_question_answers_it_at_once(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask()
    waiting = agent_api.wait(prompt_id)

    panel_open(page).get_by_text("Production").click()

    result = waiting.result(timeout=15)
    assert (result["status"], result["answers"]["answers"]) == ("answered", {"deploy_target": ["Production"]})
    panel_closed(page)


def test_pressing_its_number_answers_a_single_single_select_question_at_once(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask()
    waiting = agent_api.wait(prompt_id)
    panel_open(page)

    page.keyboard.press("1")

    result = waiting.result(timeout=15)
    assert (result["status"], result["answers"]["answers"]) == (
        "answered",
        {"deploy_target": ["Staging (Recommended)"]},
    )


def test_choosing_in_a_multi_select_question_waits_for_submit(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask(EXTRAS)
    waiting = agent_api.wait(prompt_id)
    panel = panel_open(page)

    panel.get_by_text("Docs").click()
    panel.get_by_text("Changelog").click()
    assert panel.locator("input:checked").count() == 2 and Prompt.objects.get(pk=prompt_id).is_pending
    panel.locator("[data-action=submit]").click()

    assert waiting.result(timeout=15)["answers"]["answers"] == {"extras": ["Docs", "Changelog"]}


def test_multi_select_with_other(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask(EXTRAS)
    waiting = agent_api.wait(prompt_id)
    panel_open(page)

    page.keyboard.press("2")
    page.keyboard.press("4")  # the number after the options focuses Other
    page.keyboard.type("Release video")
    page.keyboard.press("Enter")

    result = waiting.result(timeout=15)
    assert result["answers"]["answers"] == {"extras": ["Changelog", "Release video"]}
    assert result["details"]["extras"]["free_text"] == "Release video"
    panel_closed(page)
    assert "Release video" in page.locator(f"#item-prompt-{prompt_id}").inner_text()


def test_typing_other_clears_a_single_select_choice(human, agent_api):
    page = human.open()
    agent_api.ask()
    panel = panel_open(page)

    page.wait_for_function("() => document.activeElement && document.activeElement.closest('#prompt-panel') !== null")
    page.keyboard.press("ArrowDown")  # arrows move the choice without answering
    assert panel.locator("input[type=radio]:checked").count() == 1
    panel.locator(".other-input").fill("Canary first")

    assert panel.locator("input[type=radio]:checked").count() == 0


def test_collapsing_keeps_the_composer_draft_and_survives_a_reload(human, agent_api):
    page = human.open()
    agent_api.ask()
    panel = panel_open(page)
    composer = page.locator("#composer-text")
    assert not composer.is_visible()  # expanded, the panel takes the composer's place

    page.keyboard.press("Escape")
    assert "is-collapsed" in panel.get_attribute("class")
    composer.fill("a draft I am still writing")
    shot(page, "panel-collapsed")
    page.locator(".panel-bar").click()
    page.wait_for_function("() => document.activeElement.closest('#prompt-panel') !== null")
    assert not composer.is_visible()
    page.locator(".panel-bar").click()
    assert composer.input_value() == "a draft I am still writing"

    page.reload()
    panel = panel_open(page)
    assert "is-collapsed" in panel.get_attribute("class")
    assert page.locator(".panel-bar").get_attribute("aria-expanded") == "false"


def test_answering_in_one_tab_closes_the_panel_in_the_other(human, agent_api):
    first, second = human.open(), human.open()
    prompt_id = agent_api.ask()
    panel_open(first)
    panel_open(second)

    first.locator("#prompt-panel").get_by_text("Production").click()  # one question: the click answers it

    panel_closed(second)
    assert "Answered on the web by alice" in second.locator(f"#item-prompt-{prompt_id}").inner_text()


NEXT = {
    "id": "announce",
    "header": "Announce",
    "question": "Tell the team it shipped?",
    "options": [{"label": "Post it now"}, {"label": "Not yet"}],
}


def test_the_answer_arriving_after_the_next_prompt_leaves_the_next_prompt_open_and_answerable(human, agent_api):
    """An agent asks again the moment its prompt is answered (a coding agent's next permission,
    milliseconds later): that prompt's push can reach the page before the answer's own response,
    which must close only the prompt it answered."""
    page = human.open()
    first = agent_api.ask()
    panel = panel_open(page)
    held = answer_held(page, first)
    # The response's last piece is the page's notice line (its form left the page with the panel it was in).
    settled = "(event) => { if (event.detail.target.id === 'notice') window.answerSettled = true; }"
    page.evaluate(f"() => document.addEventListener('htmx:oobAfterSwap', {settled})")
    panel.get_by_text("Production").click()  # one question: the click answers it
    page.wait_for_function("() => window.answerHeld === true", timeout=WAIT_MS)

    second = agent_api.ask(NEXT)
    waiting = agent_api.wait(second)
    expect(panel).to_have_attribute("data-prompt-id", second, timeout=WAIT_MS)
    route, response = held[0]
    route.fulfill(response=response)
    page.wait_for_function("() => window.answerSettled === true", timeout=WAIT_MS)

    expect(panel).to_be_visible()
    expect(panel).to_have_attribute("data-prompt-id", second)
    assert "Production" in page.locator(f"#item-prompt-{first}").inner_text()
    if "is-collapsed" in (panel.get_attribute("class") or ""):  # it came while the composer had the focus
        panel.locator(".panel-bar").click()
    panel.get_by_text("Not yet").click()
    assert waiting.result(timeout=15)["answers"] == {"answers": {"announce": ["Not yet"]}}
    panel_closed(page)


AT_END = "() => { const s = scroller; return s.scrollHeight - s.scrollTop - s.clientHeight < 2 }"
# Resolves after two frames: a scroll the page makes at the next frame has been made.
TWO_FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


def test_the_timeline_follows_new_items_unless_the_person_scrolled_up_to_read(human, agent_api):
    page = human.open()
    page.set_viewport_size({"width": 1280, "height": 420})

    def agent_says(text: str) -> None:
        url = f"{agent_api.server.url}/api/v1/sessions/support-42/messages"
        assert httpx.post(url, json={"text": text}, headers=agent_api.headers).status_code == 201
        page.wait_for_selector(f"#timeline-items :text('{text}')", timeout=WAIT_MS)

    for n in range(12):
        agent_says(f"Step {n} of the release is done, and here is what it changed in some detail.")
    page.wait_for_function(AT_END, timeout=WAIT_MS)  # at the end, it followed every one

    page.evaluate("() => { document.getElementById('scroller').scrollTop = 0; }")
    page.evaluate(TWO_FRAMES)
    agent_says("One more thing arrived while you were reading.")
    page.evaluate(TWO_FRAMES)

    assert page.evaluate("() => document.getElementById('scroller').scrollTop") == 0  # the reader keeps their place


def test_a_cancel_by_the_agent_closes_the_panel(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask()
    panel_open(page)

    httpx.post(f"{agent_api.server.url}/api/v1/prompts/{prompt_id}/cancel", headers=agent_api.headers)

    panel_closed(page)
    assert "Cancelled by the agent" in page.locator(f"#item-prompt-{prompt_id}").inner_text()


def test_the_deadline_closes_the_panel(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask()
    panel_open(page)

    Prompt.objects.filter(pk=prompt_id).update(expires_at=timezone.now() + timedelta(seconds=1))

    page.wait_for_selector("#prompt-panel[hidden]", state="attached", timeout=20_000)
    assert "Expired" in page.locator(f"#item-prompt-{prompt_id}").inner_text()


def test_a_script_in_a_label_is_shown_not_run(human, agent_api):
    page = human.open()
    evil = {
        "id": "pick",
        "header": "<i>x</i>",
        "question": "Which <b>one</b>?",
        "options": [
            {"label": "<img src=x onerror=window.pwned=1>", "description": "<script>window.pwned=2</script>"},
            {"label": "Safe"},
        ],
    }
    agent_api.ask(evil)
    panel = panel_open(page)

    assert panel.get_by_text("<img src=x onerror=window.pwned=1>").is_visible()
    assert page.evaluate("window.pwned === undefined")
    assert panel.locator("img").count() == 0 and panel.locator("b").count() == 0


def test_the_phone_layout_shows_an_inline_card_with_every_question(chromium, server, owner, agent, agent_api):
    services.post_agent_message(agent, "support-42", "Quick question from your agent.")
    person = Human(chromium, server, owner, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = person.open()
    agent_api.ask(QUESTION, EXTRAS)
    panel = panel_open(page)

    assert panel.evaluate("e => getComputedStyle(e).position") == "static"
    assert panel.locator(".step").nth(0).is_visible() and panel.locator(".step").nth(1).is_visible()
    assert page.locator("#composer-text").is_visible()
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    heights = panel.locator(".option").evaluate_all("els => els.map(e => e.getBoundingClientRect().height)")
    assert min(heights) >= 44  # touch-sized
    panel.scroll_into_view_if_needed()
    shot(page, "phone-inline-card")
    person.context.close()
    assert person.errors == []


def test_on_a_phone_tapping_the_option_of_a_single_question_answers_it(chromium, server, owner, agent, agent_api):
    services.post_agent_message(agent, "support-42", "Quick question from your agent.")
    person = Human(chromium, server, owner, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = person.open()
    prompt_id = agent_api.ask()
    waiting = agent_api.wait(prompt_id)

    panel_open(page).get_by_text("Production").tap()

    assert waiting.result(timeout=15)["answers"]["answers"] == {"deploy_target": ["Production"]}
    panel_closed(page)
    person.context.close()
    assert person.errors == []


def test_a_plain_text_reply_answers_the_prompt(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask(QUESTION, EXTRAS)
    waiting = agent_api.wait(prompt_id)
    panel_open(page)
    page.keyboard.press("Escape")

    page.locator("#composer-text").fill("1: 2\nextras: docs, changelog")
    page.keyboard.press("Enter")

    result = waiting.result(timeout=15)
    assert (result["status"], result["surface"]) == ("answered", "text")
    assert result["answers"]["answers"] == {"deploy_target": ["Production"], "extras": ["Docs", "Changelog"]}
    panel_closed(page)
    expect(page.locator("#composer-text")).to_have_value("")  # once the reply's own response is back
    assert "Read from your reply" in page.locator(f"#item-prompt-{prompt_id}").inner_text()


def test_logging_in_through_the_form(chromium, server, owner):
    context = chromium.new_context(base_url=server.url)
    page = context.new_page()

    page.goto("/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")

    page.wait_for_selector("h1:has-text('Sessions')", timeout=WAIT_MS)
    context.close()


def test_without_javascript_the_panel_is_a_plain_form_that_answers(chromium, server, owner, agent, agent_api):
    services.post_agent_message(agent, "support-42", "Hello")
    prompt_id = agent_api.ask(QUESTION, EXTRAS)
    person = Human(chromium, server, owner, java_script_enabled=False, viewport={"width": 1280, "height": 900})
    page = person.context.new_page()
    page.goto("/s/support-42/")

    panel = page.locator("#prompt-panel")
    assert panel.locator(".step").nth(1).is_visible()  # every question at once
    panel.get_by_text("Production").click()
    panel.get_by_text("Changelog").click()
    panel.locator(".step").nth(1).locator(".other-input").fill("Release video")
    panel.locator("[data-action=submit]").click()

    page.wait_for_url("**/s/support-42/")
    assert page.locator("#prompt-panel[hidden]").count() == 1
    result = Prompt.objects.get(pk=prompt_id).result
    assert result["answers"]["answers"] == {"deploy_target": ["Production"], "extras": ["Changelog", "Release video"]}
    person.context.close()


def test_dark_mode_follows_the_system(chromium, server, owner, agent, agent_api):
    services.post_agent_message(agent, "support-42", "Hello in the dark")
    person = Human(chromium, server, owner, color_scheme="dark", viewport={"width": 1280, "height": 800})
    page = person.open()
    agent_api.ask(QUESTION, EXTRAS)
    panel_open(page)

    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(part) for part in background[background.index("(") + 1 : -1].split(",")[:3])
    assert red + green + blue < 150
    shot(page, "panel-expanded-dark")
    person.context.close()
    assert person.errors == []


def readme_block(containing: str) -> str:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    blocks = readme.split("```sh\n")[1:]
    return next(block.split("```")[0] for block in blocks if containing in block)


def test_the_readme_curl_example_prints_the_answer_given_in_the_browser(human, server, token, tmp_path):
    token_file, url_file = tmp_path / "demo-agent-token", tmp_path / "server-url"
    token_file.write_text(token + "\n")
    url_file.write_text(server.url + "\n")  # as make run PORT=… leaves it
    script = readme_block("ASKUSER_TOKEN=").replace("var/demo-agent-token", str(token_file))
    script = script.replace("var/server-url", str(url_file))
    page = human.open("support-42")
    page.goto("/")  # the README's session is "demo": it appears in the live list
    curl = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    page.locator("#sessions-list a", has_text="demo").click()
    panel_open(page).get_by_text("Staging (Recommended)").click()  # README step 3: a click answers it

    output, _ = curl.communicate(timeout=30)
    result = json.loads(output.strip().splitlines()[-1])
    assert {k: result[k] for k in ("status", "answers")} == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}},
    }


def test_no_page_breaks_the_content_security_policy(chromium, server, staff):
    _, token = services.create_agent("ops", staff)
    Agent(server, token).ask(session="staff-chat")
    person = Human(chromium, server, staff, viewport={"width": 1280, "height": 800})
    violations: list[str] = []
    page = person.context.new_page()
    page.on("console", lambda message: violations.append(message.text) if "Security Policy" in message.text else None)

    for path in ("/", "/s/staff-chat/", "/settings/chat/", "/admin/", "/api/v1/docs", "/login/"):
        page.goto(path)
        page.wait_for_load_state("networkidle")

    assert violations == []
    person.context.close()


# --- the live socket's reconnect -----------------------------------------------------------

# Counts the page's socket openings and closings, from before its scripts run.
SOCKET_EVENTS = """
window.liveOpens = 0; window.liveCloses = 0;
document.addEventListener("htmx:wsOpen", () => window.liveOpens++);
document.addEventListener("htmx:wsClose", () => window.liveCloses++);
"""
RECONNECT_MS = 30_000  # the backoff's bounds add up to 7.5 s over four tries; the restart takes some


def test_reconnect_waits_grow_with_full_jitter_up_to_thirty_seconds(human):
    page = human.open()

    bounds = page.evaluate("[0, 1, 2, 3, 6, 12].map(n => window.askuserLive.reconnectDelay(n, 1))")
    spread = page.evaluate("Array.from({length: 200}, () => window.askuserLive.reconnectDelay(3))")

    assert bounds == [500, 1000, 2000, 4000, 30000, 30000]
    assert all(0 <= wait <= 4000 for wait in spread) and len(set(spread)) > 100  # each page its own time


def test_a_reconnecting_page_asks_only_for_what_it_missed_and_names_the_prompt_it_shows(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask()
    panel_open(page)
    resume = "Object.fromEntries(new URL(window.askuserLive.resumeUrl('ws://h/ws/?since=1000&shown=')).searchParams)"
    before = page.evaluate(resume)

    page.evaluate("document.dispatchEvent(new Event('htmx:wsClose'))")  # the socket drops
    after = page.evaluate(resume)

    assert before == {"since": "1000", "shown": ""}  # the first connect is the page's own
    assert after["shown"] == prompt_id and int(after["since"]) > 1000


def test_after_a_server_restart_the_page_reconnects_and_shows_what_was_asked_meanwhile(
    chromium, start_server, owner, agent
):
    message = services.post_agent_message(agent, "support-42", "Hi! I'm getting release 2.4 ready.")
    type(message).objects.filter(pk=message.pk).update(created_at=timezone.now() - timedelta(hours=1))
    server = start_server()
    person = Human(chromium, server, owner, viewport={"width": 1280, "height": 800})
    page = person.context.new_page()
    page.add_init_script(SOCKET_EVENTS)
    page.goto("/s/support-42/")
    page.wait_for_function("() => window.liveOpens === 1", timeout=WAIT_MS)
    page.evaluate(f"window.sameDocument = true; document.getElementById('item-msg-{message.pk}').dataset.kept = '1'")

    server.kill()
    page.wait_for_function("() => window.liveCloses >= 1", timeout=WAIT_MS)
    # The agent cannot reach a stopped server: the prompt is stored directly.
    prompt = services.ask(agent, contract.parse_create(payload())).prompt
    server.start()

    page.wait_for_selector(f"#prompt-panel[data-prompt-id='{prompt.pk}']:not([hidden])", timeout=RECONNECT_MS)
    assert page.evaluate("window.sameDocument") is True  # no reload
    assert page.evaluate("document.querySelector('[data-kept]') !== null")  # the timeline was not redrawn
    assert person.errors == []
    person.context.close()


# --- a chat app, linked from the Control UI -------------------------------------------------


def test_a_person_links_telegram_on_the_chat_apps_page_and_a_tap_there_closes_the_open_panel(
    chromium,
    server_env,
    owner,
    token,
    fake_api,
):
    telegram = FakeTelegram(fake_api)
    env = {
        **server_env,
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_WEBHOOK_SECRET": SECRET,
        "TELEGRAM_API_URL": fake_api.url,
        "ASKUSER_CHAT_RETRY_BASE": "0.05",
    }
    chat_server = DaphneServer(env).start()
    try:

        def webhook(update: dict) -> None:
            response = httpx.post(
                f"{chat_server.url}/chat/telegram/webhook", json=update, headers={SECRET_HEADER: SECRET}
            )
            assert response.status_code == 200, response.text

        person = Human(chromium, chat_server, owner, viewport={"width": 1280, "height": 800})
        page = person.context.new_page()
        page.goto("/settings/chat/")
        telegram_card = page.locator("#chat-telegram")
        assert "Not linked." in telegram_card.inner_text()
        telegram_card.get_by_role("button", name="Get a link code").click()
        code = page.locator("#chat-telegram .link-code code").inner_text()
        assert f"t.me/askuser_test_bot?start={code}" in page.locator("#chat-telegram .link-code").inner_text()

        webhook(text_update(1, f"/start {code}", user_id=4242, chat=4242))
        page.reload()
        assert "Linked as" in page.locator("#chat-telegram").inner_text()

        prompt_id = Agent(chat_server, token).ask(QUESTION)
        session = person.open("support-42")
        panel_open(session)
        sent = telegram.fake.wait_for(telegram.path("sendMessage"), 1 + 1)  # the link's welcome, then the prompt
        message = sent[-1]
        buttons = [b for row in message.field("reply_markup")["inline_keyboard"] for b in row]
        production = next(b for b in buttons if b["text"] == "Production")

        webhook(tap_update(2, 777, production["callback_data"], user_id=4242, chat=4242))
        panel_closed(session)
        assert "on Telegram" in session.locator("#timeline-items").inner_text()
        assert Prompt.objects.get(pk=prompt_id).result["answers"]["answers"] == {"deploy_target": ["Production"]}
        person.context.close()
        assert person.errors == []
    finally:
        chat_server.stop()
