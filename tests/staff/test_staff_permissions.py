"""Who reads the question history in the admin: Django's view permissions decide, not is_staff."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from askuser_app.domain import contract, services
from tests.conftest import make_user, payload

HISTORY_PAGES = [
    "/admin/askuser_app/prompt/",
    "/admin/askuser_app/prompt/export.csv",
    "/admin/askuser_app/prompt/dashboard/",
    "/admin/askuser_app/agent/",
    "/admin/askuser_app/session/",
    "/admin/askuser_app/run/",
    "/admin/askuser_app/webhookdelivery/",
    "/admin/askuser_app/delivery/",
    "/admin/askuser_app/chatlink/",
]


@pytest.fixture
def prompt(agent):
    return services.ask(agent, contract.parse_create(payload(session="secret-plans"))).prompt


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("url", [*HISTORY_PAGES, "{prompt}"])
def test_staff_without_view_permissions_are_refused_the_history(url, prompt):
    client = logged_in(make_user("newhire", is_staff=True))

    response = client.get(url.format(prompt=f"/admin/askuser_app/prompt/{prompt.pk}/change/"))

    assert response.status_code == 403


def test_staff_without_view_permissions_see_no_history_on_the_admin_index(prompt):
    body = logged_in(make_user("newhire", is_staff=True)).get("/admin/").content.decode()

    assert "Question history" not in body
    assert "/admin/askuser_app/" not in body


@pytest.mark.parametrize("url", HISTORY_PAGES)
def test_reviewers_read_every_part_of_the_history(url, reviewer, prompt):
    response = logged_in(reviewer).get(url)

    assert response.status_code == 200


def test_a_reviewer_reads_a_prompt_but_cannot_cancel_it_or_add_agents(reviewer, prompt):
    client = logged_in(reviewer)

    detail = client.get(f"/admin/askuser_app/prompt/{prompt.pk}/change/").content.decode()
    listing = client.get("/admin/askuser_app/prompt/").content.decode()

    assert "secret-plans" in detail and "Question history" in client.get("/admin/").content.decode()
    assert "Cancel selected pending prompts" not in listing
    assert client.get("/admin/askuser_app/agent/add/").status_code == 403


def test_the_reviewers_group_holds_the_view_permission_of_every_history_model(db):
    codenames = set(Group.objects.get(name="Reviewers").permissions.values_list("codename", flat=True))

    assert codenames >= {
        "view_prompt",
        "view_question",
        "view_answer",
        "view_agent",
        "view_session",
        "view_run",
        "view_webhookdelivery",
        "view_webhookattempt",
        "view_chatlink",
        "view_delivery",
        "view_deliveryattempt",
        "view_deliveryhost",
    }
    assert all(codename.startswith("view_") for codename in codenames)
