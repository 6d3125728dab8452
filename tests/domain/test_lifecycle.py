"""SPEC 3.2/3.3: every transition out of pending, its result and its event trail."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from askuser_app.domain import contract, services
from askuser_app.models import Answer, Prompt, PromptEvent
from askuser_app.server import expiry
from tests.conftest import EXTRAS, QUESTION, payload


def ask(agent, *questions, **fields):
    request = contract.parse_create(payload(*questions, **fields))
    return services.ask(agent, request).prompt


def terminal_events(prompt):
    return list(prompt.events.filter(kind__in=PromptEvent.TERMINAL).values_list("kind", flat=True))


def make_overdue(prompt):
    Prompt.objects.filter(pk=prompt.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    prompt.refresh_from_db()


def test_an_answer_gives_exactly_the_spec_result(agent, owner):
    prompt = ask(agent)

    services.answer(prompt, {"deploy_target": ["Staging (Recommended)"]}, by=owner, surface="web")

    result = services.result_expiring_if_overdue(Prompt.objects.get(pk=prompt.pk))
    assert {k: result[k] for k in ("status", "answers")} == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}},
    }
    assert (result["id"], result["resolved_by"], result["surface"], result["reason"]) == (
        str(prompt.pk),
        "alice",
        "web",
        None,
    )
    assert result["details"] == {
        "deploy_target": {"options": ["Staging (Recommended)"], "free_text": None, "skipped": False}
    }
    assert result["summary"] == ["Deploy: Staging (Recommended)"]
    assert result["skipped"] == []
    assert terminal_events(prompt) == ["answered"]
    assert prompt.events.get(kind="answered").actor == "alice"


def test_a_single_select_value_is_an_array(agent, owner):
    prompt = ask(agent)

    services.answer(prompt, {"deploy_target": "Production"}, by=owner)

    assert prompt.result["answers"]["answers"]["deploy_target"] == ["Production"]


def test_labels_match_case_insensitively_and_come_back_as_written(agent, owner):
    prompt = ask(agent)

    services.answer(prompt, {"deploy_target": "  staging (RECOMMENDED) "}, by=owner)

    assert prompt.result["answers"]["answers"]["deploy_target"] == ["Staging (Recommended)"]


def test_free_text_is_an_answer_of_its_own(agent, owner):
    prompt = ask(agent)

    services.answer(prompt, {"deploy_target": ["Canary in eu-west first"]}, by=owner, surface="web")

    result = prompt.result
    assert result["answers"]["answers"]["deploy_target"] == ["Canary in eu-west first"]
    assert result["details"]["deploy_target"] == {
        "options": [],
        "free_text": "Canary in eu-west first",
        "skipped": False,
    }
    assert result["summary"] == ["Deploy: “Canary in eu-west first”"]
    assert Answer.objects.get(question__prompt=prompt).free_text == "Canary in eu-west first"


def test_multi_select_keeps_option_order_and_adds_free_text_last(agent, owner):
    prompt = ask(agent, EXTRAS)

    services.answer(prompt, {"extras": ["Blog post", "Release video", "docs"]}, by=owner)

    assert prompt.result["answers"]["answers"]["extras"] == ["Docs", "Blog post", "Release video"]
    assert prompt.result["details"]["extras"]["options"] == ["Docs", "Blog post"]
    assert prompt.result["details"]["extras"]["free_text"] == "Release video"


def test_a_skipped_question_is_reported_with_an_empty_array(agent, owner):
    prompt = ask(agent, QUESTION, EXTRAS)

    services.answer(prompt, {"deploy_target": "Production", "extras": None}, by=owner)

    result = prompt.result
    assert result["status"] == "answered"
    assert result["answers"]["answers"] == {"deploy_target": ["Production"], "extras": []}
    assert result["skipped"] == ["extras"]
    assert result["summary"] == ["Deploy: Production", "Extras: Skipped"]
    assert Answer.objects.get(question__key="extras").skipped


def test_every_question_skipped_is_no_answer_skipped(agent, owner):
    prompt = ask(agent, QUESTION, EXTRAS)

    services.answer(prompt, {"deploy_target": [], "extras": None}, by=owner, surface="web")

    assert prompt.result["status"] == "no_answer"
    assert "answers" not in prompt.result
    assert (prompt.reason, prompt.result["resolved_by"]) == ("skipped", "alice")
    assert terminal_events(prompt) == ["skipped"]


def test_skip_all_resolves_as_no_answer(agent, owner):
    prompt = ask(agent, QUESTION, EXTRAS)

    services.skip_all(prompt, by=owner, surface="web")

    result = services.result_expiring_if_overdue(Prompt.objects.get(pk=prompt.pk))
    assert (result["status"], result["reason"], result["surface"]) == ("no_answer", "skipped", "web")
    assert result["summary"] == ["Deploy: Skipped", "Extras: Skipped"]


@pytest.mark.parametrize(
    "answers,words",
    [
        ({"deploy_target": ["Production", "Staging (Recommended)"]}, "single-select"),
        ({"deploy_target": ["Production", "my own"]}, "single-select"),
        ({"deploy_target": "x", "colour": "red"}, "Unknown question id 'colour'"),
        ({}, "No answer for question 'deploy_target'"),
        ({"deploy_target": "x" * 2001}, "at most 2000"),
        ({"deploy_target": "bad\x00byte"}, "control characters"),
        ({"deploy_target": [5]}, "must be a string"),
    ],
)
def test_an_unreadable_answer_is_refused_and_changes_nothing(agent, owner, answers, words):
    prompt = ask(agent)

    with pytest.raises(services.InvalidAnswer, match=words):
        services.answer(prompt, answers, by=owner)

    prompt.refresh_from_db()
    assert prompt.is_pending and prompt.result is None
    assert not Answer.objects.exists()
    assert terminal_events(prompt) == []


def test_two_free_texts_for_one_question_are_refused(agent, owner):
    prompt = ask(agent, EXTRAS)

    with pytest.raises(services.InvalidAnswer, match="at most one answer of your own"):
        services.answer(prompt, {"extras": ["mine", "also mine"]}, by=owner)


def test_a_cancel_gives_no_answer_cancelled(agent):
    prompt = ask(agent)

    services.cancel(prompt, agent=agent)

    assert {k: prompt.result[k] for k in ("status", "reason", "surface")} == {
        "status": "no_answer",
        "reason": "cancelled",
        "surface": "api",
    }
    assert prompt.result["summary"] == ["Deploy: Cancelled"]
    assert terminal_events(prompt) == ["cancelled"]


@pytest.mark.parametrize("outcome", ["cancelled", "expired", "aborted"])
def test_a_result_without_an_answer_still_carries_details_and_skipped(agent, outcome):
    prompt = ask(agent, QUESTION, EXTRAS, run_id="run-1")

    if outcome == "cancelled":
        services.cancel(prompt, agent=agent)
    elif outcome == "aborted":
        services.abort_run(agent, "run-1")
    else:
        Prompt.objects.filter(pk=prompt.pk).update(expires_at=timezone.now())
        services.expire(Prompt.objects.get(pk=prompt.pk))

    result = Prompt.objects.get(pk=prompt.pk).result
    assert (result["status"], result["reason"]) == ("no_answer", outcome)
    nothing = {"options": [], "free_text": None, "skipped": False}
    assert result["details"] == {"deploy_target": nothing, "extras": nothing}
    assert result["skipped"] == []  # nobody skipped anything: nobody answered
    assert "answers" not in result


def test_skip_all_lists_every_question_as_skipped(agent, owner):
    prompt = ask(agent, QUESTION, EXTRAS)

    services.skip_all(prompt, by=owner, surface="web")

    result = Prompt.objects.get(pk=prompt.pk).result
    assert result["skipped"] == ["deploy_target", "extras"]
    assert result["details"]["extras"] == {"options": [], "free_text": None, "skipped": True}


def test_an_overdue_prompt_reads_as_expired_at_its_deadline(agent):
    prompt = ask(agent)
    make_overdue(prompt)

    result = services.result_expiring_if_overdue(prompt)

    assert (result["status"], result["reason"]) == ("no_answer", "expired")
    assert result["resolved_at"] == contract.iso(prompt.expires_at)
    assert terminal_events(prompt) == ["expired"]
    assert prompt.events.get(kind="expired").actor == "system"
    assert services.result_expiring_if_overdue(Prompt.objects.get(pk=prompt.pk)) == result


def test_an_answer_after_the_deadline_is_refused_and_the_prompt_expires(agent, owner):
    prompt = ask(agent)
    make_overdue(prompt)

    with pytest.raises(services.AlreadyResolved, match=r"expired at .* before the deadline"):
        services.answer(prompt, {"deploy_target": "Production"}, by=owner)

    prompt.refresh_from_db()
    assert (prompt.status, prompt.reason) == ("no_answer", "expired")
    assert not Answer.objects.exists()
    assert terminal_events(prompt) == ["expired"]


def test_a_cancel_after_the_deadline_finds_it_expired(agent):
    prompt = ask(agent)
    make_overdue(prompt)

    with pytest.raises(services.AlreadyResolved, match="expired"):
        services.cancel(prompt, agent=agent)


def test_expire_due_expires_only_overdue_prompts(agent):
    late = ask(agent, session="late")
    in_time = ask(agent, session="in-time")
    make_overdue(late)

    assert services.expire_due() == 1
    assert services.expire_due() == 0

    late.refresh_from_db()
    in_time.refresh_from_db()
    assert (late.reason, in_time.status) == ("expired", "pending")
    assert services.next_deadline() == in_time.expires_at


def test_a_prompt_in_time_cannot_be_expired(agent):
    prompt = ask(agent)

    with pytest.raises(services.Conflict, match="still in time"):
        services.expire(prompt)


def test_a_new_ask_expires_the_overdue_prompt_it_replaces(agent):
    old = ask(agent)
    make_overdue(old)

    new = ask(agent)

    old.refresh_from_db()
    assert (old.reason, new.status) == ("expired", "pending")


def test_abort_cancels_the_runs_pending_prompt(agent):
    prompt = ask(agent, run_id="run-1")

    aborted = services.abort_run(agent, "run-1")

    assert aborted.cancelled.pk == prompt.pk
    assert (aborted.cancelled.reason, aborted.run.status) == ("aborted", "aborted")
    assert terminal_events(prompt) == ["aborted"]


def test_a_resolved_prompt_cannot_change_again(agent, owner):
    prompt = ask(agent)
    services.answer(prompt, {"deploy_target": "Production"}, by=owner, surface="web")

    for attempt in (
        lambda p: services.answer(p, {"deploy_target": "Staging (Recommended)"}, by=owner),
        lambda p: services.skip_all(p, by=owner),
        lambda p: services.cancel(p, agent=agent),
        lambda p: services.expire(p),
    ):
        with pytest.raises(services.AlreadyResolved, match="already answered on the web by alice"):
            attempt(Prompt.objects.get(pk=prompt.pk))
    assert terminal_events(prompt) == ["answered"]
    assert Prompt.objects.get(pk=prompt.pk).result["answers"]["answers"] == {"deploy_target": ["Production"]}


def test_events_cannot_be_rewritten(agent):
    event = ask(agent).events.get()

    event.kind = "answered"
    with pytest.raises(ValueError, match="append-only"):
        event.save()


def test_a_new_prompt_tells_this_processs_deadline_loop_when_it_is_due(
    agent, monkeypatch, django_capture_on_commit_callbacks
):
    heard = []
    monkeypatch.setattr(expiry.loop, "wake", heard.append)

    with django_capture_on_commit_callbacks(execute=True):
        prompt = ask(agent)

    assert heard == [prompt.expires_at]
