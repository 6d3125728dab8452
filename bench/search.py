"""Run in a server's environment, SQLite or PostgreSQL (``python -m bench.search
ROUNDS``, on a migrated database): fill the history with 100,000 prompts
(bench/history.py), then time the admin's search
for each of ``history.SEARCHES``, ``ROUNDS`` times, in process, twice over:

- the search itself: the statements the list runs for it (the count of what
  matched up to its bound, and the page of 50), next to the same unsearched;
- the whole prompt list searched, through Django's full middleware chain,
  next to the same list unsearched (the counts, the filters and 50 rows).

Prints one JSON line of milliseconds."""

from __future__ import annotations

import json
import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlui.settings")
django.setup()

from django.contrib import admin  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client, RequestFactory  # noqa: E402

from askuser_app.domain import services  # noqa: E402
from askuser_app.models import Prompt  # noqa: E402
from askuser_app.staff.admin import BoundedPaginator  # noqa: E402

from . import history  # noqa: E402
from .stats import percentile  # noqa: E402

PROMPTS = 100_000
LIST = "/admin/askuser_app/prompt/"
PROMPTS_ADMIN = admin.site.get_model_admin(Prompt)
REQUEST = RequestFactory().get(LIST)


def timed(client: Client, params: dict[str, str]) -> float:
    started = time.perf_counter()
    response = client.get(LIST, params)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.status_code
    return elapsed * 1000


def queried(term: str) -> float:
    """The list's count and first page for ``term``, as the admin searches, counts
    and orders them."""
    started = time.perf_counter()
    everything = Prompt.objects.order_by("-created_at", "-pk")
    prompts, _ = PROMPTS_ADMIN.get_search_results(REQUEST, everything, term)
    pages = BoundedPaginator(prompts, 50)
    assert pages.count >= 0
    list(pages.page(1).object_list)
    return (time.perf_counter() - started) * 1000


def figures(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"n": len(ordered), **{f"p{p}": percentile(ordered, p / 100) for p in (50, 95, 99)}, "max": ordered[-1]}


def main(rounds: int) -> None:
    owner = get_user_model().objects.create_user("bench-history", password=None)
    agent, _ = services.create_agent("bench-history", owner)
    started = time.monotonic()
    history.fill(owner.pk, agent.pk, PROMPTS)
    filled = time.monotonic() - started
    get_user_model().objects.create_user("bench-staff", password=None, is_staff=True, is_superuser=True)
    print(json.dumps({"prompts": PROMPTS, "fill_s": filled, **measure(rounds)}))


def measure(rounds: int) -> dict[str, dict[str, float]]:
    staff = get_user_model().objects.get(username="bench-staff")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(staff)
    for word in history.SEARCHES:  # warm: templates, the query plans' caches
        timed(client, {"q": word})
    search = [timed(client, {"q": word}) for _ in range(rounds) for word in history.SEARCHES]
    plain = [timed(client, {}) for _ in range(rounds * 2)]
    queries = [queried(word) for _ in range(rounds) for word in history.SEARCHES]
    unsearched = [queried("") for _ in range(rounds * 2)]
    return {
        "search": figures(search),
        "plain": figures(plain),
        "queries": figures(queries),
        "unsearched": figures(unsearched),
    }


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
