"""Staff's review (askuser_app/staff/): the admin's history, its search, the dashboard,
and who may read them."""

from __future__ import annotations

import pytest
from django.test import Client

from askuser_app.domain import services
from bench import history
from tests.conftest import make_user


@pytest.fixture(scope="module")
def long_history(django_db_setup, django_db_blocker):
    """100,000 resolved prompts over 1,000 sessions, made once for a module's tests
    and removed after them (PostgreSQL only: bench/history.py)."""
    with django_db_blocker.unblock():
        historian = make_user("historian")
        agent, _ = services.create_agent("historian", historian)
        history.fill(historian.pk, agent.pk, 100_000)
    yield 100_000
    with django_db_blocker.unblock():
        history.clear(historian.pk)


@pytest.fixture
def staff_client(staff) -> Client:
    """A member of staff logged in to the admin."""
    client = Client()
    client.force_login(staff)
    return client
