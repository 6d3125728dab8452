"""Admin search over a long history on PostgreSQL: trigram indexes, same answers."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.db.models import Q
from django.test import Client
from django.test.utils import CaptureQueriesContext

from askuser_app.models import Prompt
from askuser_app.staff.admin import COMMON, UNSURE, matching, rare, search_words, searched
from tests.conftest import SCALED, SCALED_REASON

pytestmark = [pytest.mark.scaled, pytest.mark.skipif(not SCALED, reason=SCALED_REASON), pytest.mark.django_db]

# Each column the search covers, by a word only that column holds in bench/history.py.
# (Session keys too have an index, but the 1,000 sessions here are read faster whole.)
BY_COLUMN = {
    "harbor-41": "question_text_trgm_idx",
    "rollout 417": "question_header_trgm_idx",
    "eu-west-123": "option_label_trgm_idx",
    "release notes of 4242": "answer_free_text_trgm_idx",
}


def scanned(word: str) -> str:
    return Prompt.objects.filter(matching(word)).order_by("-created_at")[:50].explain()


def plain_search(word: str) -> set:
    """What the search must find, asked the slow way: joins and a scan."""
    found = (
        Q(session__key__icontains=word)
        | Q(questions__text__icontains=word)
        | Q(questions__header_full__icontains=word)
        | Q(questions__options__label__icontains=word)
        | Q(questions__answer__free_text__icontains=word)
    )
    return set(Prompt.objects.filter(found).values_list("pk", flat=True).distinct())


def test_search_over_100000_prompts_reads_each_columns_trigram_index(long_history):
    # Each column's own word: the planner picks an index where a word is rare.
    for word, index in BY_COLUMN.items():
        assert f"Bitmap Index Scan on {index}" in scanned(word), word


@pytest.mark.parametrize(
    "word", ["fill-417", "QUARTZ-41", "rollout 7", "release notes of 7", "eu-west-12", "nothing-like-it"]
)
def test_search_over_100000_prompts_finds_what_a_plain_scan_finds(long_history, word):
    assert set(Prompt.objects.filter(matching(word)).values_list("pk", flat=True)) == plain_search(word)


def test_an_estimate_near_the_line_is_checked_by_counting_and_one_far_from_it_is_trusted(long_history):
    # "eu-west-123" is in 417 prompts, "cluster" in 20,000: near the line, the planner's
    # estimate may put either on the wrong side, and a count up to the line settles it.
    assert rare("eu-west-123", COMMON) and not rare("cluster", COMMON)
    with CaptureQueriesContext(connection) as queries:
        assert rare("cluster", COMMON // UNSURE - 1) and not rare("eu-west-123", COMMON * UNSURE)
    assert queries.captured_queries == []


def test_a_rare_word_the_planner_takes_for_common_is_still_searched_through_its_index(long_history, monkeypatch):
    from askuser_app.staff import admin

    monkeypatch.setattr(admin, "planned", lambda prompts: COMMON + 290)  # as one ANALYZE estimated "eu-west-123"
    prompts, narrowed = searched(Prompt.objects.all(), "eu-west-123")

    assert narrowed and set(prompts.values_list("pk", flat=True)) == plain_search("eu-west-123")


def test_the_admin_list_searches_100000_prompts_by_session_key(long_history, staff):
    client = Client()
    client.force_login(staff)

    listing = client.get("/admin/askuser_app/prompt/", {"q": "fill-417"}).content.decode()

    assert "100 results" in listing and "fill-417" in listing


@pytest.mark.parametrize("term", ["cluster", "quartz migrate", "release notes of 7", "of 4242", "harbor-41 eu-west-12"])
def test_a_search_of_common_and_rare_words_finds_what_a_plain_scan_finds(long_history, term):
    prompts, _ = searched(Prompt.objects.all(), term)
    expected = set.intersection(*(plain_search(word) for word in search_words(term)))

    assert set(prompts.values_list("pk", flat=True)) == expected


def test_a_common_words_count_is_estimated_and_the_list_still_pages(long_history, staff):
    client = Client()
    client.force_login(staff)

    first = client.get("/admin/askuser_app/prompt/", {"q": "cluster"}).content.decode()
    second = client.get("/admin/askuser_app/prompt/", {"q": "cluster", "p": "2"}).content.decode()

    assert re.search(r"about [0-9]+ results", first) and re.search(r"about [0-9]+ prompts", first)
    shown = [set(re.findall(r"/admin/askuser_app/prompt/([0-9a-f-]{36})/change/", html)) for html in (first, second)]
    assert len(shown[0]) == len(shown[1]) == 50 and not shown[0] & shown[1]


def test_the_unsearched_list_counts_only_to_its_bound(long_history, staff):
    client = Client()
    client.force_login(staff)

    with CaptureQueriesContext(connection) as queries:
        listing = client.get("/admin/askuser_app/prompt/").content.decode()

    assert "more than 1000 prompts" in listing
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert counts and all("LIMIT" in sql.upper() for sql in counts)
