"""The create path's one raw statement (``services.SESSION_INSERT``) writes the
row the ORM would, on SQLite and PostgreSQL alike; it fails when a change to
the Session model or the framework leaves the statement behind."""

from __future__ import annotations

import pytest
from django.db import transaction

from askuser_app import services
from askuser_app.models import Session

from .conftest import payload

pytestmark = pytest.mark.django_db(transaction=True)

# Set by the database or the statement, not by what the row describes.
GENERATED = {"id", "key", "created_at"}


def row(session: Session) -> dict:
    return {k: v for k, v in Session.objects.filter(pk=session.pk).values().get().items() if k not in GENERATED}


def test_a_new_session_is_the_row_the_orm_would_write(agent):
    with transaction.atomic():
        inserted, created = services._session_for(agent, "raw")
    by_orm = Session.objects.create(owner_id=agent.owner_id, key="orm", agent=agent)

    assert created
    assert Session.objects.get(pk=inserted.pk).key == "raw"
    assert row(inserted) == row(by_orm)
    assert Session.objects.get(pk=inserted.pk).created_at == inserted.created_at


def test_an_existing_session_is_found_not_doubled(agent, other_user):
    other_agent, _ = services.create_agent("other", agent.owner)
    with transaction.atomic():
        first, made_first = services._session_for(agent, "shared")
    with transaction.atomic():
        again, made_again = services._session_for(other_agent, "shared")
    with transaction.atomic():
        elsewhere, made_elsewhere = services._session_for(services.create_agent("b", other_user)[0], "shared")

    assert (made_first, made_again, made_elsewhere) == (True, False, True)
    assert again.pk == first.pk and elsewhere.pk != first.pk
    # The session remembers the agent that last used it.
    assert Session.objects.get(pk=first.pk).agent_id == other_agent.pk
    assert Session.objects.filter(key="shared").count() == 2


def test_a_create_in_a_new_session_stores_everything_in_it(api, owner):
    response = api.ask(payload(session="fresh-one"))

    assert response.status_code == 201, response.content
    session = Session.objects.get(owner=owner, key="fresh-one")
    prompt = session.prompts.get()
    assert str(prompt.pk) == response.json()["id"]
    assert [o.label for o in prompt.questions.get().options.all()] == ["Staging (Recommended)", "Production"]
    assert prompt.events.get().kind == "created"
