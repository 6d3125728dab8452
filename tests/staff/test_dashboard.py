"""The staff dashboard: prompts per day, answered share, time to answer, per agent."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from askuser_app.domain import services
from askuser_app.models import Prompt
from askuser_app.staff import history
from tests.conftest import ask, backdate, page, words

DASHBOARD = "/admin/askuser_app/prompt/dashboard/"


def midnight():
    return timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)


@pytest.fixture
def week(agent, owner, other_user):
    """Helper (alice): five answers taking 10, 20, 30, 40 and 100 s, two days ago; yesterday an
    expired and a cancelled prompt; a pending one today. Bob's agent: one answer (5 s) today.
    Ten days ago (outside the week): one answer."""
    today = midnight()
    for n, seconds in enumerate((10, 20, 30, 40, 100)):
        prompt = ask(agent, session=f"answered-{n}")
        services.answer(prompt, {"deploy_target": "Production"}, by=owner, surface="web")
        backdate(prompt, today - timedelta(days=2) + timedelta(hours=9, minutes=n), took=timedelta(seconds=seconds))
    expired = ask(agent, session="expired")
    Prompt.objects.filter(pk=expired.pk).update(expires_at=timezone.now())
    services.expire(Prompt.objects.get(pk=expired.pk))
    cancelled = ask(agent, session="cancelled")
    services.cancel(cancelled, agent=agent)
    for prompt in (expired, cancelled):
        backdate(prompt, today - timedelta(days=1) + timedelta(hours=15), took=timedelta(seconds=900))
    ask(agent, session="pending")
    bobs_agent, _ = services.create_agent("intruder", other_user)
    quick = ask(bobs_agent, session="bobs")
    services.answer(quick, {"deploy_target": "Production"}, by=other_user)
    backdate(quick, timezone.now() - timedelta(minutes=1), took=timedelta(seconds=5))
    old = ask(agent, session="old")
    services.answer(old, {"deploy_target": "Production"}, by=owner)
    backdate(old, today - timedelta(days=10), took=timedelta(seconds=3))
    return agent, bobs_agent


def test_the_figures_of_a_week(week):
    board = history.dashboard(days=7)

    assert (board.figures.total, board.figures.answered, board.figures.no_answer, board.figures.pending) == (
        9,
        6,
        2,
        1,
    )
    assert board.figures.by_reason == {
        "expired": 1,
        "cancelled": 1,
        "aborted": 0,
        "skipped": 0,
        "terminal": 0,
        "decided": 0,
    }
    assert board.figures.answered_percent == "75%"
    # Six answers: 5, 10, 20, 30, 40, 100 s; nearest rank: the 3rd and the 6th.
    assert (board.figures.median, board.figures.p90) == (timedelta(seconds=20), timedelta(seconds=100))


def test_the_figures_per_agent(week):
    rows = {row.agent.name: row.figures for row in history.dashboard(days=7).per_agent}

    assert set(rows) == {"helper", "intruder"}
    assert (rows["helper"].total, rows["helper"].answered_percent) == (8, "71%")
    assert (rows["helper"].median, rows["helper"].p90) == (timedelta(seconds=30), timedelta(seconds=100))
    assert (rows["intruder"].total, rows["intruder"].median, rows["intruder"].p90) == (
        1,
        timedelta(seconds=5),
        timedelta(seconds=5),
    )


def test_prompts_per_day_cover_every_day_of_the_period(week):
    board = history.dashboard(days=7)

    assert [d.day for d in board.per_day] == [(midnight() - timedelta(days=n)).date() for n in range(6, -1, -1)]
    counts = [(d.answered, d.no_answer, d.pending) for d in board.per_day]
    assert counts[-3:] == [(5, 0, 0), (0, 2, 0), (1, 0, 1)]
    assert counts[:-3] == [(0, 0, 0)] * 4


def test_a_longer_period_includes_older_prompts(week):
    assert history.dashboard(days=14).figures.total == 10


def test_the_page_shows_the_figures_a_chart_and_a_row_per_agent(staff_client, week):
    body = page(staff_client.get(DASHBOARD, {"days": 7}))
    text = words(body)

    assert "75% answered (6 of 8 resolved)" in text
    assert "20 s median time to answer" in text and "1 min 40 s 90th percentile time to answer" in text
    assert "no answer: expired 1, cancelled 1, aborted 0, skipped 0" in text
    assert "helper alice 8 5 2" in text and "intruder bob 1 1 0" in text
    chart = re.search(r"<svg viewBox=.*?</svg>", body, re.S).group(0)
    assert len(re.findall(r'<rect class="answered"', chart)) == 2  # two days with answers
    assert len(re.findall(r'<rect class="no_answer"', chart)) == 1
    assert len(re.findall(r'<rect class="pending"', chart)) == 1
    assert not re.search(r'(src|href)="(https?:)?//', body)  # nothing from elsewhere


def test_the_page_narrows_to_one_agent(staff_client, week):
    bobs_agent = week[1]

    text = words(page(staff_client.get(DASHBOARD, {"days": 7, "agent": bobs_agent.pk})))

    assert "1 prompt " in text and "100% answered (1 of 1 resolved)" in text
    assert "helper alice 8" not in text


def test_odd_parameters_fall_back_to_the_defaults(staff_client, week):
    text = words(page(staff_client.get(DASHBOARD, {"days": "1000", "agent": "x"})))

    assert f"since {(midnight() - timedelta(days=history.DEFAULT_DAYS - 1)):%Y-%m-%d}" in text
    assert "10 prompts" in text


def test_an_empty_history_reads_as_such(staff_client):
    text = words(page(staff_client.get(DASHBOARD)))

    assert "0 prompts" in text and "No prompts in this period." in text
    assert "— median time to answer" in text


def test_the_admin_index_links_to_the_dashboard(staff_client):
    assert f'href="{DASHBOARD}"' in page(staff_client.get("/admin/"))
