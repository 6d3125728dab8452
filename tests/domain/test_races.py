"""Exactly one transition out of pending, whatever runs at the same moment.

Each pair of transitions runs in two threads released together by a barrier,
each with its own database connection; repeated, so the interleavings vary.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from functools import partial

import pytest
from django.db import connection
from django.utils import timezone

from askuser_app.domain import contract, services
from askuser_app.models import Prompt, PromptEvent
from tests.conftest import payload

ROUNDS = 100 if connection.vendor == "postgresql" else 25


def run_together(*actions: Callable[[], object]) -> list[object]:
    """Run the actions in threads at the same moment; each returns its outcome or the exception."""
    barrier = threading.Barrier(len(actions))
    outcomes: list[object] = [None] * len(actions)

    def run(index: int, action: Callable[[], object]) -> None:
        try:
            barrier.wait()
            outcomes[index] = action()
        except Exception as exc:  # the loser's refusal is an outcome too
            outcomes[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(actions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return outcomes


def fresh(agent, index: int, **fields) -> Prompt:
    request = contract.parse_create(payload(session=f"race-{index}", run_id=f"run-{index}", **fields))
    return services.ask(agent, request).prompt


def answer(prompt, user, label):
    return lambda: services.answer(Prompt.objects.get(pk=prompt.pk), {"deploy_target": label}, by=user, surface="web")


def cancel(prompt, agent):
    return lambda: services.cancel(Prompt.objects.get(pk=prompt.pk), agent=agent)


def abort(prompt, agent):
    def run() -> Prompt:
        cancelled = services.abort_run(agent, prompt.run.run_id).cancelled
        if cancelled is None:  # nothing was pending any more: it lost
            raise services.AlreadyResolved(Prompt.objects.get(pk=prompt.pk))
        return cancelled

    return run


def skip(prompt, user):
    return lambda: services.skip_all(Prompt.objects.get(pk=prompt.pk), by=user, surface="text")


def text_reply(prompt, user, text):
    """A reply typed into the composer: the prompt it answered, or the refusal it got."""

    def reply():
        posted = services.post_user_message(prompt.session, user, text)
        if posted.answered is not None:
            return posted.answered
        raise services.AlreadyResolved(Prompt.objects.get(pk=prompt.pk))

    return reply


def expire_at_deadline(prompt):
    def expire() -> Prompt:
        # Keep trying until the deadline passes: the expiry loop's job.
        while True:
            try:
                return services.expire(Prompt.objects.get(pk=prompt.pk))
            except services.AlreadyResolved:
                raise
            except services.Conflict:
                continue

    return expire


def assert_one_winner(prompt: Prompt, outcomes: list[object]) -> None:
    winners = [o for o in outcomes if isinstance(o, Prompt)]
    losers = [o for o in outcomes if not isinstance(o, Prompt)]
    assert len(winners) == 1, outcomes
    assert all(isinstance(o, services.AlreadyResolved) for o in losers), outcomes
    stored = Prompt.objects.get(pk=prompt.pk)
    assert stored.result == winners[0].result
    terminal = stored.events.filter(kind__in=PromptEvent.TERMINAL)
    assert terminal.count() == 1
    for loser in losers:
        assert loser.message == services.describe_resolution(stored)


PAIRS = {
    "answer/answer": lambda p, agent, user: [answer(p, user, "Production"), answer(p, user, "Staging (Recommended)")],
    "answer/cancel": lambda p, agent, user: [answer(p, user, "Production"), cancel(p, agent)],
    "answer/abort": lambda p, agent, user: [answer(p, user, "Production"), abort(p, agent)],
    "cancel/abort": lambda p, agent, user: [cancel(p, agent), abort(p, agent)],
    "answer/skip": lambda p, agent, user: [answer(p, user, "Production"), skip(p, user)],
    "web answer/text reply": lambda p, agent, user: [answer(p, user, "Production"), text_reply(p, user, "1")],
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pair", PAIRS)
def test_exactly_one_of_two_concurrent_transitions_wins(agent, owner, pair):
    for index in range(ROUNDS):
        prompt = fresh(agent, index)

        outcomes = run_together(*PAIRS[pair](prompt, agent, owner))

        assert_one_winner(prompt, outcomes)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("other", ["answer", "cancel", "abort"])
def test_the_deadline_and_a_last_moment_transition_have_one_winner(agent, owner, other):
    for index in range(ROUNDS // 5):
        prompt = fresh(agent, index)
        deadline = timezone.now() + timedelta(milliseconds=30)
        Prompt.objects.filter(pk=prompt.pk).update(expires_at=deadline)
        last_moment = {
            "answer": answer(prompt, owner, "Production"),
            "cancel": cancel(prompt, agent),
            "abort": abort(prompt, agent),
        }[other]

        outcomes = run_together(expire_at_deadline(prompt), last_moment)

        stored = Prompt.objects.get(pk=prompt.pk)
        if not any(isinstance(o, Prompt) for o in outcomes):
            # The late transition found the prompt overdue and expired it on
            # its way out: both are told it expired, and it expired once.
            assert stored.reason == "expired"
            outcomes[0] = stored
        assert_one_winner(prompt, outcomes)
        if stored.status == "answered":
            assert stored.resolved_at < deadline  # never accepted after the deadline


@pytest.mark.django_db(transaction=True)
def test_two_agents_asking_in_one_session_at_once_store_one_prompt(agent, owner):
    other_agent, _ = services.create_agent("second", owner)
    for index in range(ROUNDS):
        requests = [contract.parse_create(payload(session=f"busy-{index}", run_id=f"r{index}-{n}")) for n in range(2)]

        outcomes = run_together(
            partial(services.ask, agent, requests[0]), partial(services.ask, other_agent, requests[1])
        )

        created = [o for o in outcomes if isinstance(o, services.Asked)]
        refused = [o for o in outcomes if isinstance(o, services.Conflict)]
        assert (len(created), len(refused)) == (1, 1), outcomes
        assert refused[0].code == "session_busy"
        assert Prompt.objects.filter(session__key=f"busy-{index}").count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_with_one_idempotency_key_store_one_prompt(agent):
    for index in range(ROUNDS):
        request = contract.parse_create(payload(session=f"retry-{index}"))

        outcomes = run_together(*[partial(services.ask, agent, request, idempotency_key=f"key-{index}")] * 3)

        assert all(isinstance(o, services.Asked) for o in outcomes), outcomes
        assert len({o.prompt.pk for o in outcomes}) == 1
        assert sum(o.created for o in outcomes) == 1


# --- More time against the deadline, and against itself ---------------------------------------


def extend(prompt, user):
    return lambda: services.extend(Prompt.objects.get(pk=prompt.pk), by=user, surface="web")


def expire_unless_extended(prompt):
    """The expiry loop at the deadline: it tries until the deadline passes, and stops when
    the deadline it waits for moved (then the prompt is in time: ``Conflict``)."""
    deadline = prompt.expires_at

    def expire() -> Prompt:
        while True:
            current = Prompt.objects.get(pk=prompt.pk)
            if current.expires_at != deadline:
                raise services.Conflict("extended")
            try:
                return services.expire(current)
            except services.AlreadyResolved:
                raise
            except services.Conflict:
                continue

    return expire


@pytest.mark.django_db(transaction=True)
def test_more_time_at_the_deadline_and_the_expiry_have_exactly_one_winner(agent, owner):
    wins = {"extension": 0, "expiry": 0}
    for index in range(ROUNDS // 5):
        prompt = fresh(agent, index)
        deadline = timezone.now() + timedelta(milliseconds=30)
        Prompt.objects.filter(pk=prompt.pk).update(expires_at=deadline)
        prompt.expires_at = deadline

        expired, extended = run_together(expire_unless_extended(prompt), extend(prompt, owner))

        stored = Prompt.objects.get(pk=prompt.pk)
        kinds = list(stored.events.values_list("kind", flat=True))
        if isinstance(extended, services.Extended):
            wins["extension"] += 1
            # The extension won: no expiry at the old deadline, nor later by the loop.
            assert isinstance(expired, services.Conflict) and not isinstance(expired, services.AlreadyResolved)
            assert (stored.status, stored.extended, stored.expires_at) == ("pending", 1, deadline + EXTEND)
            assert services.expire_due() == 0 and "expired" not in kinds
        else:
            wins["expiry"] += 1
            # The expiry won: the extension was told so, and changed nothing.
            assert isinstance(extended, services.AlreadyResolved), extended
            assert extended.message == services.describe_resolution(stored)
            assert (stored.status, stored.reason, stored.extended) == ("no_answer", "expired", 0)
            assert stored.resolved_at == deadline and "extended" not in kinds
            assert kinds.count("expired") == 1
    assert sum(wins.values()) == ROUNDS // 5


EXTEND = timedelta(seconds=900)


@pytest.mark.django_db(transaction=True)
def test_two_extensions_at_once_each_count_once(agent, owner):
    for index in range(ROUNDS // 5):
        prompt = fresh(agent, index)

        outcomes = run_together(extend(prompt, owner), extend(prompt, owner))

        assert all(isinstance(o, services.Extended) for o in outcomes), outcomes
        stored = Prompt.objects.get(pk=prompt.pk)
        assert (stored.extended, stored.expires_at) == (2, prompt.expires_at + 2 * EXTEND)
        trail = stored.events.filter(kind=PromptEvent.Kind.EXTENDED).order_by("at")
        assert [e.detail["previous"] for e in trail] == [
            contract.iso(prompt.expires_at),
            contract.iso(prompt.expires_at + EXTEND),
        ]


@pytest.mark.django_db(transaction=True)
def test_extensions_racing_for_the_last_one_never_pass_the_limit(agent, owner):
    for index in range(ROUNDS // 5):
        prompt = fresh(agent, index)
        Prompt.objects.filter(pk=prompt.pk).update(extended=2)

        outcomes = run_together(*[extend(prompt, owner)] * 3)

        won = [o for o in outcomes if isinstance(o, services.Extended)]
        refused = [o for o in outcomes if isinstance(o, services.Refused)]
        assert (len(won), len(refused)) == (1, 2), outcomes
        assert {r.code for r in refused} == {"extend_limit"}
        stored = Prompt.objects.get(pk=prompt.pk)
        assert (stored.extended, stored.expires_at) == (3, prompt.expires_at + EXTEND)
        assert stored.events.filter(kind=PromptEvent.Kind.EXTENDED).count() == 1
