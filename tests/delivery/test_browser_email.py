"""A mail's one-tap link in a real browser (chromium) against a real Daphne process and a
real SMTP server (aiosmtpd): the link opens a confirm page without a login, the button
answers, and the panel open in the person's other page closes; the settings page saves a
delay in place."""

from __future__ import annotations

import re

import pytest

from askuser_app.domain import services
from askuser_app.models import Preferences, Prompt
from tests.browsers import MARKS, WAIT_MS, Agent, Human, panel_closed, panel_open
from tests.conftest import QUESTION
from tests.mailfake import parts
from tests.servers import DaphneServer

pytestmark = MARKS


@pytest.fixture
def mail_server(server_env, smtp_server):
    env = {
        **server_env,
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(smtp_server.port),
        "ASKUSER_CHAT_RETRY_BASE": "0.05",
    }
    env.pop("EMAIL_USE_TLS", None)
    env.pop("EMAIL_USE_SSL", None)
    daphne = DaphneServer(env)
    daphne.env["ASKUSER_PUBLIC_URL"] = daphne.url  # the mail's links lead back to this server
    daphne.start()
    yield daphne
    daphne.stop()


def test_a_one_tap_link_from_the_mail_confirms_the_answer_and_the_open_panel_closes(
    chromium,
    mail_server,
    smtp_server,
    owner,
    agent,
    token,
):
    owner.email = "alice@example.com"
    owner.save()
    # A second's wait: the settings page offers whole minutes, the model holds any number of seconds.
    Preferences.objects.create(user=owner, email_after=1)
    services.post_agent_message(agent, "support-42", "Hi! I'm getting release 2.4 ready.")
    person = Human(chromium, mail_server, owner, viewport={"width": 1280, "height": 800})
    session = person.open("support-42")
    agents = Agent(mail_server, token)
    prompt_id = agents.ask(QUESTION)
    waiting = agents.wait(prompt_id)
    panel_open(session)

    [mail] = smtp_server.wait_for(1)
    plain, _html = parts(mail)
    production = re.search(r"• Production\s+\S.*?(http://\S+/chat/email/\S+/)", plain)
    assert production is not None, plain

    # Another browser, logged in nowhere: the signed link is the credential.
    stranger = chromium.new_context(base_url=mail_server.url)
    errors: list[str] = []
    confirm = stranger.new_page()
    confirm.on("pageerror", lambda error: errors.append(str(error)))
    confirm.on("console", lambda message: errors.append(message.text) if "Security Policy" in message.text else None)
    confirm.goto(production.group(1))
    assert "Your choice: Production" in confirm.locator(".email-page").inner_text()
    assert Prompt.objects.get(pk=prompt_id).is_pending  # opening the link answered nothing

    confirm.get_by_role("button", name="Answer “Production”").click()

    confirm.get_by_text("Answered: Production — by alice by email").wait_for(timeout=WAIT_MS)
    panel_closed(session)
    assert "by email" in session.locator(f"#item-prompt-{prompt_id}").inner_text()
    result = waiting.result(timeout=30)
    assert (result["status"], result["surface"], result["resolved_by"]) == ("answered", "email", "alice")
    assert result["answers"] == {"answers": {"deploy_target": ["Production"]}}
    stranger.close()

    settings_page = person.context.new_page()
    settings_page.on(
        "console", lambda message: errors.append(message.text) if "Security Policy" in message.text else None
    )
    settings_page.goto("/settings/")
    section = settings_page.locator("#settings-email")
    assert "alice@example.com" in section.inner_text()
    section.get_by_label("Email me about a question left unanswered").select_option("300")
    section.get_by_role("button", name="Save").click()
    section.get_by_text("Saved.", exact=True).wait_for(timeout=WAIT_MS)  # swapped in place, no reload
    assert Preferences.objects.get(user=owner).email_after == 300
    person.context.close()
    assert errors == [] and person.errors == []
