"""One table of outcome and surface words: the timeline, the admin and the agent agree."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from askuser_app.domain import contract, services
from askuser_app.models import Prompt
from tests.conftest import AgentClient, payload


def words(response) -> str:
    assert response.status_code == 200, response.status_code
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def expire(prompt: Prompt, agent, owner, staff) -> None:
    Prompt.objects.filter(pk=prompt.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    services.expire(Prompt.objects.get(pk=prompt.pk))


OUTCOMES = {
    "answered on the web": (
        lambda p, agent, owner, staff: services.answer(p, {"deploy_target": "Production"}, by=owner, surface="web"),
        "Answered on the web by alice",
        "This prompt was already answered on the web by alice at",
        "Deploy: Production",
    ),
    "answered by a text reply": (
        lambda p, agent, owner, staff: services.post_user_message(p.session, owner, "2"),
        "Answered by a text reply by alice",
        "This prompt was already answered by a text reply by alice at",
        "Deploy: Production",
    ),
    "skipped": (
        lambda p, agent, owner, staff: services.skip_all(p, by=owner, surface="web"),
        "Skipped on the web by alice",
        "This prompt was already skipped on the web by alice at",
        "Deploy: Skipped",
    ),
    "cancelled by the agent": (
        lambda p, agent, owner, staff: services.cancel(p, agent=agent),
        "Cancelled by the agent",
        "This prompt was cancelled by the agent at",
        "Deploy: Cancelled",
    ),
    "cancelled by staff": (
        lambda p, agent, owner, staff: services.cancel(p, by=staff, surface="admin"),
        "Cancelled by sam in the admin",
        "This prompt was cancelled by sam in the admin at",
        "Deploy: Cancelled",
    ),
    "aborted": (
        lambda p, agent, owner, staff: services.abort_run(agent, p.run.run_id),
        "Cancelled: the agent's run was aborted",
        "because the agent's run was aborted.",
        "Deploy: Cancelled",
    ),
    "expired": (
        expire,
        "Expired: no answer before the deadline",
        "answers are accepted only before the deadline.",
        "Deploy: Expired",
    ),
}


@pytest.mark.parametrize("outcome", OUTCOMES)
def test_each_outcome_reads_the_same_in_the_timeline_the_admin_the_result_and_the_409(
    outcome, agent, token, owner, staff
):
    resolve, caption, sentence, summary = OUTCOMES[outcome]
    prompt = services.ask(agent, contract.parse_create(payload(session="support-42", run_id="run-1"))).prompt
    resolve(prompt, agent, owner, staff)
    person, admin, api = Client(), Client(), AgentClient(token)
    person.force_login(owner)
    admin.force_login(staff)

    timeline = words(person.get("/s/support-42/"))
    detail = words(admin.get(f"/admin/askuser_app/prompt/{prompt.pk}/change/"))
    refused = api.post(f"/prompts/{prompt.pk}/cancel")
    again = words(person.post(f"/s/support-42/prompts/{prompt.pk}/answer", {"action": "skip_all"}, follow=True))

    assert caption in timeline
    assert f"Outcome: {caption}" in detail
    assert refused.status_code == 409 and sentence in refused.json()["detail"]
    assert sentence in again  # a person who tries again is told the same
    assert summary in api.get(f"/prompts/{prompt.pk}").json()["summary"]
