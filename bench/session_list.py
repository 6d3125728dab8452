"""``python -m bench.session_list``: what the sessions list costs a person with many ended sessions.

A session per agent conversation means one person can collect thousands of
sessions. This fills a fresh SQLite database (in a temporary ASKUSER_DATA_DIR)
with ``--idle`` ended sessions and ``--live`` recent ones, then times rendering
the list as the page shows it (idle ones left out) and with ``?all=1`` (every
session, as the list was before idle ones were hidden).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable


def timed(render: Callable[[], str], rounds: int) -> tuple[float, int]:
    """Median milliseconds per render, and the size of the HTML."""
    html = render()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        render()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), len(html)


def populate(idle: int, live: int) -> object:
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from askuser_app.domain import services
    from askuser_app.models import Message, Session

    user = get_user_model().objects.create(username="bench")
    agent, _ = services.create_agent("bench", user)
    long_ago = timezone.now() - timedelta(days=3)
    sessions = Session.objects.bulk_create(
        Session(owner=user, agent=agent, key=f"mcp-{n:012x}", title=f"client {n}", created_at=long_ago)
        for n in range(idle)
    )
    Message.objects.bulk_create(
        Message(session=s, author="agent", text="Done.", agent=agent, created_at=long_ago) for s in sessions
    )
    for n in range(live):
        services.post_agent_message(agent, f"live-{n}", "Working on it.", title=f"live client {n}")
    return user


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=5000)
    parser.add_argument("--live", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    os.environ["ASKUSER_DATA_DIR"] = tempfile.mkdtemp(prefix="askuser-bench-")
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlui.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from askuser_app.web import ui

    call_command("migrate", verbosity=0)
    user = populate(args.idle, args.live)
    print(f"sessions list, {args.idle} idle + {args.live} live sessions, median of {args.rounds} renders")
    for label, everything in (("as shown (idle left out)", False), ("?all=1 (every session)", True)):
        ms, size = timed(lambda everything=everything: ui.render_sessions(user, everything=everything), args.rounds)
        print(f"  {label:<26} {ms:8.1f} ms  {size / 1024:8.1f} KiB of HTML")


if __name__ == "__main__":
    main()
