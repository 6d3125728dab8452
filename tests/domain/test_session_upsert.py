"""The create path's two raw statements (``services.SESSION_INSERT`` and
``services.RUN_UPSERT``) write the rows the ORM would, on SQLite and
PostgreSQL alike; these tests fail when a change to the Session or Run model
or the framework leaves the statements behind."""

from __future__ import annotations

import pytest
from django.db import transaction

from askuser_app.domain import services
from askuser_app.models import Run, Session
from tests.conftest import payload

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


def run_row(run: Run) -> dict:
    return {k: v for k, v in Run.objects.filter(pk=run.pk).values().get().items() if k not in {"id", "run_id"}}


def every_field(run: Run) -> dict:
    """The instance's value of every column, beside what a query reads."""
    stored = Run.objects.filter(pk=run.pk).values().get()
    return {column: (getattr(run, column), value) for column, value in stored.items()}


def read_as_stored(run: Run) -> bool:
    return all(held == stored for held, stored in every_field(run).values())


def test_a_new_run_is_the_row_the_orm_would_write(agent):
    session = Session.objects.create(owner_id=agent.owner_id, key="runs", agent=agent)
    with transaction.atomic():
        upserted = services._run_for(agent, session, "raw-run")
    by_orm = Run.objects.create(agent=agent, run_id="orm-run", session=session)

    assert Run.objects.get(pk=upserted.pk).run_id == "raw-run"
    assert {**run_row(upserted), "created_at": None} == {**run_row(by_orm), "created_at": None}
    # What the statement returned is the row as a query reads it, every field.
    assert read_as_stored(upserted)


def test_an_existing_run_is_found_not_doubled(agent):
    session = Session.objects.create(owner_id=agent.owner_id, key="runs", agent=agent)
    with transaction.atomic():
        first = services._run_for(agent, session, "again")
    with transaction.atomic():
        again = services._run_for(agent, session, "again")

    assert again.pk == first.pk
    assert read_as_stored(again)
    assert Run.objects.filter(run_id="again").count() == 1


def test_a_run_aborted_before_it_asked_keeps_no_session_and_is_refused(agent):
    services.abort_run(agent, "early")
    session = Session.objects.create(owner_id=agent.owner_id, key="runs", agent=agent)

    with pytest.raises(services.Conflict, match="was aborted at"), transaction.atomic():
        services._run_for(agent, session, "early")

    assert Run.objects.get(run_id="early").session_id is None


def test_a_run_that_never_asked_takes_the_session_it_first_asks_in(agent):
    Run.objects.create(agent=agent, run_id="idle")
    session = Session.objects.create(owner_id=agent.owner_id, key="runs", agent=agent)

    with transaction.atomic():
        run = services._run_for(agent, session, "idle")

    assert Run.objects.get(pk=run.pk).session_id == session.pk
