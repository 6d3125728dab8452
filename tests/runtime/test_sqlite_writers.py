"""SQLite's writers, on Django's own backend: a write transaction takes the
lock when it begins (``transaction_mode="IMMEDIATE"``), a writer that finds
it taken waits for it, up to ``timeout``, and a commit appends to the
write-ahead log without waiting for the disk (``init_command``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import OperationalError, connection, transaction

from askuser_app.models import Session

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's write lock"),
]

THREADS = 16
WRITES = 10


def test_writers_in_many_threads_all_commit(agent):
    def write(thread: int) -> None:
        try:
            for number in range(WRITES):
                with transaction.atomic():
                    # A read, then a write: what a deferred transaction would fail half-way.
                    count = Session.objects.filter(owner_id=agent.owner_id).count()
                    Session.objects.create(owner_id=agent.owner_id, agent=agent, key=f"t{thread}-{number}-{count}")
        finally:
            connection.close()

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(write, range(THREADS)))

    assert Session.objects.count() == THREADS * WRITES


@pytest.fixture
def impatient(monkeypatch) -> Iterator[None]:
    """This thread's connection gives up at once when the lock is taken."""
    options = {**connection.settings_dict["OPTIONS"], "timeout": 0}
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    connection.close()  # the timeout is the connection's: reconnect with it
    yield
    connection.close()


@pytest.fixture
def reader_in_a_transaction() -> Iterator[None]:
    """Another thread inside a transaction that has only read so far."""
    began, done = threading.Event(), threading.Event()

    def read() -> None:
        try:
            with transaction.atomic():
                Session.objects.count()
                began.set()
                done.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=read)
    thread.start()
    assert began.wait(10)
    yield
    done.set()
    thread.join(10)


def test_a_transaction_holds_the_write_lock_from_its_start(agent, reader_in_a_transaction, impatient):
    # The other transaction has only read, yet holds the lock: its write can
    # never be refused half-way, after its read.
    with pytest.raises(OperationalError, match="database is locked"), transaction.atomic():
        Session.objects.create(owner_id=agent.owner_id, agent=agent, key="never")

    assert not connection.in_atomic_block


def test_a_commit_is_appended_to_the_write_ahead_log_and_synced_only_at_checkpoints():
    with connection.cursor() as cursor:
        journal = cursor.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = cursor.execute("PRAGMA synchronous").fetchone()[0]

    assert (journal, synchronous) == ("wal", 1)  # 1: NORMAL
