"""What this process counts for ``/metrics`` (``askuser_app/server/metrics.py`` serves it).

Prometheus' own client library keeps them in its default registry. They are
this process's: in the scaled mode each server process counts its own turns,
attempts, answers, sockets and waits, and Prometheus scrapes each process as
a target of its own (``docs/MONITORING.md``), to be summed across targets.
What every process would report alike (prompts by status, hosts paused) is
not counted here but read from the database at scrape time.

Each is moved at the one place its event happens: a loop's turn in
``background.Loop``, an attempt in the delivery engine's ``record``, a socket
held in the live consumer, a wait parked in ``agents.waits``; the answer time
by ``prompt_resolved``, which the assembled server's effects call (``server/effects.py``).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from prometheus_client import Counter, Gauge, Histogram

from askuser_app.models import Prompt

LOOP_TURNS = Counter("askuser_loop_turns", "Turns of a background loop in this process.", ["loop"])
LOOP_FAILURES = Counter(
    "askuser_loop_failures", "Turns of a background loop that raised (logged, tried again).", ["loop"]
)
DELIVERY_ATTEMPTS = Counter(
    "askuser_delivery_attempts",
    "Delivery attempts recorded by this process, by kind and outcome (ok, failed, timed_out).",
    ["kind", "outcome"],
)
ANSWER_SECONDS = Histogram(
    "askuser_answer_seconds",
    "From a prompt's creation to its answer, by the surface it was answered on.",
    ["surface"],
    # A person answers in seconds to an hour (timeoutSeconds is at most 3600).
    buckets=(5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600),
)
SOCKETS_OPEN = Gauge("askuser_sockets_open", "Live-update WebSockets open in this process.")
SOCKETS_VISIBLE = Gauge(
    "askuser_sockets_visible", "Live-update WebSockets in this process whose page says it is visible."
)
CONNECTIONS_HELD = Counter(
    "askuser_connections_held",
    "New connections this process paused for a turn or more of its event loop before reading them.",
)
WAITS_PARKED = Gauge("askuser_waits_parked", "Agents' waits (long-polls, hooks) parked in this process.")


def attempted(kind: str, ok: bool, timed_out: bool) -> None:
    """One delivery attempt of ``kind`` recorded."""
    outcome = "ok" if ok else "timed_out" if timed_out else "failed"
    DELIVERY_ATTEMPTS.labels(kind=kind, outcome=outcome).inc()


def prompt_resolved(prompt: Prompt, result: dict[str, Any]) -> None:
    """An answered prompt's time to answer, once its transaction commits (a rolled-back one never was)."""
    if result.get("status") != Prompt.Status.ANSWERED:
        return
    took = (timezone.now() - prompt.created_at).total_seconds()
    surface = str(result.get("surface") or "")
    transaction.on_commit(lambda: ANSWER_SECONDS.labels(surface=surface).observe(took))
