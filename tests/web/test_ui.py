"""The Control UI over HTTP: pages, the panel's form, the composer, and the agent's chat API."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from askuser_app.domain import contract, services
from askuser_app.models import Message, Preferences, Prompt
from tests.conftest import EXTRAS, QUESTION, AgentClient, payload


@pytest.fixture
def browser(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def ask(agent, *questions, **fields) -> Prompt:
    return services.ask(agent, contract.parse_create(payload(*questions, **fields))).prompt


def page(browser, key="support-42") -> str:
    response = browser.get(f"/s/{key}/")
    assert response.status_code == 200
    return response.content.decode()


# --- access ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/s/support-42/"])
def test_pages_need_a_login(client, path):
    response = client.get(path)

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_login_page_logs_in(client, owner):
    from tests.conftest import PASSWORD

    response = client.post("/login/", {"username": "alice", "password": PASSWORD})

    assert response.status_code == 302
    assert client.get("/").status_code == 200


def test_another_users_session_does_not_exist(agent, other_user):
    prompt = ask(agent)
    intruder = Client()
    intruder.force_login(other_user)

    assert intruder.get("/s/support-42/").status_code == 404
    response = intruder.post(f"/s/support-42/prompts/{prompt.pk}/answer", {"q-deploy_target": "1"})
    assert response.status_code == 404
    assert intruder.post("/s/support-42/messages", {"text": "2"}).status_code == 404
    assert Prompt.objects.get(pk=prompt.pk).is_pending


def test_forms_need_the_csrf_token(agent, owner):
    prompt = ask(agent)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)

    assert strict.post(f"/s/support-42/prompts/{prompt.pk}/answer", {"q-deploy_target": "1"}).status_code == 403
    assert strict.post("/s/support-42/messages", {"text": "hello"}).status_code == 403
    assert Prompt.objects.get(pk=prompt.pk).is_pending and not Message.objects.exists()


# --- the sessions list ------------------------------------------------------------------------


def test_the_sessions_list_shows_pending_prompts_first(agent, other_token, browser):
    services.post_agent_message(agent, "older-chat", "Hello")
    ask(agent, session="needs-you", run_id="r1")
    AgentClient(other_token).ask(payload(session="not-yours"))

    html = browser.get("/").content.decode()

    assert html.index("needs-you") < html.index("older-chat")
    assert "not-yours" not in html
    assert "with helper" in html and ">Deploy<" in html and "left" in html


# --- the panel ---------------------------------------------------------------------------------


def test_the_session_page_shows_the_pending_prompt_as_a_form(agent, browser):
    ask(agent, QUESTION, EXTRAS)

    html = page(browser)

    assert 'id="prompt-panel"' in html and "Where should this release go first?" in html
    assert 'role="radiogroup"' in html and 'role="group"' in html
    assert html.count('type="radio"') == 2 and html.count('type="checkbox"') == 3
    assert "is-recommended" in html and "Safe, reversible" in html
    assert html.count("Type your own answer") == 2
    assert "Skip all" in html and 'aria-checked="false"' in html
    assert "Time left: " in html  # the countdown, said in minutes for a screen reader


def test_without_a_pending_prompt_the_panel_is_hidden(agent, browser):
    services.post_agent_message(agent, "support-42", "Working on it")

    html = page(browser)

    assert '<section id="prompt-panel" class="panel" hidden' in html
    assert "Working on it" in html
    # So that its socket sends only what is new, and no panel over the one it shows.
    assert 'ws-connect="/ws/sessions/support-42/?since=' in html and "&amp;shown=" in html


def test_the_plain_form_answers_every_question(agent, owner, browser):
    prompt = ask(agent, QUESTION, EXTRAS)

    response = browser.post(
        f"/s/support-42/prompts/{prompt.pk}/answer",
        {"q-deploy_target": "1", "q-extras": ["0", "2"], "q-extras-other": "Release video", "action": "answer"},
    )

    assert response.status_code == 302 and response["Location"] == "/s/support-42/"
    prompt.refresh_from_db()
    assert prompt.result["answers"]["answers"] == {
        "deploy_target": ["Production"],
        "extras": ["Docs", "Blog post", "Release video"],
    }
    assert (prompt.surface, prompt.resolved_by) == ("web", owner)
    html = page(browser)
    assert "Answered on the web by alice" in html and "Release video" in html
    assert '<section id="prompt-panel" class="panel" hidden' in html


def test_a_blank_question_is_skipped(agent, browser):
    prompt = ask(agent, QUESTION, EXTRAS)

    browser.post(f"/s/support-42/prompts/{prompt.pk}/answer", {"q-deploy_target": "0", "action": "answer"})

    prompt.refresh_from_db()
    assert prompt.result["skipped"] == ["extras"]
    assert "Skipped" in page(browser)


def test_skip_all_resolves_as_no_answer(agent, browser):
    prompt = ask(agent, QUESTION, EXTRAS)

    browser.post(f"/s/support-42/prompts/{prompt.pk}/answer", {"q-deploy_target": "0", "action": "skip_all"})

    prompt.refresh_from_db()
    assert (prompt.status, prompt.reason) == ("no_answer", "skipped")


def test_an_htmx_answer_returns_the_closed_panel_and_the_summary(agent, browser):
    prompt = ask(agent)

    response = browser.post(
        f"/s/support-42/prompts/{prompt.pk}/answer",
        {"q-deploy_target": "0", "action": "answer"},
        headers={"HX-Request": "true"},
    )

    html = response.content.decode()
    assert response.status_code == 200
    # It closes the panel of this prompt only (a newer one pushed meanwhile stays open: app.js).
    assert f'<section id="prompt-panel" class="panel" hidden data-closes="{prompt.pk}" hx-swap-oob="true">' in html
    assert f'id="item-prompt-{prompt.pk}"' in html and 'hx-swap-oob="beforeend:#timeline-items"' in html
    assert "Staging (Recommended)" in html


def test_an_answer_reads_nothing_twice(agent, browser, django_capture_on_commit_callbacks):
    prompt = ask(agent)

    with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks(execute=True):
        response = browser.post(
            f"/s/support-42/prompts/{prompt.pk}/answer", {"q-deploy_target": "0"}, headers={"HX-Request": "true"}
        )

    assert response.status_code == 200
    reads = [q["sql"].split(" FROM ")[1].split()[0] for q in queries if q["sql"].startswith("SELECT")]
    # The prompt with its session (the announcement reuses it); the closed panel reads nothing.
    assert reads.count('"askuser_app_prompt"') == 1 and '"askuser_app_session"' not in reads
    # The form's reading of the questions serves the answer, and the summary is the prompt in hand.
    assert reads.count('"askuser_app_question"') == 1 and reads.count('"askuser_app_option"') == 1


@pytest.mark.parametrize(
    "form,words",
    [
        ({"q-deploy_target": "7"}, "is not one of its options"),
        ({"q-deploy_target": "²"}, "is not one of its options"),  # str.isdigit() says yes, int() no
        ({"q-deploy_target": "١"}, "is not one of its options"),  # an Arabic-Indic 1 is not an option number
        ({"q-deploy_target": "9" * 5000}, "is not one of its options"),
        ({"q-deploy_target": "0", "q-deploy_target-other": "my own"}, "choose one option or type one answer"),
    ],
)
def test_a_form_that_cannot_be_read_changes_nothing(agent, browser, form, words):
    prompt = ask(agent)

    response = browser.post(f"/s/support-42/prompts/{prompt.pk}/answer", {**form, "action": "answer"})
    htmx = browser.post(
        f"/s/support-42/prompts/{prompt.pk}/answer", {**form, "action": "answer"}, headers={"HX-Request": "true"}
    )

    assert response.status_code == 422 and words in response.content.decode()
    assert htmx.status_code == 422 and 'id="panel-error"' in htmx.content.decode()
    assert Prompt.objects.get(pk=prompt.pk).is_pending


def test_answering_a_prompt_resolved_elsewhere_says_so(agent, browser):
    prompt = ask(agent)
    services.cancel(prompt, agent=agent)

    response = browser.post(f"/s/support-42/prompts/{prompt.pk}/answer", {"q-deploy_target": "0"}, follow=True)

    assert "cancelled by the agent" in response.content.decode()
    assert Prompt.objects.get(pk=prompt.pk).reason == "cancelled"


XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_agent_and_user_text_is_shown_never_run(agent, owner, browser):
    question = {
        "id": "pick",
        "header": "<b>Hdr</b>",
        "question": f"Pick {XSS}?",
        "options": [{"label": "<script>evil()</script>", "description": XSS}, {"label": "<img src=y onerror=z()>"}],
    }
    services.post_agent_message(agent, "support-42", XSS)
    ask(agent, question)  # pending: its panel shows every string
    answered = ask(agent, question, session="answered")
    services.post_user_message(answered.session, owner, f"my answer {XSS}")  # free text, read as the reply

    html = page(browser) + page(browser, "answered") + browser.get("/").content.decode()

    assert "<script>alert" not in html and "<img src=x" not in html and "<script>evil" not in html
    assert "<b>Hdr" not in html and "<img src=y" not in html
    for shown in (
        "onerror=alert(1)&gt;",
        "&lt;script&gt;evil()&lt;/script&gt;",
        "&lt;b&gt;Hdr",
        "my answer &lt;script&gt;",
    ):
        assert shown in html


# --- the composer ---------------------------------------------------------------------------------


def test_a_message_with_nothing_pending_reaches_the_agent(api, agent, browser):
    services.post_agent_message(agent, "support-42", "Tell me if anything comes up")

    browser.post("/s/support-42/messages", {"text": "Please also update the docs"})

    body = api.get("/sessions/support-42/messages").json()
    assert [m["text"] for m in body["messages"]] == ["Please also update the docs"]
    assert body["messages"][0]["author"] == "user" and body["last_id"] == body["messages"][0]["id"]


def test_a_plain_text_reply_answers_the_pending_prompt(agent, owner, browser):
    prompt = ask(agent, QUESTION, EXTRAS)

    response = browser.post(
        "/s/support-42/messages", {"text": "1: 2\nextras: docs, my own video"}, headers={"HX-Request": "true"}
    )

    prompt.refresh_from_db()
    assert prompt.result["answers"]["answers"] == {"deploy_target": ["Production"], "extras": ["Docs", "my own video"]}
    assert (prompt.surface, prompt.resolved_by) == ("text", owner)
    html = response.content.decode()
    assert "Answered by a text reply" in html and "Read from your reply" in html
    assert Message.objects.get(author="user").prompt == prompt


def test_an_unreadable_reply_keeps_the_prompt_pending_and_says_what_is_missing(agent, browser):
    prompt = ask(agent, QUESTION, EXTRAS)

    response = browser.post("/s/support-42/messages", {"text": "production"}, headers={"HX-Request": "true"})

    assert Prompt.objects.get(pk=prompt.pk).is_pending
    note = Message.objects.get(author="system")
    assert "did not answer 2. Extras" in note.text
    assert "did not answer 2. Extras" in response.content.decode()


def test_a_reply_after_the_deadline_is_a_plain_message(agent, browser):
    from datetime import timedelta

    from django.utils import timezone

    prompt = ask(agent)
    Prompt.objects.filter(pk=prompt.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    browser.post("/s/support-42/messages", {"text": "2"})

    prompt.refresh_from_db()
    assert prompt.reason == "expired"
    assert Message.objects.get(author="user").prompt is None


@pytest.mark.parametrize("text,words", [("   ", "Write something first."), ("x" * 4001, "at most 4000")])
def test_a_message_that_cannot_be_sent_is_refused(agent, browser, text, words):
    services.post_agent_message(agent, "support-42", "hi")

    response = browser.post("/s/support-42/messages", {"text": text}, headers={"HX-Request": "true"})

    assert response.status_code == 422 and words in response.content.decode()
    assert not Message.objects.filter(author="user").exists()


# --- the agent's chat API ----------------------------------------------------------------------------


def test_an_agent_message_creates_the_session_and_shows_in_the_timeline(api, browser):
    response = api.post("/sessions/new-chat/messages", {"text": "Starting the migration now."})

    assert response.status_code == 201
    assert response.json()["author"] == "agent"
    assert "Starting the migration now." in page(browser, "new-chat")


@pytest.mark.parametrize(
    "body,path",
    [({}, "text"), ({"text": 5}, "text"), ({"text": "hi", "mood": "happy"}, "mood"), ({"text": "  "}, "text")],
)
def test_an_agent_message_that_breaks_the_contract_is_refused(api, body, path):
    response = api.post("/sessions/s1/messages", body)

    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == path
    assert not Message.objects.exists()


def test_reading_messages_of_an_unknown_or_foreign_session_is_not_found(api, other_token):
    api.post("/sessions/mine/messages", {"text": "hi"})

    assert api.get("/sessions/nope/messages").status_code == 404
    assert AgentClient(other_token).get("/sessions/mine/messages").status_code == 404


def test_reading_messages_after_an_id_returns_only_newer_ones(api, agent, owner):
    session = services.post_agent_message(agent, "s1", "hi").session
    first = services.post_user_message(session, owner, "one").message
    services.post_user_message(session, owner, "two")

    body = api.get(f"/sessions/s1/messages?after={first.pk}").json()

    assert [m["text"] for m in body["messages"]] == ["two"]
    assert api.get("/sessions/s1/messages?after=-1").status_code == 422


def test_an_unknown_page_is_a_friendly_404(browser):
    response = browser.get("/s/never-used/")

    assert response.status_code == 404
    assert "Back to your sessions" in response.content.decode()


@pytest.mark.parametrize("key", ["a%00b", "-dash-first", "x" * 129])
def test_a_page_for_a_key_no_session_can_have_is_not_found(browser, key):
    assert browser.get(f"/s/{key}/").status_code == 404
    assert browser.post(f"/s/{key}/messages", {"text": "hello"}).status_code == 404


# --- the inbox ---------------------------------------------------------------------------------


def inbox(browser) -> str:
    response = browser.get("/inbox/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_inbox_needs_a_login(client):
    response = client.get("/inbox/")

    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_inbox_lists_every_waiting_question_across_sessions_soonest_deadline_first(agent, browser):
    later = ask(agent, session="later", timeoutSeconds=600)
    sooner = ask(agent, QUESTION, EXTRAS, session="sooner", timeoutSeconds=120)
    answered = ask(agent, session="done")
    services.answer(answered, {"deploy_target": ["Production"]}, by=None, surface="web")

    html = inbox(browser)

    assert html.index(f'id="prompt-{sooner.pk}"') < html.index(f'id="prompt-{later.pk}"')
    assert f'id="prompt-{answered.pk}"' not in html
    # Each in the panel partial, with its session, its agent and its countdown, answering back to the inbox.
    assert 'href="/s/sooner/"' in html and "helper asks you" in html and html.count('class="countdown"') == 2
    assert f'action="/s/later/prompts/{later.pk}/answer"' in html and 'name="from" value="inbox"' in html
    # The one just answered, as one line in "Just answered".
    assert f'id="answered-{answered.pk}"' in html and "Answered on the web" in html
    assert 'ws-connect="/ws/sessions/?only=inbox&amp;since=' in html


def test_the_inbox_shows_only_the_persons_own_questions(agent, owner, other_user, browser):
    mine = ask(agent, session="mine")
    intruder, _ = services.create_agent("intruder", other_user)
    theirs = ask(intruder, session="theirs")

    html = inbox(browser)

    assert f'id="prompt-{mine.pk}"' in html and f'id="prompt-{theirs.pk}"' not in html and "/s/theirs/" not in html
    other = Client()
    other.force_login(other_user)
    assert f'id="prompt-{mine.pk}"' not in other.get("/inbox/").content.decode()
    # Nor may the other person answer it from an inbox of their own.
    response = other.post(
        f"/s/mine/prompts/{mine.pk}/answer", {"q-deploy_target": "0", "action": "answer", "from": "inbox"}
    )
    assert response.status_code == 404
    mine.refresh_from_db()
    assert mine.status == "pending"


def test_an_answer_from_the_inbox_without_javascript_goes_back_to_the_inbox(agent, owner, browser):
    prompt = ask(agent, session="release")

    response = browser.post(
        f"/s/release/prompts/{prompt.pk}/answer", {"q-deploy_target": "1", "action": "answer", "from": "inbox"}
    )

    assert response.status_code == 302 and response["Location"] == "/inbox/"
    prompt.refresh_from_db()
    assert (prompt.status, prompt.surface, prompt.resolved_by) == ("answered", "web", owner)
    html = inbox(browser)
    assert f'id="prompt-{prompt.pk}"' not in html and f'id="answered-{prompt.pk}"' in html and "Production" in html


def test_a_refused_answer_from_the_inbox_shows_the_inbox_again_with_the_error_on_its_card(agent, browser):
    prompt = ask(agent, session="release")

    response = browser.post(
        f"/s/release/prompts/{prompt.pk}/answer", {"q-deploy_target": "7", "action": "answer", "from": "inbox"}
    )

    html = response.content.decode()
    assert response.status_code == 422 and 'id="inbox-prompts"' in html
    assert f'id="panel-error-{prompt.pk}"' in html and "is not one of its options" in html
    prompt.refresh_from_db()
    assert prompt.status == "pending"


def test_more_time_from_the_inbox_without_javascript_goes_back_to_the_inbox(agent, browser):
    prompt = ask(agent, session="release")

    response = browser.post(f"/s/release/prompts/{prompt.pk}/extend", {"from": "inbox"})

    assert response.status_code == 302 and response["Location"] == "/inbox/"
    prompt.refresh_from_db()
    assert prompt.extended == 1


def test_an_htmx_answer_from_the_inbox_returns_the_inbox_lists(agent, browser):
    answered = ask(agent, session="one")
    waiting = ask(agent, session="two")

    response = browser.post(
        f"/s/one/prompts/{answered.pk}/answer",
        {"q-deploy_target": "0", "action": "answer", "from": "inbox"},
        headers={"HX-Request": "true"},
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert '<ol id="inbox-prompts" class="inbox-prompts"' in html and 'id="inbox-answered"' in html
    assert f'id="prompt-{waiting.pk}"' in html and f'id="prompt-{answered.pk}"' not in html
    assert f'id="answered-{answered.pk}"' in html
    assert "#timeline-items" not in html  # nothing for a session page


def test_the_header_count_leads_to_the_inbox_when_more_than_one_question_waits(agent, browser):
    first = ask(agent, session="one")
    assert f'class="waiting-link" href="/p/{first.pk}/"' in inbox(browser)

    ask(agent, session="two")

    html = browser.get("/settings/").content.decode()
    assert 'class="waiting-link" href="/inbox/"' in html and "open the inbox" in html
    assert '<a href="/inbox/">Inbox</a>' in html  # and the nav links it from every page


def test_the_settings_page_chooses_to_be_told_when_an_agent_finishes(owner):
    browser = Client()
    browser.force_login(owner)
    assert 'name="tell_finished"' in browser.get("/settings/").content.decode()

    saved = browser.post("/settings/agents/", {"tell_finished": "on"})
    refused = browser.post("/settings/agents/", {"tell_finished": "maybe"})

    assert saved.status_code == 302 and Preferences.objects.get(user=owner).tell_finished is True
    assert refused.status_code == 422 and "Tick the box or leave it empty." in refused.content.decode()
    assert browser.post("/settings/agents/", {}).status_code == 302
    assert Preferences.objects.get(user=owner).tell_finished is False
