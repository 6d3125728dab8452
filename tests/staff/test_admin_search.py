"""Admin search over a long history on PostgreSQL: one trigram index, same answers."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.db import connection
from django.db.models import Q
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils.text import smart_split, unescape_string_literal

from askuser_app.models import Prompt
from tests.conftest import SCALED, SCALED_REASON

pytestmark = [pytest.mark.scaled, pytest.mark.skipif(not SCALED, reason=SCALED_REASON), pytest.mark.django_db]


def searched(term: str) -> set:
    """The prompts the admin's search finds for ``term``."""
    prompts, _ = admin.site.get_model_admin(Prompt).get_search_results(
        RequestFactory().get("/"), Prompt.objects.all(), term
    )
    return set(prompts.values_list("pk", flat=True))


def plain_search(word: str) -> set:
    """What the search must find, asked the slow way: joins and a scan of every column it covers."""
    found = (
        Q(session__key__icontains=word)
        | Q(questions__text__icontains=word)
        | Q(questions__header_full__icontains=word)
        | Q(questions__options__label__icontains=word)
        | Q(questions__answer__free_text__icontains=word)
    )
    return set(Prompt.objects.filter(found).values_list("pk", flat=True).distinct())


def words(term: str) -> list[str]:
    return [unescape_string_literal(w) if w[0] in "\"'" else w for w in smart_split(term)]


@pytest.mark.parametrize("word", ["harbor-41", "rollout 417", "eu-west-123", "release notes of 4242", "fill-417"])
def test_the_trigram_index_answers_the_search_of_each_column(long_history, word):
    with connection.cursor() as cursor:
        # Only what the index answers, or a scan: whether the planner would rather walk the
        # newest first (its estimate of a word's prompts varies from one ANALYZE to the next).
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = Prompt.objects.filter(search_text__icontains=word).order_by("-created_at")[:50].explain()

    assert "Bitmap Index Scan on prompt_search_trgm_idx" in plan


@pytest.mark.parametrize(
    "term",
    [
        "fill-417",
        "QUARTZ-41",
        '"rollout 7"',
        '"release notes of 7"',
        "eu-west-12",
        "nothing-like-it",
        "cluster",
        "quartz migrate",
        "of 4242",
        "harbor-41 eu-west-12",
    ],
)
def test_the_search_over_100000_prompts_finds_what_a_plain_scan_finds(long_history, term):
    assert searched(term) == set.intersection(*(plain_search(word) for word in words(term)))


def test_the_admin_list_searches_100000_prompts_by_session_key(long_history, staff):
    client = Client()
    client.force_login(staff)

    listing = client.get("/admin/askuser_app/prompt/", {"q": "fill-417"}).content.decode()

    assert "100 results" in listing and "fill-417" in listing


def test_a_rare_words_page_is_read_by_the_keys_its_count_found(long_history, staff):
    client = Client()
    client.force_login(staff)

    with CaptureQueriesContext(connection) as queries:
        listing = client.get("/admin/askuser_app/prompt/", {"q": "eu-west-123"}).content.decode()

    # About 400 (which options hold it depends on the questions' ids): counted to the last.
    assert 0 < int(re.search(r"([0-9]+) results", listing).group(1)) < 1000 and "eu-west-123" in listing
    [page_read] = [q["sql"] for q in queries.captured_queries if "%eu-west-123%" in q["sql"] and "LIMIT 50" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {page_read}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "prompt_created_idx" not in plan, plan  # the keys (or the word) looked up, not a walk newest first


def test_a_common_words_count_stops_at_its_bound_and_the_list_still_pages(long_history, staff):
    client = Client()
    client.force_login(staff)

    first = client.get("/admin/askuser_app/prompt/", {"q": "cluster"}).content.decode()
    second = client.get("/admin/askuser_app/prompt/", {"q": "cluster", "p": "2"}).content.decode()

    assert "more than 1000 results" in first and "more than 1000 prompts" in first
    shown = [set(re.findall(r"/admin/askuser_app/prompt/([0-9a-f-]{36})/change/", html)) for html in (first, second)]
    assert len(shown[0]) == len(shown[1]) == 50 and not shown[0] & shown[1]


def test_the_unsearched_list_counts_only_to_its_bound(long_history, staff):
    client = Client()
    client.force_login(staff)

    with CaptureQueriesContext(connection) as queries:
        listing = client.get("/admin/askuser_app/prompt/").content.decode()

    assert "more than 1000 prompts" in listing
    counted = [q["sql"] for q in queries.captured_queries if "LIMIT 1001" in q["sql"]]
    assert counted and not [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
