"""What each pytest-xdist worker keeps to itself, set before Django reads its settings.

Loaded with ``-p tests.workers`` (pyproject's ``addopts``), so that its hook runs before
pytest-django's imports ``controlui.settings``. Each worker's test database is its own
already (pytest-django suffixes its name with the worker's id, ``test_…_gw0``, for the
SQLite file too); here each worker gets its own Redis prefix, so that one worker's
cached logins, channel groups and the keys it empties between tests are never another's.
The Daphne processes a worker starts inherit it with the rest of its environment.
"""

from __future__ import annotations

import os

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        prefix = os.environ.get("ASKUSER_REDIS_PREFIX") or "askuser"
        os.environ["ASKUSER_REDIS_PREFIX"] = f"{prefix}-{worker}"
