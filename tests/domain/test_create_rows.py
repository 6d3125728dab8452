"""The create's rows written by raw statements (``services.RowsInsert``: the
prompt, its questions, their options, its events) are the rows the ORM would
write, on SQLite and PostgreSQL alike; these tests fail when a change to the
models or the framework leaves the statements behind."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from askuser_app.domain import contract, services
from askuser_app.models import Option, Prompt, PromptEvent, Question, Run, Session
from tests.conftest import payload

pytestmark = pytest.mark.django_db(transaction=True)

TYPED = contract.TypedPromptIn.model_validate(
    payload(
        {
            "id": "seats",
            "header": "Seats",
            "question": "How many seats?",
            "detail": "A whole number, at least 1",
            "options": [{"label": "1", "description": "just me"}, {"label": "5"}],
            "rule": {"type": "integer", "minimum": 1},
        },
        {"id": "note", "header": "Note", "question": "Anything else?", "options": []},
        callback_url="https://hooks.example/done",
        title="Typed",
    )
)


def places(agent) -> tuple[Session, Session, Run]:
    first = Session.objects.create(owner_id=agent.owner_id, key="raw", agent=agent)
    second = Session.objects.create(owner_id=agent.owner_id, key="orm", agent=agent)
    return first, second, Run.objects.create(agent=agent, run_id="r-1", session=first)


def stored(model: type, exclude: set[str], **lookup) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in exclude} for row in model.objects.filter(**lookup).values()]


def inserted(asking: services._Asking) -> Prompt:
    return services._insert_row(asking, services._new_prompt(asking))


def every_column_as_held(instance) -> bool:
    """The instance holds what the database has (dates, JSON and the UUID converted back alike)."""
    row = type(instance).objects.filter(pk=instance.pk).values().get()
    return all(getattr(instance, column) == value for column, value in row.items())


@pytest.mark.parametrize("hook", [None, services.HookAsk("PermissionRequest", "permission", "toolu_1")])
def test_a_prompt_is_the_row_the_orm_would_write(agent, hook):
    first, second, run = places(agent)
    request = contract.parse_create(payload(callback_url="https://hooks.example/done", timeoutSeconds=600))
    asking = services._Asking(agent, first, run, request, "key-1", "d" * 64, hook)
    fields = services._new_prompt(asking) | {"warnings": ["a warning", {"kept": "as JSON"}]}
    # The ORM's instance fills the fields not given with its defaults, as the raw row must.
    by_orm = Prompt(**fields | {"session_id": second.pk, "idempotency_key": "key-2"})

    with transaction.atomic():
        saved = services._insert_row(asking, fields)
    by_orm.save(force_insert=True)

    generated = {"id", "session_id", "idempotency_key"}
    assert stored(Prompt, generated, pk=saved.pk) == stored(Prompt, generated, pk=by_orm.pk)
    assert every_column_as_held(saved)
    assert saved.hook_event == (hook.event if hook else "")
    # Every column is written, in the model's order (Model.from_db's): one the model gains fails here.
    assert list(services.PROMPT_COLUMNS) == [f.name for f in Prompt._meta.concrete_fields]


def test_the_inserted_prompt_is_saved_and_names_its_agent_session_and_run_without_a_query(
    agent, django_assert_num_queries
):
    first, _, run = places(agent)
    asking = services._Asking(agent, first, run, contract.parse_create(payload()), None, "", None)

    saved = services._insert_row(asking, services._new_prompt(asking))

    with django_assert_num_queries(0):
        assert (saved.agent, saved.session, saved.run) == (agent, first, run)
        assert saved.session is first and saved.run is run
    saved.reason = "updated"
    with django_assert_num_queries(1):
        saved.save()  # saved: an UPDATE of its row, where an unsaved prompt's save() would insert a second
    assert Prompt.objects.get().reason == "updated"


def test_questions_and_options_are_the_rows_the_orm_would_write(agent):
    first, second, run = places(agent)
    raw = inserted(services._Asking(agent, first, run, TYPED, None, "", None))
    by_orm = inserted(services._Asking(agent, second, run, TYPED, None, "", None))

    services._store_questions(raw, TYPED)
    # What the ORM wrote before: bulk_create of the questions, then of their options.
    questions = Question.objects.bulk_create(
        Question(
            prompt=by_orm,
            position=i,
            key=q.id,
            header=q.short_header,
            header_full=q.header,
            text=q.question,
            multi_select=q.multiSelect,
            detail=q.detail or "",
            rule=q.rule,
        )
        for i, q in enumerate(TYPED.questions)
    )
    Option.objects.bulk_create(
        Option(question=question, position=i, label=o.label, description=o.description or "")
        for question, q in zip(questions, TYPED.questions, strict=True)
        for i, o in enumerate(q.options)
    )

    assert stored(Question, {"id", "prompt_id"}, prompt=raw) == stored(Question, {"id", "prompt_id"}, prompt=by_orm)
    raw_options = stored(Option, {"id", "question_id"}, question__prompt=raw)
    assert raw_options == stored(Option, {"id", "question_id"}, question__prompt=by_orm)
    assert [(o["position"], o["label"]) for o in raw_options] == [(0, "1"), (1, "5")]
    # Each option belongs to the question it was written for (the ids read back in order).
    assert {o.question.key for o in Option.objects.filter(question__prompt=raw)} == {"seats"}
    assert Question.objects.get(prompt=raw, key="seats").rule == {"type": "integer", "minimum": 1}


def test_an_event_is_the_row_the_orm_would_write(agent):
    first, _, run = places(agent)
    prompt = inserted(services._Asking(agent, first, run, TYPED, None, "", None))
    before = timezone.now()

    services._record(prompt, PromptEvent.Kind.CREATED, "agent helper", "api", run_id="r-1", n=2)
    PromptEvent.objects.create(
        prompt=prompt, kind="created", actor="agent helper", surface="api", detail={"run_id": "r-1", "n": 2}
    )

    raw, by_orm = PromptEvent.objects.filter(prompt=prompt).order_by("id")
    assert stored(PromptEvent, {"id", "at"}, pk=raw.pk) == stored(PromptEvent, {"id", "at"}, pk=by_orm.pk)
    assert before <= raw.at <= by_orm.at <= timezone.now() + timedelta(seconds=1)
