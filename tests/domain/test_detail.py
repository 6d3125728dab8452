"""A question's ``detail`` (SPEC 3.1): validated like other fields, stored, and shown verbatim and
escaped on every surface, so a command that is markup stays text."""

from __future__ import annotations

import copy

import pytest
from django.test import Client

from askuser_app.delivery.channels.chats import core
from askuser_app.delivery.channels.discord import adapter as discord
from askuser_app.delivery.channels.email import mails
from askuser_app.delivery.channels.push import adapter as push
from askuser_app.delivery.channels.slack import adapter as slack
from askuser_app.delivery.channels.telegram import adapter as telegram
from askuser_app.domain import contract, services, textreply
from askuser_app.models import Prompt
from tests.conftest import QUESTION, AgentClient, payload

PAYLOAD = "<script>alert(1)</script> </code> ```x``` <!channel> @everyone <b>bold</b> &amp;"


def with_detail(detail: object) -> dict:
    question = copy.deepcopy(QUESTION)
    question["detail"] = detail
    return payload(question)


@pytest.fixture
def asked(agent) -> Prompt:
    return services.ask(agent, contract.parse_create(with_detail(PAYLOAD))).prompt


@pytest.mark.parametrize(
    ("detail", "message"),
    [
        ("x" * 4001, "must be at most 4000 characters"),
        ("rm -rf \u202ebuild", "must not contain invisible or text-direction characters (found U+202E)"),
        ("echo \x1b[31m", "must not contain control characters (found U+001B)"),
        (42, "must be a string"),
    ],
)
def test_a_bad_detail_is_refused_naming_its_path(api: AgentClient, detail, message):
    response = api.ask(with_detail(detail))

    assert response.status_code == 422
    [error] = response.json()["errors"]
    assert error["path"] == "questions[0].detail" and error["message"].startswith(message)
    assert not Prompt.objects.exists()


def test_a_detail_is_stored_verbatim_with_new_lines_and_tabs(api: AgentClient):
    shown = "  diff --git a/x b/x\n\t-old\n\t+new"
    response = api.ask(with_detail(f"\n{shown}\n\n"))

    assert response.status_code == 201, response.content
    assert Prompt.objects.get().questions.get().detail == shown


def test_the_tool_definition_and_openapi_describe_detail(api: AgentClient):
    tool = api.get("/tool").json()
    schema = api.get("/openapi.json").json()["components"]["schemas"]["QuestionIn"]

    assert "detail" in tool["input_schema"]["$defs"]["QuestionIn"]["properties"]
    assert "`detail`" in tool["description"]
    assert "verbatim" in schema["properties"]["detail"]["description"]


def test_the_panel_shows_the_detail_escaped_in_a_monospace_block(asked, owner):
    browser = Client()
    browser.force_login(owner)

    page = browser.get("/s/support-42/").content.decode()

    assert '<pre class="detail"' in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &lt;/code&gt;" in page
    assert "<script>alert(1)" not in page and "<b>bold</b>" not in page
    assert "&amp;amp;" in page


def test_the_text_rendering_shows_the_detail_under_the_question(asked):
    questions = [textreply.TextQuestion.of(q) for q in services.questions_of(asked)]

    rendered = textreply.render_prompt(questions)

    assert rendered.startswith(f"Deploy: Where should this release go first?\n\n{PAYLOAD}\n\n  1. Staging")


def test_chat_cards_carry_the_detail_as_text_their_platform_does_not_read_as_markup(asked):
    card = core.card(asked)
    assert card.text.startswith(f"Where should this release go first?\n\n{PAYLOAD}\n\n• Staging")

    assert PAYLOAD in telegram.message_text(card)  # sent without a parse mode: plain text
    sections = str(slack.card_blocks(card))
    assert "&lt;!channel&gt;" in sections and "<!channel>" not in sections
    sent = discord.message(card)
    # In a code block whose backticks cannot close it early; nobody is mentioned whatever it says.
    block = sent["content"].split("```\n", 2)[1]
    assert "<!channel> @everyone" in block and "```" not in block.replace("`\u200b", "")
    assert sent["allowed_mentions"] == {"parse": []}


def test_the_email_shows_the_detail_in_text_and_escaped_in_html(asked, owner, settings):
    settings.ASKUSER_EMAIL_SMTP = True
    owner.email = "alice@example.com"
    owner.save(update_fields=["email"])

    mail = mails.compose(asked.pk, "alice@example.com")

    assert mail is not None
    assert PAYLOAD in str(mail.message.body)
    [(html, _mime)] = mail.message.alternatives
    assert "<pre" in str(html) and "&lt;script&gt;alert(1)&lt;/script&gt;" in str(html)
    assert "<script>alert(1)" not in str(html)


def test_the_push_body_shows_the_detail_cut_short(agent):
    prompt = services.ask(agent, contract.parse_create(with_detail("echo " + "y" * 500))).prompt

    body = push.message_of(core.card(prompt))["body"]

    assert body.startswith("Where should this release go first?\necho yyy")
    assert body.endswith("…") and len(body) < 200


def test_the_admin_shows_the_detail_escaped(asked, staff):
    browser = Client()
    browser.force_login(staff)

    page = browser.get(f"/admin/askuser_app/prompt/{asked.pk}/change/").content.decode()

    assert '<pre class="askuser-detail"><code>&lt;script&gt;alert(1)&lt;/script&gt;' in page
    assert "<script>alert(1)" not in page
