"""An agent's token and webhook secret: shown together once, and rotated together by staff."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from askuser_app.domain import services
from askuser_app.domain.agentauth import hash_token
from askuser_app.models import Agent
from tests.conftest import AgentClient

AGENTS = "/admin/askuser_app/agent/"


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def shown(response) -> tuple[list[str], list[str]]:
    """The tokens and webhook secrets a page shows."""
    body = response.content.decode()
    return re.findall(r'value="(au_[^"]+)"', body), re.findall(r'value="(whsec_[^"]+)"', body)


def rotate(client: Client, *agents: Agent):
    return client.post(AGENTS, {"action": "rotate", "_selected_action": [a.pk for a in agents]})


def test_the_add_agent_page_shows_the_webhook_secret_with_the_token(staff, owner):
    created = logged_in(staff).post(f"{AGENTS}add/", {"name": "deploy-bot", "owner": owner.pk})

    tokens, secrets = shown(created)
    assert secrets == [Agent.objects.get(name="deploy-bot").webhook_secret]
    assert len(tokens) == 1


def test_rotating_shows_a_new_token_and_secret_once_and_the_old_token_stops(staff, agent, token):
    old_secret = agent.webhook_secret

    response = rotate(logged_in(staff), agent)

    (new_token,), (new_secret,) = shown(response)
    agent.refresh_from_db()
    assert (agent.token_hash, agent.webhook_secret) == (hash_token(new_token), new_secret)
    assert new_secret != old_secret
    assert "no-store" in response["Cache-Control"]
    assert AgentClient(token).ask().status_code == 401
    assert AgentClient(new_token).ask().status_code == 201
    assert new_token not in logged_in(staff).get(AGENTS).content.decode()


def test_a_revoked_agent_is_not_rotated_back_to_life(staff, agent, token):
    services.revoke_agent(agent)

    response = rotate(logged_in(staff), agent)

    assert shown(response) == ([], [])
    agent.refresh_from_db()
    assert agent.token_hash == hash_token(token) and agent.revoked_at is not None


@pytest.mark.parametrize("with_change_permission", [False, True])
def test_rotating_needs_the_change_agent_permission(reviewer, agent, token, with_change_permission):
    if with_change_permission:
        reviewer.user_permissions.add(Permission.objects.get(codename="change_agent"))

    rotate(logged_in(reviewer), agent)

    agent.refresh_from_db()
    assert (agent.token_hash != hash_token(token)) is with_change_permission
