"""The SQLite backend queues a process's writers instead of letting them race."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import OperationalError, connection, transaction

from askuser_app.models import Session
from askuser_app.sqlite3.base import write_lock

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the writer queue is SQLite's"),
]

THREADS = 16
WRITES = 10


def lock() -> threading.Lock:
    return write_lock(str(connection.settings_dict["NAME"]))


def test_writers_in_many_threads_all_commit(agent):
    def write(thread: int) -> None:
        try:
            for number in range(WRITES):
                with transaction.atomic():
                    # A read, then a write: what a plain SQLite lock would make fail.
                    count = Session.objects.filter(owner_id=agent.owner_id).count()
                    Session.objects.create(owner_id=agent.owner_id, agent=agent, key=f"t{thread}-{number}-{count}")
        finally:
            connection.close()

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(write, range(THREADS)))

    assert Session.objects.count() == THREADS * WRITES
    assert not lock().locked()


def test_a_rolled_back_transaction_lets_the_next_writer_in(agent):
    with pytest.raises(RuntimeError), transaction.atomic():
        Session.objects.create(owner_id=agent.owner_id, agent=agent, key="rolled-back")
        assert lock().locked()
        raise RuntimeError("changed my mind")

    assert not lock().locked()
    assert not Session.objects.filter(key="rolled-back").exists()


def test_the_lock_is_held_for_the_transaction_only(agent):
    with transaction.atomic():
        Session.objects.create(owner_id=agent.owner_id, agent=agent, key="committed")
        assert lock().locked()
    assert not lock().locked()


def test_a_writer_that_cannot_get_the_lock_in_time_says_the_database_is_locked(agent, monkeypatch):
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", {**connection.settings_dict["OPTIONS"], "timeout": 0})
    lock().acquire()
    try:
        with pytest.raises(OperationalError, match="database is locked"), transaction.atomic():
            Session.objects.create(owner_id=agent.owner_id, agent=agent, key="never")
    finally:
        lock().release()
    assert not connection.in_atomic_block
    assert not Session.objects.filter(key="never").exists()
