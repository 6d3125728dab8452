"""The agent HTTP API: creating, cancelling, aborting, refusals and authorisation."""

from __future__ import annotations

import pytest

from askuser_app.domain import services
from askuser_app.models import Prompt, PromptEvent, Run, Session
from tests.conftest import AgentClient, payload


def test_it_creates_a_pending_prompt(api, agent):
    response = api.ask(payload(run_id="run-1"))

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "status", "expires_at", "extended", "warnings", "session", "run_id", "timeoutSeconds"}
    assert (body["status"], body["session"], body["run_id"], body["warnings"]) == ("pending", "support-42", "run-1", [])
    assert body["extended"] == 0
    assert response["Location"] == f"/api/v1/prompts/{body['id']}"
    prompt = Prompt.objects.get(pk=body["id"])
    assert (prompt.agent, prompt.session.owner, prompt.status) == (agent, agent.owner, "pending")
    assert list(prompt.events.values_list("kind", flat=True)) == ["created"]


def test_a_create_in_a_new_session_is_one_short_transaction(api, django_assert_max_num_queries, settings):
    settings.ASKUSER_RATE_LIMIT = 0
    # Through the application, on its agent thread, which shares the test's connection (tests/conftest.py).
    assert api.ask(payload(session="warm-up")).status_code == 201  # the token's first use also records it

    # The token, BEGIN, the session and the run (one statement each), the prompt, its
    # questions, their options, the event, whom to email and which devices to push to, COMMIT.
    with django_assert_max_num_queries(12):
        assert api.ask(payload(session="fresh")).status_code == 201


def test_a_new_prompt_reads_as_pending(api, asked):
    body = api.get(f"/prompts/{asked.pk}").json()

    assert body["status"] == "pending" and body["id"] == str(asked.pk) and body["expires_at"].endswith("Z")


def test_a_session_is_created_on_first_use_and_reused(api, owner):
    first = api.ask(payload()).json()
    api.post(f"/prompts/{first['id']}/cancel")
    api.ask(payload())

    assert Session.objects.filter(owner=owner, key="support-42").count() == 1


def test_it_refuses_a_second_pending_prompt_in_the_session(api, asked):
    response = api.ask(payload())

    assert response.status_code == 409
    assert response.json()["error"] == "session_busy"
    assert str(asked.pk) in response.json()["detail"]
    assert Prompt.objects.count() == 1


def test_another_session_may_ask_at_the_same_time(api, asked):
    assert api.ask(payload(session="support-43")).status_code == 201


def test_it_refuses_a_subagent_and_stores_nothing(api):
    response = api.ask(payload(run_id="child-1", run_kind="subagent"))

    assert response.status_code == 403
    assert "main session" in response.json()["detail"]
    assert not Prompt.objects.exists() and not Run.objects.exists() and not Session.objects.exists()


@pytest.mark.parametrize(
    "headers,words",
    [
        ({}, "Authorization: Bearer"),
        ({"Authorization": "Bearer au_not-a-real-token"}, "Unknown agent token"),
        ({"Authorization": "Token something"}, "Authorization: Bearer"),
    ],
)
def test_it_refuses_a_missing_or_unknown_token(db, headers, words):
    client = AgentClient(None)

    for response in (client.ask(payload(), headers=headers), client.get("/prompts/0", headers=headers)):
        assert response.status_code == 401
        assert words in response.json()["detail"]
        assert response["WWW-Authenticate"] == "Bearer"
    assert not Prompt.objects.exists()


def test_it_refuses_a_revoked_token_everywhere(api, agent, asked):
    services.revoke_agent(agent)

    for response in (
        api.ask(payload(session="s2")),
        api.get(f"/prompts/{asked.pk}"),
        api.post(f"/prompts/{asked.pk}/cancel"),
        api.post("/runs/r1/abort"),
    ):
        assert response.status_code == 401
        assert "revoked" in response.json()["detail"]
    assert Prompt.objects.count() == 1
    assert Prompt.objects.get().is_pending


def test_another_owners_prompt_does_not_exist_for_an_agent(asked, other_token):
    intruder = AgentClient(other_token)

    for response in (
        intruder.get(f"/prompts/{asked.pk}"),
        intruder.get(f"/prompts/{asked.pk}?wait=1"),
        intruder.post(f"/prompts/{asked.pk}/cancel"),
    ):
        assert response.status_code == 404
    asked.refresh_from_db()
    assert asked.is_pending


def test_session_keys_are_scoped_to_the_owner(api, asked, other_token):
    response = AgentClient(other_token).ask(payload())

    assert response.status_code == 201
    assert Session.objects.filter(key="support-42").count() == 2


def test_an_unknown_prompt_id_is_not_found(api):
    assert api.get("/prompts/8d0e3f43-8a3c-4b7e-9d55-3d9f0ad9e3a1").status_code == 404
    assert api.get("/prompts/not-a-uuid").status_code == 404
    assert api.post("/prompts/not-a-uuid/cancel").status_code == 404


def test_an_idempotent_retry_returns_the_same_prompt(api):
    first = api.ask(payload(), headers={"Idempotency-Key": "call-7"})
    second = api.ask(payload(), headers={"Idempotency-Key": "call-7"})

    assert (first.status_code, second.status_code) == (201, 201)
    assert first.json() == second.json()
    assert second["Idempotent-Replayed"] == "true"
    assert Prompt.objects.count() == 1


def test_an_idempotent_retry_after_resolution_returns_the_resolved_prompt(api):
    first = api.ask(payload(), headers={"Idempotency-Key": "call-8"}).json()
    api.post(f"/prompts/{first['id']}/cancel")

    again = api.ask(payload(), headers={"Idempotency-Key": "call-8"}).json()

    assert (again["id"], again["status"]) == (first["id"], "no_answer")
    assert Prompt.objects.count() == 1


def test_an_idempotency_key_reused_for_another_request_is_refused(api):
    api.ask(payload(), headers={"Idempotency-Key": "call-9"})

    response = api.ask(payload(session="elsewhere"), headers={"Idempotency-Key": "call-9"})

    assert response.status_code == 409
    assert response.json()["error"] == "idempotency_key_reused"
    assert Prompt.objects.count() == 1


def test_cancel_resolves_as_no_answer(api, asked):
    response = api.post(f"/prompts/{asked.pk}/cancel")

    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["reason"], body["surface"]) == ("no_answer", "cancelled", "api")
    assert api.get(f"/prompts/{asked.pk}").json() == body


def test_cancelling_twice_is_a_conflict_that_says_what_happened(api, asked):
    api.post(f"/prompts/{asked.pk}/cancel")

    response = api.post(f"/prompts/{asked.pk}/cancel")

    assert response.status_code == 409
    assert "cancelled by the agent at" in response.json()["detail"]
    assert response.json()["prompt"]["reason"] == "cancelled"
    assert asked.events.filter(kind__in=PromptEvent.TERMINAL).count() == 1


def test_cancelling_an_answered_prompt_is_refused_and_keeps_the_answer(api, asked, owner):
    services.answer(asked, {"deploy_target": "Production"}, by=owner, surface="web")

    response = api.post(f"/prompts/{asked.pk}/cancel")

    assert response.status_code == 409
    assert "already answered on the web by alice at" in response.json()["detail"]
    assert api.get(f"/prompts/{asked.pk}").json()["status"] == "answered"


def test_aborting_a_run_cancels_its_pending_prompt_and_stops_it_asking(api):
    created = api.ask(payload(run_id="run-5")).json()

    response = api.post("/runs/run-5/abort")

    assert response.status_code == 200
    body = response.json()
    assert (body["run_id"], body["status"], body["cancelled_prompt"]) == ("run-5", "aborted", created["id"])
    assert (body["result"]["status"], body["result"]["reason"]) == ("no_answer", "aborted")
    refused = api.ask(payload(run_id="run-5", session="support-99"))
    assert refused.status_code == 409
    assert "aborted" in refused.json()["detail"]


def test_aborting_a_run_with_nothing_pending_still_stops_it_asking(api):
    response = api.post("/runs/never-asked/abort")

    assert response.status_code == 200
    assert response.json()["cancelled_prompt"] is None
    assert api.ask(payload(run_id="never-asked")).status_code == 409


def test_aborting_is_scoped_to_the_agent(api, other_token):
    created = api.ask(payload(run_id="run-6")).json()

    AgentClient(other_token).post("/runs/run-6/abort")

    assert api.get(f"/prompts/{created['id']}").json()["status"] == "pending"


def test_a_run_stays_in_its_session(api):
    created = api.ask(payload(run_id="run-7")).json()
    api.post(f"/prompts/{created['id']}/cancel")

    response = api.ask(payload(run_id="run-7", session="support-other"))

    assert response.status_code == 409
    assert "belongs to session support-42" in response.json()["detail"]


def test_a_negative_wait_is_refused(api, asked):
    response = api.get(f"/prompts/{asked.pk}?wait=-1")

    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "wait"


def test_the_openapi_document_lists_every_operation(api):
    document = api.get("/openapi.json").json()

    operations = {(path, method) for path, item in document["paths"].items() for method in item}
    assert operations >= {
        ("/api/v1/prompts", "post"),
        ("/api/v1/prompts/{prompt_id}", "get"),
        ("/api/v1/prompts/{prompt_id}/cancel", "post"),
        ("/api/v1/runs/{run_id}/abort", "post"),
        ("/api/v1/tool", "get"),
    }
    body = document["paths"]["/api/v1/prompts"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/CreatePromptIn"}
    assert "QuestionIn" in document["components"]["schemas"]


def test_the_docs_page_is_served(client):
    response = client.get("/api/v1/docs")

    assert response.status_code == 200
    assert b"openapi.json" in response.content


def test_an_unknown_api_path_is_a_json_404(api):
    response = api.get("/no-such-thing")

    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
