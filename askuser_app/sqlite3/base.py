"""Django's SQLite backend, with the writers of a process queued for the lock.

SQLite lets one connection write at a time. A connection that finds the
lock taken waits in SQLite's busy handler, which sleeps in growing steps (up
to 100 ms) and tries again: under contention a writer sleeps on long after
the lock is free, and which writer goes next is luck, so a few requests wait
seconds. Here a write transaction (``BEGIN IMMEDIATE``, the kind settings
ask for) first takes a lock shared by the process's connections to the
same file, so its threads queue and the next one starts as soon as the
last commits; the busy handler is left to arbitrate between processes.
"""

from __future__ import annotations

import threading

from django.db import OperationalError
from django.db.backends.sqlite3 import base

_locks: dict[str, threading.Lock] = {}
_locks_lock = threading.Lock()


def write_lock(name: str) -> threading.Lock:
    """The lock for the database file ``name``, shared by this process."""
    with _locks_lock:
        return _locks.setdefault(name, threading.Lock())


class DatabaseWrapper(base.DatabaseWrapper):
    holds_write_lock = False

    def _start_transaction_under_autocommit(self) -> None:
        # transaction_mode and these methods are the backend's own, left out of the stubs.
        if self.transaction_mode not in ("IMMEDIATE", "EXCLUSIVE"):  # type: ignore[attr-defined]
            return super()._start_transaction_under_autocommit()  # type: ignore[misc, no-any-return]
        lock = write_lock(str(self.settings_dict["NAME"]))
        # As long as SQLite itself would wait for the lock, then the same error.
        if not lock.acquire(timeout=self.settings_dict["OPTIONS"].get("timeout", 5)):
            raise OperationalError("database is locked")
        self.holds_write_lock = True
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]
        except BaseException:
            self._release_write_lock()
            raise

    def _commit(self) -> None:
        super()._commit()  # type: ignore[misc]
        # Only once committed: a failed commit is rolled back, which releases it.
        self._release_write_lock()

    def _rollback(self) -> None:
        try:
            super()._rollback()  # type: ignore[misc]
        finally:
            self._release_write_lock()

    def _close(self) -> None:
        try:
            super()._close()  # type: ignore[misc]
        finally:
            self._release_write_lock()

    def _release_write_lock(self) -> None:
        if self.holds_write_lock:
            self.holds_write_lock = False
            write_lock(str(self.settings_dict["NAME"])).release()
