"""A socket's one raw statement (``socketauth.SESSION_PAGE``) reads what the
ORM reads, on SQLite and PostgreSQL alike: the session row, and what the page
must catch up on (``ui.with_catch_up``). It fails when a change to the models
or the framework leaves the statement behind."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from askuser_app.domain import contract, services
from askuser_app.models import Message, Session
from askuser_app.web import socketauth, ui
from tests.conftest import payload

pytestmark = pytest.mark.django_db(transaction=True)


def cookies_of(user) -> dict[str, str]:
    client = Client()
    client.force_login(user)
    return {"sessionid": client.cookies["sessionid"].value}


def by_orm(session: Session, since) -> dict:
    return ui.with_catch_up(Session.objects.filter(pk=session.pk), since).values("pending_id", "anything_new").get()


def read(user, key: str, since) -> tuple[Session, dict]:
    opened = socketauth.open_socket(cookies_of(user), key, since)
    assert opened.user == user and opened.session is not None
    state = vars(opened.session)
    return opened.session, {"pending_id": state["pending_id"], "anything_new": state["anything_new"]}


def ask(agent):
    return services.ask(agent, contract.parse_create(payload())).prompt


@pytest.fixture
def session(agent):
    session = services.post_agent_message(agent, "support-42", "Hello").session
    Message.objects.update(created_at=timezone.now() - timedelta(hours=1))
    return session


def states(agent, owner):
    """Each state a page can find its session in, with its cursor."""
    cursor = timezone.now() - timedelta(minutes=1)
    yield "nothing new", cursor
    prompt = ask(agent)
    yield "a prompt pending", cursor
    services.answer(prompt, {"deploy_target": "Production"}, by=owner, surface="web")
    yield "an answer since", cursor
    yield "an answer before the cursor", timezone.now() + timedelta(seconds=1)
    services.post_agent_message(agent, "support-42", "Deploying now")
    ask(agent)
    yield "a message since and a prompt pending", timezone.now() - timedelta(seconds=5)


def test_the_statement_reads_the_session_and_its_state_as_the_orm_does(agent, owner, session):
    seen = []
    for name, since in states(agent, owner):
        read_session, state = read(owner, "support-42", since)
        assert state == by_orm(session, since), name
        seen.append((state["pending_id"] is not None, state["anything_new"]))
        expected = Session.objects.filter(pk=session.pk).values().get()
        assert {k: getattr(read_session, k) for k in expected} == expected, name
    # The states differ, so the comparison covers each column.
    assert set(seen) == {(False, False), (True, False), (False, True), (True, True)}


def test_the_owner_read_with_the_session_is_the_owner(owner, session):
    read_session, _ = read(owner, "support-42", None)

    assert read_session.owner == owner
    assert read_session.owner.username == "alice"  # what the statement did not read is read when used
    assert "owner_password" not in vars(read_session)  # the hash is not left on the session


def test_an_inactive_owner_and_another_users_login_are_refused(owner, other_user, session):
    assert socketauth.open_socket(cookies_of(other_user), "support-42").session is None
    cookies = cookies_of(owner)
    owner.is_active = False
    owner.save()

    assert socketauth.open_socket(cookies, "support-42").user is None
