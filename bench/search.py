"""Run in the scaled environment (``python -m bench.search ROUNDS``): fill the
history with 100,000 prompts (bench/history.py), then time the admin's prompt
list searched for each of ``history.SEARCHES``, ``ROUNDS`` times, in process
through Django's full middleware chain. Its floor is the same list without a
search: what the page costs before the search adds anything. Prints one JSON
line of milliseconds."""

from __future__ import annotations

import json
import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlui.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402

from askuser_app import services  # noqa: E402

from . import history  # noqa: E402
from .stats import percentile  # noqa: E402

PROMPTS = 100_000
LIST = "/admin/askuser_app/prompt/"


def timed(client: Client, params: dict[str, str]) -> float:
    started = time.perf_counter()
    response = client.get(LIST, params)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.status_code
    return elapsed * 1000


def figures(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"n": len(ordered), **{f"p{p}": percentile(ordered, p / 100) for p in (50, 95, 99)}, "max": ordered[-1]}


def main(rounds: int) -> None:
    owner = get_user_model().objects.create_user("bench-history", password=None)
    agent, _ = services.create_agent("bench-history", owner)
    started = time.monotonic()
    history.fill(owner.pk, agent.pk, PROMPTS)
    filled = time.monotonic() - started
    staff = get_user_model().objects.create_user("bench-staff", password=None, is_staff=True, is_superuser=True)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(staff)
    for word in history.SEARCHES:  # warm: templates, the query plans' caches
        timed(client, {"q": word})
    search = [timed(client, {"q": word}) for _ in range(rounds) for word in history.SEARCHES]
    plain = [timed(client, {}) for _ in range(rounds * 2)]
    print(json.dumps({"prompts": PROMPTS, "fill_s": filled, "search": figures(search), "plain": figures(plain)}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
