"""SPEC 5: staff review the question history in Django admin; the history is evidence."""

from __future__ import annotations

import asyncio
import csv
import html
import io
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from askuser_app.domain import contract, services
from askuser_app.domain.agentauth import hash_token
from askuser_app.models import Agent, Answer, Prompt, PromptEvent
from askuser_app.runtime.asyncdb import database_call
from askuser_app.staff import history
from askuser_app.staff.admin import BoundedPaginator, PromptAdmin
from tests.conftest import (
    DEADLINE,
    QUESTION,
    AgentClient,
    ask,
    backdate,
    make_user,
    page,
    parked,
    start_wait,
    until,
    words,
)

PROMPTS = "/admin/askuser_app/prompt/"
EXPORT = "/admin/askuser_app/prompt/export.csv"
DASHBOARD = "/admin/askuser_app/prompt/dashboard/"
AGENTS = "/admin/askuser_app/agent/"

BRANCH = {
    "id": "branch_name",
    "header": "Release branch name",
    "question": "What should the release branch be called?",
    "options": [{"label": "release/next (Recommended)"}, {"label": "release/v2", "description": "Matches the tag"}],
}


def detail_url(prompt: Prompt) -> str:
    return f"{PROMPTS}{prompt.pk}/change/"


def rows_of(response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.content
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def sessions_listed(listing: str) -> list[str]:
    """The session keys of the list's rows, top to bottom."""
    return re.findall(r'class="field-session_key"><a href="[^"]*">([^<]+)</a>', listing)


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


@pytest.fixture
def history_of_two_owners(agent, owner, other_user):
    """Alice's agent: an answered prompt (a chosen option and free text) and a pending one;
    Bob's agent: an expired prompt."""
    answered = ask(agent, QUESTION, BRANCH, session="release-7")
    services.answer(
        answered,
        {"deploy_target": "Staging (Recommended)", "branch_name": "release/2026-12"},
        by=owner,
        surface="web",
    )
    pending = ask(agent, session="support-42")
    bobs_agent, _ = services.create_agent("intruder", other_user)
    expired = ask(bobs_agent, session="bobs-own")
    Prompt.objects.filter(pk=expired.pk).update(expires_at=timezone.now())
    services.expire(Prompt.objects.get(pk=expired.pk))
    return answered, pending, expired


# --- who may look ------------------------------------------------------------------


def test_staff_see_every_owners_prompts(staff_client, history_of_two_owners):
    listing = page(staff_client.get(PROMPTS))

    assert all(key in listing for key in ("release-7", "support-42", "bobs-own"))
    assert "Deploy: Staging (Recommended)" in listing
    assert "Release bran: “release/2026-12”" in listing


def test_a_reviewer_sees_every_owners_history_but_cannot_cancel(reviewer, history_of_two_owners):
    client = Client()
    client.force_login(reviewer)

    listing = page(client.get(PROMPTS))

    assert "bobs-own" in listing
    assert "Cancel selected pending prompts" not in listing  # looking is not cancelling


@pytest.mark.parametrize(
    "url",
    [PROMPTS, EXPORT, DASHBOARD, AGENTS, "/admin/askuser_app/session/", "/admin/askuser_app/run/", "/admin/"],
)
def test_non_staff_are_sent_to_the_admin_login(url, owner, history_of_two_owners):
    member, anonymous = Client(), Client()
    member.force_login(owner)

    for client in (member, anonymous):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/?next=")


def test_a_non_staff_user_cannot_open_a_prompt_either(owner, history_of_two_owners):
    client = Client()
    client.force_login(owner)

    response = client.get(detail_url(history_of_two_owners[0]))

    assert response.status_code == 302 and "/admin/login/" in response["Location"]


# --- the list ----------------------------------------------------------------------


def test_the_list_is_newest_first_with_outcome_surface_resolver_and_time(staff_client, agent, owner):
    older = ask(agent, session="older")
    services.answer(older, {"deploy_target": "Production"}, by=owner, surface="text")
    backdate(older, timezone.now() - timedelta(hours=2), took=timedelta(seconds=42))
    newer = ask(agent, session="newer")
    services.skip_all(newer, by=owner, surface="web")

    listing = page(staff_client.get(PROMPTS))

    assert sessions_listed(listing) == ["newer", "older"]
    row = re.search(r"<tr>.*?older.*?</tr>", listing, re.S).group(0)
    assert all(text in row for text in ("Deploy: Production", "Answered", "text", "alice", "42 s"))
    skipped_row = re.search(r"<tr>.*?newer.*?</tr>", listing, re.S).group(0)
    assert all(text in skipped_row for text in ("Deploy: Skipped", "No Answer", "Skipped", "web"))


def test_strings_from_agents_are_shown_never_run(staff_client, agent, owner):
    evil = {
        **QUESTION,
        "question": "Ship <script>alert(1)</script> now?",
        "options": [{"label": "<b>Yes</b> (Recommended)"}, {"label": "No"}],
    }
    prompt = ask(agent, evil, session="evil")
    services.answer(prompt, {"deploy_target": "<i>typed</i>"}, by=owner)

    for url in (PROMPTS, detail_url(prompt), DASHBOARD):
        body = page(staff_client.get(url))
        assert "<script>alert(1)" not in body and "<b>Yes</b>" not in body and "<i>typed</i>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page(staff_client.get(detail_url(prompt)))


def test_the_pages_need_no_inline_style_or_script(staff_client, history_of_two_owners):
    """So that a Content-Security-Policy of script-src and style-src 'self' holds."""
    answered = history_of_two_owners[0]
    urls = [PROMPTS, detail_url(answered), DASHBOARD, "/admin/", f"{AGENTS}add/"]
    urls += [
        f"/admin/askuser_app/session/{answered.session_id}/change/",
        f"/admin/askuser_app/run/{answered.run_id}/change/",
    ]

    for url in urls:
        inline = re.findall(r"<style|\sstyle=|\son[a-z]+=|<script(?![^>]*\bsrc=)[^>]*>", page(staff_client.get(url)))
        assert inline == [], url
    stylesheet = staff_client.get("/static/askuser/admin.css")
    assert stylesheet.status_code == 200 and b".askuser-chip" in b"".join(stylesheet.streaming_content)


@pytest.mark.parametrize(
    ("word", "found"),
    [
        ("release branch be called", "release-7"),  # question text
        ('"branch name"', "release-7"),  # question header
        ("release/v2", "release-7"),  # option label
        ("2026-12", "release-7"),  # free-text answer
        ("bobs-own", "bobs-own"),  # session key
        ("SUPPORT-4 STAGING", "support-42"),  # words anywhere, in any case: a key, a pending prompt's label
    ],
)
def test_search_covers_questions_options_free_text_and_session_keys(staff_client, history_of_two_owners, word, found):
    listing = page(staff_client.get(PROMPTS, {"q": word}))

    keys = set(sessions_listed(listing))
    assert keys == {found}


@pytest.mark.parametrize(
    "phrase",
    [
        '"release-7 Deploy"',  # the session key, then the first header
        '"name What should"',  # a header, then its question
        '"(Recommended) Production"',  # one option label, then the next
        '"release/v2 release/2026-12"',  # the last label, then the free-text answer
    ],
)
def test_a_phrase_is_found_within_one_field_never_across_two(staff_client, history_of_two_owners, phrase):
    assert sessions_listed(page(staff_client.get(PROMPTS, {"q": phrase}))) == []


def test_the_searched_text_a_prompt_is_given_is_the_one_its_rows_make(history_of_two_owners):
    """What the service writes as a prompt is asked and answered is what migration 0026
    writes for a prompt asked before it (bench/history.py fills its history with it too)."""
    from bench.history import search_text

    written = dict(Prompt.objects.values_list("pk", "search_text"))
    Prompt.objects.update(search_text="")
    search_text.fill_search_text(connection)

    assert dict(Prompt.objects.values_list("pk", "search_text")) == written
    assert written[history_of_two_owners[0].pk].splitlines()[:2] == ["release-7", "Deploy"]


def test_the_lists_count_stops_at_its_bound_and_the_list_still_pages(staff_client, agent, owner, monkeypatch):
    monkeypatch.setattr(BoundedPaginator, "BOUND", 2)
    monkeypatch.setattr(PromptAdmin, "list_per_page", 2)
    for n in range(5):
        services.cancel(ask(agent, session=f"deploy-{n}"), agent=agent)

    first = page(staff_client.get(PROMPTS))
    second = page(staff_client.get(PROMPTS, {"p": "2"}))
    filtered = page(staff_client.get(PROMPTS, {"status__exact": "no_answer", "p": "2"}))

    assert "more than 2 prompts" in first and sessions_listed(first) == ["deploy-4", "deploy-3"]
    # A later page counts on from where it is: two pages past the first.
    assert "more than 4 prompts" in second and sessions_listed(second) == ["deploy-2", "deploy-1"]
    assert "more than 4 prompts" in filtered and sessions_listed(filtered) == ["deploy-2", "deploy-1"]


def test_a_search_under_the_bound_pages_its_matches_newest_first(staff_client, agent, monkeypatch):
    monkeypatch.setattr(PromptAdmin, "list_per_page", 2)
    for session in ("rollout-0", "other-1", "rollout-2", "rollout-3", "other-4"):
        services.cancel(ask(agent, session=session), agent=agent)

    first = page(staff_client.get(PROMPTS, {"q": "rollout"}))
    second = page(staff_client.get(PROMPTS, {"q": "rollout", "p": "2"}))
    by_key = page(staff_client.get(PROMPTS, {"q": "rollout", "o": "3"}))  # the session column, ascending

    assert "3 results" in first and sessions_listed(first) == ["rollout-3", "rollout-2"]
    assert sessions_listed(second) == ["rollout-0"]
    assert sessions_listed(by_key) == ["rollout-0", "rollout-2"]


def test_search_by_prompt_id(staff_client, history_of_two_owners):
    expired = history_of_two_owners[2]

    listing = page(staff_client.get(PROMPTS, {"q": str(expired.pk)}))

    assert set(sessions_listed(listing)) == {"bobs-own"}


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ({"status__exact": "pending"}, {"support-42"}),
        ({"reason__exact": "expired"}, {"bobs-own"}),
        ({"surface": "web"}, {"release-7"}),
        ({"surface": "-"}, {"support-42", "bobs-own"}),
    ],
)
def test_the_list_filters(staff_client, history_of_two_owners, query, shown):
    listing = page(staff_client.get(PROMPTS, query))

    assert set(sessions_listed(listing)) == shown


def test_the_agent_and_owner_filters_name_their_choices(staff_client, history_of_two_owners, other_user):
    bobs_agent = Agent.objects.get(name="intruder")

    listing = page(staff_client.get(PROMPTS))
    by_agent = page(staff_client.get(PROMPTS, {"agent__id__exact": bobs_agent.pk}))
    by_owner = page(staff_client.get(PROMPTS, {"session__owner__id__exact": other_user.pk}))

    assert "intruder (bob)" in listing and "helper (alice)" in listing
    assert set(sessions_listed(by_agent)) == {"bobs-own"}
    assert set(sessions_listed(by_owner)) == {"bobs-own"}


def test_the_date_filter_offers_yesterday(staff_client, agent):
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    for key, when in (("two-days-ago", 2), ("yesterday", 1)):
        backdate(ask(agent, session=key), today - timedelta(days=when) + timedelta(hours=12))
    ask(agent, session="today")

    listing = page(staff_client.get(PROMPTS))
    yesterday = re.search(r'<a href="([^"]+)">Yesterday</a>', listing).group(1)
    shown = page(staff_client.get(PROMPTS + html.unescape(yesterday)))

    assert set(sessions_listed(shown)) == {"yesterday"}


def test_the_date_hierarchy_offers_the_periods_that_have_prompts(staff_client, agent):
    for key, when in (
        ("jan", (2025, 1, 15)),
        ("mar", (2025, 3, 2)),
        ("mar-late", (2025, 3, 31)),
        ("next", (2026, 2, 1)),
    ):
        backdate(ask(agent, session=key), datetime(*when, 23, 30, tzinfo=UTC))

    def offered(query: str, part: str) -> list[str]:
        """The periods the drill-down links to, e.g. the months of a year."""
        listing = page(staff_client.get(PROMPTS + query))
        toplinks = re.search(r'<nav class="toplinks">(.*?)</nav>', listing, re.S).group(1)
        links = re.findall(r'<a href="([^"]+)">', toplinks)  # not the back link, which has a class
        return [parse_qs(urlsplit(html.unescape(link)).query)[f"created_at__{part}"][0] for link in links]

    assert offered("", "year") == ["2025", "2026"]
    assert offered("?created_at__year=2025", "month") == ["1", "3"]
    assert offered("?created_at__year=2025&created_at__month=3", "day") == ["2", "31"]
    march_2 = page(staff_client.get(PROMPTS + "?created_at__year=2025&created_at__month=3&created_at__day=2"))
    assert sessions_listed(march_2) == ["mar"]


def test_a_sessions_prompts_are_one_click_from_the_list(staff_client, history_of_two_owners):
    listing = page(staff_client.get(PROMPTS))
    link = re.search(r'<a href="([^"]+)">release-7</a>', listing).group(1)

    shown = page(staff_client.get(html.unescape(link)))

    assert set(sessions_listed(shown)) == {"release-7"}


def make_history(agents, owner, first: int, count: int) -> None:
    """``count`` prompts spread over the agents: answered, skipped, cancelled and pending."""
    for n in range(first, first + count):
        agent = agents[n % len(agents)]
        prompt = ask(agent, QUESTION, BRANCH, session=f"s-{n}")
        if n % 4 == 0:
            services.answer(prompt, {"deploy_target": "Production", "branch_name": f"b-{n}"}, by=owner, surface="web")
        elif n % 4 == 1:
            services.skip_all(prompt, by=owner, surface="text")
        elif n % 4 == 2:
            services.cancel(prompt, agent=agent)


def test_the_list_costs_the_same_queries_for_10_or_200_prompts(staff_client, agent, owner, other_user):
    agents = [agent, services.create_agent("second", owner)[0], services.create_agent("third", other_user)[0]]

    def queries_for_the_list() -> int:
        with CaptureQueriesContext(connection) as queries:
            page(staff_client.get(PROMPTS, {"q": "release"}))
            page(staff_client.get(PROMPTS))
        return len(queries)

    make_history(agents, owner, 0, 10)
    page(staff_client.get(PROMPTS))  # a first request: what a process reads once is not counted
    with_10 = queries_for_the_list()
    make_history(agents, owner, 10, 190)
    with_200 = queries_for_the_list()

    assert with_10 == with_200
    assert Prompt.objects.count() == 200


# --- the detail ----------------------------------------------------------------------


def test_the_detail_shows_questions_options_answers_and_the_event_trail(staff_client, history_of_two_owners):
    answered = history_of_two_owners[0]

    detail = page(staff_client.get(detail_url(answered)))

    questions = detail[detail.index("Questions and answers") :]
    assert questions.index("Staging (Recommended)") < questions.index("Production")  # options in order
    assert questions.index("release/next (Recommended)") < questions.index("release/v2")
    assert "recommended</span>" in questions and "chosen</span>" in questions
    assert "free text (Other): “release/2026-12”" in questions
    assert "header as sent: “Release branch name”" in questions
    trail = detail[detail.index("Event trail") :]
    assert re.search(r"<td>created</td>\s*<td>agent helper</td>\s*<td>api</td>", trail)
    assert re.search(r"<td>answered</td>\s*<td>alice</td>\s*<td>web</td>", trail)


def test_the_detail_says_what_happened_to_an_unanswered_prompt(staff_client, agent, owner):
    skipped = ask(agent, session="skipper")
    services.skip_all(skipped, by=owner, surface="web")
    partly = ask(agent, QUESTION, BRANCH, session="partly")
    services.answer(partly, {"deploy_target": "Production", "branch_name": None}, by=owner, surface="web")

    assert words(page(staff_client.get(detail_url(skipped)))).count("Answer: Skipped") == 1
    partial = words(page(staff_client.get(detail_url(partly))))
    assert "Answer: Production" in partial and partial.count("Answer: Skipped") == 1


def test_the_detail_is_read_only(staff_client, history_of_two_owners):
    answered = history_of_two_owners[0]
    before = (answered.result, list(Answer.objects.values_list("values", flat=True)))

    detail = page(staff_client.get(detail_url(answered)))
    change = staff_client.post(
        detail_url(answered), {"status": "no_answer", "reason": "skipped", "surface": "admin", "_save": "Save"}
    )
    answer = staff_client.post(detail_url(answered), {"answer-0-values": '["Production"]', "_save": "Save"})
    delete = staff_client.post(f"{PROMPTS}{answered.pk}/delete/", {"post": "yes"})
    add = staff_client.get(f"{PROMPTS}add/")

    assert 'type="submit" value="Save"' not in detail
    assert (change.status_code, answer.status_code, delete.status_code, add.status_code) == (403, 403, 403, 403)
    answered.refresh_from_db()
    assert (answered.status, answered.result, list(Answer.objects.values_list("values", flat=True))) == (
        "answered",
        *before,
    )
    assert Prompt.objects.count() == 3


def test_events_answers_and_questions_have_no_admin_of_their_own(staff_client):
    for model in ("promptevent", "answer", "question", "option"):
        assert staff_client.get(f"/admin/askuser_app/{model}/").status_code == 404


# --- cancelling ------------------------------------------------------------------------


def cancel_action(client: Client, *prompts: Prompt):
    selected = [str(p.pk) for p in prompts]
    return client.post(PROMPTS, {"action": "cancel_pending", "_selected_action": selected}, follow=True)


def test_staff_cancel_pending_prompts_through_the_service(staff_client, staff, history_of_two_owners):
    pending = history_of_two_owners[1]

    response = cancel_action(staff_client, pending)

    pending.refresh_from_db()
    assert (pending.status, pending.reason, pending.surface, pending.resolved_by) == (
        "no_answer",
        "cancelled",
        "admin",
        staff,
    )
    assert pending.result["status"] == "no_answer" and pending.result["resolved_by"] == "sam"
    event = pending.events.get(kind=PromptEvent.Kind.CANCELLED)
    assert (event.actor, event.surface) == ("sam", "admin")
    assert any("Cancelled 1 pending prompt;" in m for m in messages_of(response))


def test_an_agent_hears_who_cancelled_its_prompt(staff_client, history_of_two_owners, token):
    pending = history_of_two_owners[1]
    cancel_action(staff_client, pending)

    response = AgentClient(token).post(f"/prompts/{pending.pk}/cancel")

    assert response.status_code == 409
    assert "was cancelled by sam in the admin at" in response.json()["detail"]


def test_cancelling_leaves_resolved_prompts_as_they_are_and_says_so(staff_client, history_of_two_owners):
    answered, pending, expired = history_of_two_owners

    response = cancel_action(staff_client, answered, expired, pending)

    assert [Prompt.objects.get(pk=p.pk).status for p in (answered, expired, pending)] == [
        "answered",
        "no_answer",
        "no_answer",
    ]
    assert Prompt.objects.get(pk=expired.pk).reason == "expired"
    assert "Left 2 selected prompts unchanged: no longer pending." in messages_of(response)


def test_a_cancel_that_loses_to_the_deadline_is_reported_with_the_reason(staff_client, history_of_two_owners):
    pending = history_of_two_owners[1]
    Prompt.objects.filter(pk=pending.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    response = cancel_action(staff_client, pending)

    assert response.status_code == 200
    pending.refresh_from_db()
    assert (pending.status, pending.reason) == ("no_answer", "expired")
    assert any(
        m.startswith(f"Not cancelled: support-42 · {pending.pk}: This prompt expired at") for m in messages_of(response)
    )


def test_cancelling_needs_the_change_permission(history_of_two_owners):
    pending = history_of_two_owners[1]
    auditor = make_user("auditor", is_staff=True)
    client = Client()
    client.force_login(auditor)

    cancel_action(client, pending)
    assert Prompt.objects.get(pk=pending.pk).status == "pending"

    auditor.user_permissions.add(Permission.objects.get(codename="change_prompt"))
    cancel_action(client, pending)
    assert Prompt.objects.get(pk=pending.pk).reason == "cancelled"


@pytest.mark.django_db(transaction=True)
async def test_the_cancel_action_wakes_the_waiting_agent(asked, token, staff):
    waiting = start_wait(token, asked)
    await until(parked(asked))

    def cancel_as_staff():
        client = Client()
        client.force_login(staff)
        return cancel_action(client, asked)

    response = await database_call(cancel_as_staff)()

    assert response.status_code == 200
    body = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert (body["status"], body["reason"], body["resolved_by"], body["surface"]) == (
        "no_answer",
        "cancelled",
        "sam",
        "admin",
    )


# --- CSV export ----------------------------------------------------------------------------


def test_the_export_has_one_row_per_question_with_its_answer(staff_client, history_of_two_owners):
    answered = history_of_two_owners[0]
    Prompt.objects.filter(pk=answered.pk).update(resolved_at=answered.created_at + timedelta(seconds=61.5))

    rows = rows_of(staff_client.get(EXPORT))

    assert [(r["session"], r["question_id"]) for r in rows] == [
        ("bobs-own", "deploy_target"),
        ("support-42", "deploy_target"),
        ("release-7", "deploy_target"),
        ("release-7", "branch_name"),
    ]
    deploy, branch = rows[2], rows[3]
    assert deploy == {
        "prompt_id": str(answered.pk),
        "created_at": contract.iso(answered.created_at),
        "agent": "helper",
        "owner": "alice",
        "session": "release-7",
        "run_id": answered.run.run_id,
        "status": "answered",
        "reason": "",
        "surface": "web",
        "resolved_by": "alice",
        "resolved_at": contract.iso(answered.created_at + timedelta(seconds=61.5)),
        "seconds_to_resolution": "61.5",
        "question_id": "deploy_target",
        "position": "1",
        "header": "Deploy",
        "question": "Where should this release go first?",
        "multi_select": "no",
        "options": '["Staging (Recommended)", "Production"]',
        "answer_values": '["Staging (Recommended)"]',
        "free_text": "",
        "skipped": "no",
    }
    assert (branch["header"], branch["answer_values"], branch["free_text"]) == (
        "Release branch name",
        '["release/2026-12"]',
        "release/2026-12",
    )
    assert (rows[0]["status"], rows[0]["reason"], rows[0]["resolved_by"], rows[0]["skipped"]) == (
        "no_answer",
        "expired",
        "",
        "no",
    )
    assert (rows[1]["status"], rows[1]["resolved_at"], rows[1]["seconds_to_resolution"], rows[1]["skipped"]) == (
        "pending",
        "",
        "",
        "",
    )


def test_the_export_follows_the_lists_filters_and_search(staff_client, history_of_two_owners):
    listing = page(staff_client.get(PROMPTS, {"status__exact": "answered", "q": "release"}))
    export = re.search(r'<a href="([^"]+)"[^>]*>Export CSV</a>', listing).group(1)

    rows = rows_of(staff_client.get(html.unescape(export)))

    assert {r["session"] for r in rows} == {"release-7"}
    assert rows_of(staff_client.get(EXPORT, {"surface": "-", "o": "1"}))[0]["session"] == "support-42"


def test_the_export_names_a_file_and_is_streamed(staff_client, history_of_two_owners):
    response = staff_client.get(EXPORT)

    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(r'attachment; filename="prompts-\d{8}-\d{6}\.csv"', response["Content-Disposition"])


def test_the_export_defuses_spreadsheet_formulas(staff_client, agent, owner):
    risky = {
        "id": "formula",
        "header": "=1+1",
        "question": "@SUM(A1:A9) or -1?",
        "options": [{"label": "+49 30 1234"}, {"label": "-minus"}],
    }
    prompt = ask(agent, risky, session="risky")
    services.answer(prompt, {"formula": '=HYPERLINK("http://evil.example","click")'}, by=owner, surface="web")

    (row,) = rows_of(staff_client.get(EXPORT))

    assert (row["header"], row["question"], row["free_text"]) == (
        "'=1+1",
        "'@SUM(A1:A9) or -1?",
        '\'=HYPERLINK("http://evil.example","click")',
    )
    assert row["options"] == '["+49 30 1234", "-minus"]'  # a JSON list starts with [ and is inert


@pytest.mark.django_db(transaction=True)
async def test_the_export_is_sent_in_pieces_under_asgi(agent, owner, staff, monkeypatch):
    from controlui.asgi import application

    def setup() -> str:
        for n in range(7):
            ask(agent, session=f"s-{n}")
            services.cancel(Prompt.objects.get(session__key=f"s-{n}"), agent=agent)
        client = Client()
        client.force_login(staff)
        return client.cookies["sessionid"].value

    session_id = await database_call(setup)()
    monkeypatch.setattr(history, "CSV_ROWS_PER_WRITE", 2)
    made, made_when_first_sent = [], []
    csv_rows = history.csv_rows

    def counted_rows(prompts):
        for row in csv_rows(prompts):
            made.append(row)
            yield row

    monkeypatch.setattr(history, "csv_rows", counted_rows)
    sent, requested, done = [], asyncio.Event(), asyncio.Event()

    async def receive():
        if not requested.is_set():
            requested.set()
            return {"type": "http.request", "body": b"", "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        if message.get("body") and not made_when_first_sent:
            made_when_first_sent.append(len(made))
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": EXPORT,
        "raw_path": EXPORT.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"testserver"), (b"cookie", f"sessionid={session_id}".encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    await asyncio.wait_for(application(scope, receive, send), DEADLINE)
    done.set()

    assert sent[0]["status"] == 200
    bodies = [m["body"] for m in sent if m["type"] == "http.response.body" and m.get("body")]
    assert len(bodies) == 4  # the header and 7 rows, two rows at a time
    assert made_when_first_sent == [2]  # sent as it is read, not read to the end first
    lines = b"".join(bodies).decode().splitlines()
    assert lines[0].startswith("prompt_id,") and len(lines) == 8


# --- agents -----------------------------------------------------------------------------


def test_a_new_agents_token_is_shown_once_and_never_again(staff_client, owner):
    created = staff_client.post(f"{AGENTS}add/", {"name": "deploy-bot", "owner": owner.pk})

    token = re.search(r'value="(au_[^"]+)"', page(created)).group(1)
    agent = Agent.objects.get(name="deploy-bot")
    assert agent.owner == owner and agent.token_hash == hash_token(token)
    assert "no-store" in created["Cache-Control"]
    assert "shown only this once" in created.content.decode()
    assert AgentClient(token).ask().status_code == 201  # the token works
    later = [page(staff_client.get(url)) for url in (AGENTS, f"{AGENTS}{agent.pk}/change/", PROMPTS, f"{AGENTS}add/")]
    assert not any(token in body or agent.token_hash in body for body in later)


def test_a_new_agent_needs_a_name_and_an_owner(staff_client):
    response = staff_client.post(f"{AGENTS}add/", {"name": "  ", "owner": ""})

    assert "This field is required." in page(response)
    assert not Agent.objects.exists()


def test_only_staff_allowed_to_add_agents_can_create_tokens(owner):
    client = Client()
    client.force_login(make_user("auditor", is_staff=True))

    response = client.post(f"{AGENTS}add/", {"name": "sneaky", "owner": owner.pk})

    assert response.status_code == 403
    assert not Agent.objects.filter(name="sneaky").exists()


def test_staff_revoke_agents_and_their_tokens_stop_working(staff_client, agent, token):
    listing = page(staff_client.get(AGENTS))
    response = staff_client.post(AGENTS, {"action": "revoke", "_selected_action": [agent.pk]}, follow=True)

    agent.refresh_from_db()
    assert agent.revoked_at is not None
    assert AgentClient(token).ask().status_code == 401
    assert "Revoked 1 agent token;" in messages_of(response)[0]
    assert "helper" in listing and agent.token_prefix in listing

    again = staff_client.post(AGENTS, {"action": "revoke", "_selected_action": [agent.pk]}, follow=True)
    assert "1 agent already revoked." in messages_of(again)


def test_agents_are_never_edited_or_deleted_in_the_admin(staff_client, agent):
    change = staff_client.post(f"{AGENTS}{agent.pk}/change/", {"name": "renamed", "owner": agent.owner_id})
    delete = staff_client.post(f"{AGENTS}{agent.pk}/delete/", {"post": "yes"})

    assert (change.status_code, delete.status_code) == (403, 403)
    assert Agent.objects.get(pk=agent.pk).name == "helper"


# --- sessions and runs ----------------------------------------------------------------------


def test_sessions_and_runs_show_their_prompts(staff_client, history_of_two_owners):
    answered = history_of_two_owners[0]

    sessions = page(staff_client.get("/admin/askuser_app/session/"))
    runs = page(staff_client.get("/admin/askuser_app/run/"))
    session = page(staff_client.get(f"/admin/askuser_app/session/{answered.session_id}/change/"))
    run = page(staff_client.get(f"/admin/askuser_app/run/{answered.run_id}/change/"))

    assert all(key in sessions for key in ("release-7", "support-42", "bobs-own"))
    assert answered.run.run_id in runs
    for detail in (session, run):
        assert "Deploy: Staging (Recommended)" in detail and "Where should this release go first?" in detail
        assert f"{PROMPTS}{answered.pk}/change/" in detail
        assert "1 prompt." in detail


def test_a_long_session_shows_its_latest_prompts_and_links_to_all(staff_client, agent, owner):
    for _ in range(53):
        services.cancel(ask(agent, session="busy"), agent=agent)
    session = Prompt.objects.first().session

    detail = page(staff_client.get(f"/admin/askuser_app/session/{session.pk}/change/"))

    assert "The latest 50 of 53 prompts." in detail
    assert f'href="{PROMPTS}?session__id__exact={session.pk}"' in detail


# --- make run's demo -----------------------------------------------------------------------


def links(response) -> dict[str, str]:
    """The page's links by their text, as a browser would follow them."""
    here = response.wsgi_request.get_full_path()
    found = re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', page(response))
    return {html.unescape(text): urljoin(here, html.unescape(href)) for href, text in found}


def test_the_demo_user_finds_what_the_demo_agent_asked_yesterday_in_two_clicks(db, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    call_command("setupdemo", stdout=io.StringIO())
    client = Client()
    assert client.post("/login/", {"username": "demo", "password": "demo"}).status_code == 302  # the login page

    index = client.get("/admin/")
    prompts = client.get(links(index)["Prompts"])  # click 1
    yesterday = client.get(links(prompts)["Yesterday"])  # click 2

    shown = page(yesterday)
    for asked, said in [
        ("Where should this release go first?", "Deploy: Staging (Recommended)"),
        ("Which test suites should run before the merge?", "Tests: Unit (Recommended), Integration"),
        ("What should the release branch be called?", "Branch: “release/2026-12”"),
        ("Should I run the database migration during business hours?", "Migration: Cancelled"),
    ]:
        assert asked in shown and said in shown
    assert "Which database should staging use?" not in shown  # four days ago
    assert shown.count('class="field-agent nowrap">demo<') == 3


def test_the_demo_history_is_seeded_once_through_the_services(db, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    call_command("setupdemo", stdout=io.StringIO())
    call_command("setupdemo", stdout=io.StringIO())

    prompts = Prompt.objects.filter(session__key="demo-history")
    assert prompts.count() == 6
    assert set(prompts.values_list("reason", flat=True)) == {"", "expired", "skipped", "cancelled"}
    assert all(p.created_at < timezone.now() - timedelta(hours=1) for p in prompts)
    assert all(p.events.count() == 2 and p.result["resolved_at"] == contract.iso(p.resolved_at) for p in prompts)
