"""The agent token's lookup (``agentauth.AGENT_BY_TOKEN``, one raw statement on every agent
request): the agent it builds is the ORM's, and a revoked or rotated token is refused at
once, by every server process, since nothing of a token is kept between requests."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from askuser_app.domain import agentauth, services
from askuser_app.models import Agent
from tests.conftest import auth, payload

pytestmark = pytest.mark.django_db(transaction=True)


def looked_up(token: str) -> Agent:
    return agentauth.agent_for(f"Bearer {token}")


def test_the_agent_looked_up_is_the_one_the_orm_reads(agent, token):
    found = looked_up(token)
    by_orm = Agent.objects.get(pk=agent.pk)

    loaded = set(agentauth.AGENT_COLUMNS)
    assert {f: getattr(found, f) for f in loaded} == {f: getattr(by_orm, f) for f in loaded}
    # Every other column is left to load on use (no agent request reads one), none guessed.
    assert loaded | found.get_deferred_fields() == {f.attname for f in Agent._meta.concrete_fields}
    assert (found.created_at, found.revoked_at) == (by_orm.created_at, None)  # loaded when used


def test_last_use_is_written_at_most_once_a_minute(agent, token):
    looked_up(token)
    first = Agent.objects.get(pk=agent.pk).last_used_at
    looked_up(token)
    assert first is not None and Agent.objects.get(pk=agent.pk).last_used_at == first

    Agent.objects.filter(pk=agent.pk).update(last_used_at=first - agentauth.TOUCH_EVERY - timedelta(seconds=1))
    looked_up(token)
    assert Agent.objects.get(pk=agent.pk).last_used_at > first - timedelta(seconds=1)


def test_unknown_and_revoked_tokens_are_told_apart(agent, token):
    with pytest.raises(agentauth.Unauthorized, match="Unknown agent token"):
        looked_up(token + "x")
    looked_up(token)
    services.revoke_agent(agent)
    revoked_at = Agent.objects.get(pk=agent.pk).revoked_at
    with pytest.raises(agentauth.Unauthorized, match=f"revoked on {revoked_at:%Y-%m-%d at %H:%M} UTC"):
        looked_up(token)


def test_every_process_refuses_a_token_the_moment_it_is_revoked_or_rotated(owner, start_server):
    first, second = start_server(), start_server()
    revoked_agent, revoked = services.create_agent("to-revoke", owner)
    rotated_agent, rotated = services.create_agent("to-rotate", owner)
    n = iter(range(100))

    def ask(server, token: str) -> int:
        with httpx.Client(base_url=server.url, timeout=20) as agent:
            return agent.post("/api/v1/prompts", json=payload(session=f"s-{next(n)}"), headers=auth(token)).status_code

    # Each process has served both tokens, as a process that kept them would have.
    assert [ask(server, t) for server in (first, second) for t in (revoked, rotated)] == [201] * 4

    services.revoke_agent(revoked_agent)
    new = services.rotate_agent(rotated_agent)
    assert new is not None

    assert [ask(server, t) for server in (first, second) for t in (revoked, rotated)] == [401] * 4
    assert [ask(server, new) for server in (first, second)] == [201, 201]
