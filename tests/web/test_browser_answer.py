"""The panel closes the moment its answer is sent (static/askuser/app.js), and what the person then
sees: the answer on its way until its response says it was recorded; and, when it was not (the
server refused it, or it never got an answer through), the panel back with why, answerable again."""

from __future__ import annotations

from playwright.sync_api import expect

from askuser_app.models import Answer, Prompt
from tests.browsers import MARKS, WAIT_MS, answer_held, panel_open

pytestmark = MARKS

SENDING = "Sending your answer…"
UNCONFIRMED = "Your answer could not be confirmed, so it may not have been recorded."


def still_pending(prompt_id: str) -> bool:
    return Prompt.objects.get(pk=prompt_id).is_pending and not Answer.objects.filter(question__prompt_id=prompt_id)


def test_the_panel_closes_as_the_answer_leaves_and_the_page_says_so_until_its_response(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask()
    waiting = agent_api.wait(prompt_id)
    panel = panel_open(page)
    held = answer_held(page, prompt_id)

    panel.get_by_text("Production").click()  # one question: the click answers it

    expect(panel).to_be_hidden(timeout=WAIT_MS)
    expect(page.locator("#notice")).to_have_text(SENDING)
    assert waiting.result(timeout=15)["answers"] == {"answers": {"deploy_target": ["Production"]}}
    page.wait_for_function("() => window.answerHeld === true", timeout=WAIT_MS)
    expect(page.locator("#notice")).to_have_text(SENDING)
    route, response = held[0]
    route.fulfill(response=response)

    expect(page.locator("#notice")).to_have_text("", timeout=WAIT_MS)
    expect(page.locator(f"#item-prompt-{prompt_id}")).to_contain_text("Production")
    expect(page.locator("#prompt-panel")).to_be_hidden()


def test_an_answer_the_server_refuses_brings_the_panel_back_with_why(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask()
    waiting = agent_api.wait(prompt_id)
    panel = panel_open(page)

    def unreadable(route) -> None:  # an option the question does not have: refused, nothing recorded
        route.continue_(post_data=route.request.post_data.replace("q-deploy_target=1", "q-deploy_target=7"))

    page.route(f"**/prompts/{prompt_id}/answer", unreadable)
    panel.get_by_text("Production").click()

    expect(panel).to_be_visible(timeout=WAIT_MS)
    expect(panel.locator("#panel-error")).to_contain_text("is not one of its options")
    expect(page.locator("#notice")).to_have_text("")
    page.wait_for_function("() => document.getElementById('prompt-panel').contains(document.activeElement)")
    assert still_pending(prompt_id)

    page.unroute(f"**/prompts/{prompt_id}/answer")
    panel.get_by_text("Staging (Recommended)").click()
    assert waiting.result(timeout=15)["answers"] == {"answers": {"deploy_target": ["Staging (Recommended)"]}}
    expect(page.locator(f"#item-prompt-{prompt_id}")).to_contain_text("Staging", timeout=WAIT_MS)


def test_an_answer_that_gets_no_response_brings_the_panel_back_unconfirmed(human, agent_api):
    page = human.open()
    prompt_id = agent_api.ask()
    waiting = agent_api.wait(prompt_id)
    panel = panel_open(page)
    page.route(f"**/prompts/{prompt_id}/answer", lambda route: route.abort("connectionfailed"))

    panel.get_by_text("Production").click()

    expect(panel).to_be_visible(timeout=WAIT_MS)
    expect(panel.locator("#panel-error")).to_contain_text(UNCONFIRMED)
    expect(page.locator("#notice")).to_have_text("")
    assert still_pending(prompt_id)

    page.unroute(f"**/prompts/{prompt_id}/answer")
    panel.get_by_text("Staging (Recommended)").click()
    assert waiting.result(timeout=15)["answers"] == {"answers": {"deploy_target": ["Staging (Recommended)"]}}
    expect(page.locator("#prompt-panel")).to_be_hidden(timeout=WAIT_MS)
    assert Answer.objects.filter(question__prompt_id=prompt_id).count() == 1
