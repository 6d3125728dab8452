"""Every change to a prompt's state happens here, and nowhere else.

Each transition out of ``pending`` is a compare-and-set on the prompt row
(``filter(status=PENDING).update(...)``) inside a short transaction that also
writes the answers and the event row; the loser of a race gets
``AlreadyResolved`` with a sentence saying what happened. Realtime
notifications leave only after commit.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, cast

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import IntegrityError, connection, models, transaction
from django.db.models import Min, Prefetch, QuerySet, Value, prefetch_related_objects
from django.db.models.functions import Concat
from django.utils import timezone
from django.utils.translation import gettext as _

from askuser_app.domain import contract, effects, textreply, wording
from askuser_app.domain.agentauth import hash_token, new_token
from askuser_app.domain.chars import control_character, fold
from askuser_app.models import (
    Agent,
    Answer,
    Message,
    Option,
    Prompt,
    PromptEvent,
    Question,
    Run,
    Session,
    new_webhook_secret,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User  # the model AUTH_USER_MODEL names

log = logging.getLogger("askuser")

PENDING = Prompt.Status.PENDING
RATE_WINDOW = timedelta(minutes=1)
Reason = Prompt.Reason


class DomainError(Exception):
    """A refusal the API reports with ``status`` and the sentence in ``message``."""

    status = 400
    code = "error"

    def __init__(self, message: str, *, code: str | None = None, person: str = "", **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or type(self).code
        self.person = person
        self.extra = extra

    @property
    def for_person(self) -> str:
        """The sentence for a person, in their language; ``message`` is the agent API's (English)."""
        return self.person or self.message


class NotFound(DomainError):
    status, code = 404, "not_found"


class Refused(DomainError):
    status, code = 403, "refused"


class Conflict(DomainError):
    status, code = 409, "conflict"


class InvalidAnswer(DomainError):
    status, code = 422, "invalid_answer"


class RateLimited(DomainError):
    status, code = 429, "rate_limited"


class InvalidMessage(DomainError):
    status, code = 422, "invalid_message"


class AlreadyResolved(Conflict):
    code = "already_resolved"

    def __init__(self, prompt: Prompt) -> None:
        # ``message`` is for the agent API (English); people are told ``for_person``.
        super().__init__(describe_resolution(prompt), prompt=prompt.result)
        self.prompt = prompt

    @property
    def for_person(self) -> str:
        return describe_resolution(self.prompt, wording.for_person)


# --- agents --------------------------------------------------------------------


def create_agent(name: str, owner: User) -> tuple[Agent, str]:
    """A new agent and its token; the token is returned once and stored only as a hash."""
    token = new_token()
    agent = Agent.objects.create(name=name, owner=owner, token_hash=hash_token(token), token_prefix=token[:10])
    return agent, token


def revoke_agent(agent: Agent) -> bool:
    """Revoke the token; False when it was already revoked."""
    return bool(Agent.objects.filter(pk=agent.pk, revoked_at=None).update(revoked_at=timezone.now()))


def rotate_agent(agent: Agent) -> str | None:
    """A new token and webhook secret for an agent still in use: the old token gets 401
    at once and deliveries not yet sent are signed with the new secret. Returns the
    token (shown once; ``agent.webhook_secret`` holds the secret), None when revoked."""
    token, secret = new_token(), new_webhook_secret()
    fields = {"token_hash": hash_token(token), "token_prefix": token[:10], "webhook_secret": secret}
    if not Agent.objects.filter(pk=agent.pk, revoked_at=None).update(**fields):
        return None
    for name, value in fields.items():
        setattr(agent, name, value)
    return token


# --- asking --------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    prompt: Prompt
    created: bool  # False when an Idempotency-Key replayed an earlier create


@dataclass(frozen=True)
class HookAsk:
    """What a coding agent's hook asks with: its event (for staff), the kind of question,
    and the name of the tool use, which its later events give when the agent decided it."""

    event: str
    kind: str
    tool_use: str = ""


def ask(
    agent: Agent, request: contract.CreatePromptIn, *, idempotency_key: str | None = None, hook: HookAsk | None = None
) -> Asked:
    """Store a new pending prompt for the agent's session, or refuse it; ``hook`` says
    which coding agent's hook asked, if one did."""
    if request.run_kind != Run.Kind.MAIN:  # type: ignore[comparison-overlap]  # a TextChoices member is its str
        raise Refused("ask_user is available only in the main session; a subagent run cannot ask the user.")
    # Only a retry with the same key compares digests: without a key there is nothing to replay.
    digest = request_digest(request) if idempotency_key else ""
    # A replay reads a committed row and writes nothing, so it takes no write
    # lock; a retry racing this one is caught by the insert's unique key.
    earlier = _earlier(agent, idempotency_key) if idempotency_key else None
    if earlier is not None:
        return _replay(earlier, digest)
    with transaction.atomic():
        _check_rate(agent)
        session, new_session = _session_for(agent, request.session, request.title)
        run = _run_for(agent, session, request.run_id)
        asking = _Asking(agent, session, run, request, idempotency_key, digest, hook)
        prompt, created = _insert_prompt(asking, new_session=new_session)
        if not created:
            return _replay(prompt, digest)
        _store_questions(prompt, request)
        _record(prompt, PromptEvent.Kind.CREATED, f"agent {agent.name}", "api", run_id=run.run_id)
        effects.prompt_created(prompt)
    return Asked(prompt, created=True)


def _check_rate(agent: Agent) -> None:
    """At most ASKUSER_RATE_LIMIT prompts per agent in any minute (a sliding window)."""
    if settings.ASKUSER_RATE_LIMIT:  # 0: no limit, and no query built for it
        _check_window(Prompt.objects.filter(agent=agent), settings.ASKUSER_RATE_LIMIT, "asked {limit} times")


def _check_window(made: QuerySet[Any], limit: int, done: str) -> None:
    """Refuse a ``limit``-th + 1 row of ``made`` within RATE_WINDOW; 0 means no limit."""
    if not limit:
        return
    now = timezone.now()
    recent = made.filter(created_at__gt=now - RATE_WINDOW).order_by("-created_at")
    oldest_counted = recent.values_list("created_at", flat=True)[limit - 1 : limit].first()
    if oldest_counted is not None:
        retry_after = max(1, math.ceil((oldest_counted + RATE_WINDOW - now).total_seconds()))
        raise RateLimited(
            f"This agent {done.format(limit=limit)} in the last minute; try again in {retry_after} s.",
            retry_after=retry_after,
        )


def request_digest(request: contract.CreatePromptIn) -> str:
    # Without a callback_url the digest stays what it was before webhooks existed.
    # Nor without a title: a retry from before titles existed still replays.
    # Nor without a detail: a question's detail is left out when none has one.
    unset: dict[str, Any] = {name: True for name in ("callback_url", "title") if getattr(request, name) is None}
    if all(q.detail is None for q in request.questions):
        unset["questions"] = {"__all__": {"detail"}}
    return hashlib.sha256(request.model_dump_json(exclude=unset or None).encode()).hexdigest()


def _earlier(agent: Agent, idempotency_key: str) -> Prompt | None:
    """The agent's prompt made with this key, with what its response names (session, run)."""
    return Prompt.objects.select_related("session", "run").filter(agent=agent, idempotency_key=idempotency_key).first()


def _replay(earlier: Prompt, digest: str) -> Asked:
    if earlier.request_digest != digest:
        raise Conflict(
            "This Idempotency-Key was already used for a different request; use a new key for a new prompt.",
            code="idempotency_key_reused",
        )
    return Asked(earlier, created=False)


def _session_for(agent: Agent, key: str, title: str | None = None) -> tuple[Session, bool]:
    """The owner's session ``key``, and whether this call made it; a ``title``
    given renames it (the latest word on who is asking wins).

    Tried as an insert first (a conflict inserts nothing), so that a new
    session costs one statement, without a lookup or a savepoint."""
    session = Session(owner_id=agent.owner_id, key=key, agent=agent, title=title or "", created_at=timezone.now())
    if _insert_new_session(session):
        return session, True
    session = Session.objects.get(owner_id=agent.owner_id, key=key)
    changes = _session_changes(session, agent, title)
    if changes:
        Session.objects.filter(pk=session.pk).update(**changes)
    return session, False


def _session_changes(session: Session, agent: Agent, title: str | None) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if session.agent_id != agent.pk:
        changes["agent"] = session.agent = agent
    if title and session.title != title:
        changes["title"] = session.title = title
    return changes


# The create path's one raw statement. The ORM has no insert that both skips
# a conflicting row and returns the new row's id (``bulk_create`` with
# ``ignore_conflicts`` returns no ids), and ``get_or_create`` costs a lookup
# and a savepoint besides: four statements instead of one for a new session
# (docs/PERFORMANCE.md). PostgreSQL and SQLite (3.35+) both speak it;
# tests/domain/test_session_upsert.py fails if the table or its columns change.
SESSION_INSERT = (
    'INSERT INTO askuser_app_session (owner_id, "key", title, agent_id, created_at) VALUES (%s, %s, %s, %s, %s) '
    'ON CONFLICT (owner_id, "key") DO NOTHING RETURNING id'
)


def _insert_new_session(session: Session) -> bool:
    """Insert ``session`` unless the owner has one with its key; True (and its id set) when inserted."""
    created_at = connection.ops.adapt_datetimefield_value(session.created_at)
    with connection.cursor() as cursor:
        cursor.execute(SESSION_INSERT, [session.owner_id, session.key, session.title, session.agent_id, created_at])
        row = cursor.fetchone()
    if row is None:
        return False
    # Fetched from the database from now on, as if it had been saved.
    session.pk = row[0]
    return True


# The create path's second raw statement: the run found or made in one
# statement, locked as ``select_for_update`` would lock it (PostgreSQL's
# ON CONFLICT DO UPDATE locks the row it updates), where ``get_or_create``
# takes a SELECT … FOR UPDATE, a savepoint, the INSERT and its release, and
# ``create`` compiles its INSERT each time: a create with a run id went
# from 12 statements to 9 (docs/PERFORMANCE.md, "The create path, statement
# by statement", for its CPU before and after). A run
# aborted before it asked has no session yet: this one becomes it.
# tests/domain/test_session_upsert.py fails if the table or its columns change.
RUN_UPSERT = (
    "INSERT INTO askuser_app_run (agent_id, run_id, session_id, kind, status, created_at) "
    "VALUES (%s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (agent_id, run_id) "
    "DO UPDATE SET session_id = COALESCE(askuser_app_run.session_id, excluded.session_id) "
    "RETURNING id, session_id, status"
)


def _run_for(agent: Agent, session: Session, run_id: str | None) -> Run:
    """The agent's run ``run_id`` (a new one when None), locked so that an abort
    racing this ask sees the new prompt."""
    run_id = run_id or f"run-{uuid.uuid4().hex[:12]}"
    created_at = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(RUN_UPSERT, [agent.pk, run_id, session.pk, Run.Kind.MAIN, Run.Status.ACTIVE, created_at])
        pk, session_id, status = cursor.fetchone()
    # Loaded as a query that read these columns loads it: the others are read when first used.
    run = Run.from_db(
        connection.alias,
        ["id", "agent_id", "run_id", "session_id", "status"],
        [pk, agent.pk, run_id, session_id, status],
    )
    run.agent = agent
    if run.status == Run.Status.ABORTED:
        raise Conflict(f"Run {run_id} was aborted at {clock(run.aborted_at)}; an aborted run cannot ask again.")
    if run.session_id != session.pk:
        # A run with a session_id has its session; the stubs see the nullable key.
        raise Conflict(f"Run {run_id} belongs to session {run.session.key}, not {session.key}.")  # type: ignore[union-attr]
    run.session = session
    return run


@dataclass(frozen=True)
class _Asking:
    """What a new prompt is made of."""

    agent: Agent
    session: Session
    run: Run
    request: contract.CreatePromptIn
    idempotency_key: str | None
    digest: str
    hook: HookAsk | None


def _insert_prompt(asking: _Asking, *, new_session: bool) -> tuple[Prompt, bool]:
    """Insert the prompt; ``(earlier, False)`` when a concurrent create with the key won.

    A session made by this transaction holds no prompt yet, so only an insert
    with a key or into an older session can hit a unique constraint, and only
    it pays for the savepoint that lets the transaction go on after one. A
    pending prompt found in its way that is overdue is expired, and the insert
    tried again: an older session pays for that check only when it holds one."""
    if new_session and not asking.idempotency_key:
        return _insert_row(asking, _new_prompt(asking)), True
    prompt = _inserted(asking, _new_prompt(asking))
    if prompt is not None:
        return prompt, True
    # Either a concurrent create with the same Idempotency-Key won, or the
    # session already has a pending prompt: the database decided.
    earlier = _earlier(asking.agent, asking.idempotency_key) if asking.idempotency_key else None
    if earlier is not None:
        return earlier, False
    if _expire_overdue_in(asking.session):
        prompt = _inserted(asking, _new_prompt(asking))
        if prompt is not None:
            return prompt, True
    raise _session_busy(asking.session)


def _new_prompt(asking: _Asking) -> dict[str, Any]:
    """A new prompt's fields by their attribute names; the model's defaults fill the rest (``_insert_row``)."""
    now, request, hook = timezone.now(), asking.request, asking.hook
    return {
        "agent_id": asking.agent.pk,
        "session_id": asking.session.pk,
        "run_id": asking.run.pk,
        "created_at": now,
        "timeout_seconds": request.timeout,
        "expires_at": now + timedelta(seconds=request.timeout),
        "warnings": request.warnings(),
        "idempotency_key": asking.idempotency_key or "",
        "request_digest": asking.digest,
        "callback_url": request.callback_url or "",
        "hook_event": hook.event if hook else "",
        "hook_kind": hook.kind if hook else "",
        "hook_tool_use": hook.tool_use if hook else "",
        "search_text": LINE.join(
            [asking.session.key, *(line for q in request.questions for line in (q.header, q.question, *labels(q)))]
        ),
    }


# Between the lines of Prompt.search_text: no search word holds one, so none matches across two.
LINE = "\n"


def labels(question: contract.QuestionIn) -> list[str]:
    return [option.label for option in question.options]


def _inserted(asking: _Asking, fields: dict[str, Any]) -> Prompt | None:
    """Insert the prompt in a savepoint: the saved prompt, or None when a unique constraint refused it."""
    try:
        with transaction.atomic():
            return _insert_row(asking, fields)
    except IntegrityError:
        return None


def _expire_overdue_in(session: Session) -> bool:
    """Expire the session's pending prompt if its deadline has passed; whether there was one."""
    overdue = Prompt.objects.filter(session=session, status=PENDING, expires_at__lte=timezone.now()).first()
    if overdue is None:
        return False
    try:
        _expire(overdue)
    except AlreadyResolved:
        pass  # resolved meanwhile: the session is free all the same
    except Conflict:
        return False  # More time moved its deadline in the same instant: still pending
    return True


def _session_busy(session: Session) -> Conflict:
    pending = Prompt.objects.filter(session=session, status=PENDING).first()
    pending_id = str(pending.pk) if pending else None
    return Conflict(
        f"Session {session.key} already has a pending prompt ({pending_id}); "
        "wait for its result or cancel it before asking again.",
        code="session_busy",
        pending_prompt=pending_id,
    )


def _store_questions(prompt: Prompt, request: contract.CreatePromptIn) -> None:
    """Every question in one INSERT, then every option of them all in one more."""
    question_ids = QUESTION_ROWS.insert(
        [
            (
                prompt.pk,
                index,
                q.id,
                q.short_header,
                q.header,
                q.question,
                q.multiSelect,
                q.detail or "",
                q.rule if isinstance(q, contract.TypedQuestionIn) else {},
            )
            for index, q in enumerate(request.questions)
        ]
    )
    OPTION_ROWS.insert(
        [
            (question_id, index, o.label, o.description or "")
            for question_id, q in zip(question_ids, request.questions, strict=True)
            for index, o in enumerate(q.options)
        ]
    )


class RowsInsert:
    """One INSERT of rows of ``model``, its statement written out once.

    The ORM compiles an INSERT anew for every call, preparing each value of
    each row through its field: on the create path, four INSERTs (the prompt,
    its questions, their options, the event) took more than half of the create
    thread's CPU, the statements themselves 0.02 ms each (docs/PERFORMANCE.md,
    "The create's CPU halved"). Here the statement is built once per number of rows from the
    model's own table and column names; each value is passed to the database as
    it is, except those of ``converted``, which go through their field's
    ``get_db_prep_save`` as the ORM's would (a JSON document, a date, a UUID).
    ``returning`` reads back the new rows' ids, in the rows' order (as
    ``bulk_create`` reads them on both databases).
    tests/domain/test_create_rows.py compares every row written so with the
    ORM's, on SQLite and PostgreSQL: it fails when a model's columns change."""

    def __init__(
        self, model: type[Any], names: Sequence[str], *, converted: Sequence[str] = (), returning: bool = False
    ) -> None:
        self.model, self.returning = model, returning
        self.fields = [cast("models.Field[Any, Any]", model._meta.get_field(name)) for name in names]
        self.converted = [(i, f) for i, f in enumerate(self.fields) if f.name in converted]
        self.attnames = [f.attname for f in self.fields]
        # from_db takes a whole row's values in the model's own order, the names only for fewer.
        concrete = [f.attname for f in model._meta.concrete_fields]
        if sorted(self.attnames) == sorted(concrete) and self.attnames != concrete:
            raise ImproperlyConfigured(f"{model.__name__}'s columns are written in the model's order: {concrete}")
        self.statements: dict[tuple[str, int], str] = {}

    def statement(self, count: int) -> str:
        key = (connection.vendor, count)
        if key not in self.statements:
            quote, meta = connection.ops.quote_name, self.model._meta
            columns = ", ".join(quote(f.column) for f in self.fields)
            row = "(" + ", ".join(["%s"] * len(self.fields)) + ")"
            returning = f" RETURNING {quote(meta.pk.column)}" if self.returning else ""
            self.statements[key] = (
                f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES {', '.join([row] * count)}{returning}"
            )
        return self.statements[key]

    def loaded(self, values: Sequence[Any]) -> Any:
        """The instance of a row just inserted, as a query reading these columns would make it
        (``Model.from_db``, Django's documented hook for "Customizing model loading")."""
        return self.model.from_db(connection.alias, self.attnames, values)

    def row(self, given: Mapping[str, Any]) -> list[Any]:
        """A new row: the values ``given`` by attribute name, each other field's default
        (``Field.get_default``, as ``Model.__init__`` fills it)."""
        return [given[f.attname] if f.attname in given else f.get_default() for f in self.fields]

    def insert(self, rows: Sequence[Sequence[Any]]) -> list[Any]:
        """Insert ``rows`` (values in the order of ``names``); the new ids when ``returning``."""
        if not rows:  # questions without options (an MCP form's typed fields): nothing to write
            return []
        params: list[Any] = []
        for row in rows:
            values = list(row)
            for i, converting in self.converted:
                values[i] = converting.get_db_prep_save(values[i], connection)
            params += values
        with connection.cursor() as cursor:
            cursor.execute(self.statement(len(rows)), params)
            return [r[0] for r in cursor.fetchall()] if self.returning else []


PROMPT_COLUMNS = (
    "id", "agent", "session", "run", "status", "reason", "created_at", "timeout_seconds", "expires_at",
    "resolved_at", "resolved_by", "surface", "warnings", "result", "idempotency_key", "request_digest",
    "callback_url", "extended", "hook_event", "hook_kind", "hook_tool_use", "search_text",
)  # fmt: skip
PROMPT_ROWS = RowsInsert(
    Prompt, PROMPT_COLUMNS, converted=("id", "created_at", "expires_at", "resolved_at", "warnings", "result")
)
QUESTION_ROWS = RowsInsert(
    Question,
    ("prompt", "position", "key", "header", "header_full", "text", "multi_select", "detail", "rule"),
    converted=("prompt", "rule"),
    returning=True,
)
OPTION_ROWS = RowsInsert(Option, ("question", "position", "label", "description"))
EVENT_ROWS = RowsInsert(
    PromptEvent, ("prompt", "at", "kind", "actor", "surface", "detail"), converted=("prompt", "at", "detail")
)


def _insert_row(asking: _Asking, fields: dict[str, Any]) -> Prompt:
    """Insert the new prompt (``fields``, the model's defaults for the rest): the saved prompt, made
    as the ORM makes one it reads (``Model.from_db``), with the agent, session and run it names."""
    values = PROMPT_ROWS.row(fields)
    PROMPT_ROWS.insert([values])
    prompt: Prompt = PROMPT_ROWS.loaded(values)
    prompt.agent, prompt.session, prompt.run = asking.agent, asking.session, asking.run
    return prompt


# --- resolving -----------------------------------------------------------------


@dataclass(frozen=True)
class QuestionAnswer:
    options: list[str]
    free_text: str = ""

    @property
    def skipped(self) -> bool:
        return not self.options and not self.free_text


AnswerInput = Mapping[str, Sequence[str] | str | None]


def answer(
    prompt: Prompt,
    answers: AnswerInput,
    *,
    by: User | None,
    surface: str = "api",
    detail: dict[str, Any] | None = None,
) -> Prompt:
    """Record the human's answers; a prompt with every question skipped is skipped.

    ``detail`` goes into the event trail (a text reply keeps how it was read)."""
    if not prompt.is_pending:
        raise AlreadyResolved(prompt)
    questions = questions_of(prompt)
    read = read_answers(questions, answers)
    if all(a.skipped for a in read.values()):
        return skip_all(prompt, by=by, surface=surface)
    for question in questions:
        _check_rule(question, read[question.key])
    resolved_at = timezone.now()
    result = contract.answered_result(
        str(prompt.pk),
        [(q.key, q.header, read[q.key].options, read[q.key].free_text, read[q.key].skipped) for q in questions],
        resolved_by=_username(by),
        surface=surface,
        resolved_at=resolved_at,
    )
    rows = tuple(
        Answer(
            question=q,
            values=result["answers"]["answers"][q.key],
            free_text=read[q.key].free_text,
            skipped=read[q.key].skipped,
        )
        for q in questions
    )
    resolution = Resolution(
        Prompt.Status.ANSWERED,
        "",
        PromptEvent.Kind.ANSWERED,
        by=by,
        surface=surface,
        resolved_at=resolved_at,
        result=result,
        answers=rows,
        detail=detail or {},
    )
    return _transition(prompt, resolution)


# A prompt's questions with their options, each in its order. Ordered by
# position only: the models' Meta.ordering starts with the parent ("prompt",
# "question"), which joins the prompt's table (and the question's) into
# every read only to sort by the parent's own ordering.
QUESTIONS_IN_ORDER = (
    Prefetch("questions", queryset=Question.objects.order_by("position")),
    Prefetch("questions__options", queryset=Option.objects.order_by("position")),
)


def questions_of(prompt: Prompt) -> list[Question]:
    """The prompt's questions with their options, read once per prompt object:
    a caller that read them already (the panel's form) hands them on unread."""
    prefetch_related_objects([prompt], *QUESTIONS_IN_ORDER)
    return list(prompt.questions.all())


def read_answers(questions: list[Question], answers: AnswerInput) -> dict[str, QuestionAnswer]:
    """Match each given value to an option label or keep it as free text."""
    keys = {q.key for q in questions}
    unknown = sorted(set(answers) - keys)
    if unknown:
        raise InvalidAnswer(f"Unknown question id {unknown[0]!r}; this prompt asks {', '.join(sorted(keys))}.")
    missing = [q.key for q in questions if q.key not in answers]
    if missing:
        raise InvalidAnswer(f"No answer for question {missing[0]!r}; give None to skip it.")
    return {q.key: _read_answer(q, answers[q.key]) for q in questions}


def _read_answer(question: Question, given: Sequence[str] | str | None) -> QuestionAnswer:
    values = [given] if isinstance(given, str) else list(given or [])
    by_fold = {fold(o.label): o.label for o in question.options.all()}
    chosen: set[str] = set()
    free: list[str] = []
    for value in values:
        if not isinstance(value, str):
            raise InvalidAnswer(f"{question.key}: each answer must be a string.", person=_("Each answer must be text."))
        value = value.strip()
        if fold(value) in by_fold:
            chosen.add(by_fold[fold(value)])
        elif value:
            free.append(_checked_free_text(question, value))
    options = [o.label for o in question.options.all() if o.label in chosen]
    if len(free) > 1:
        raise InvalidAnswer(
            f"{question.key}: give at most one answer of your own.",
            person=_("%(header)s: give at most one answer of your own.") % {"header": question.header},
        )
    if not question.multi_select and len(options) + len(free) > 1:
        raise InvalidAnswer(
            f"{question.key}: choose one option or type one answer; this question is single-select.",
            person=_("%(header)s: choose one option or type one answer.") % {"header": question.header},
        )
    return QuestionAnswer(options=options, free_text=free[0] if free else "")


def _check_rule(question: Question, given: QuestionAnswer) -> None:
    """A typed question's answer keeps its rule (``contract.typed_answer``): a required one is not
    skipped, a number is a number in its range, an email an email…; else nothing is recorded."""
    if not question.rule:
        return
    if given.skipped and question.rule.get("required"):
        raise InvalidAnswer(
            f"{question.key}: this question needs an answer (or skip them all).",
            person=_("%(header)s: this question needs an answer (or skip them all).") % {"header": question.header},
        )
    try:
        contract.typed_answer(question.rule, [*given.options, given.free_text] if given.free_text else given.options)
    except contract.Unfit as unfit:
        params = {**unfit.params, "header": question.header}
        raise InvalidAnswer(
            unfit.message % {**params, "header": question.key}, person=_(unfit.message) % params
        ) from None


def _checked_free_text(question: Question, value: str) -> str:
    if len(value) > contract.MAX_FREE_TEXT:
        raise InvalidAnswer(
            f"{question.key}: your answer is {len(value)} characters; at most {contract.MAX_FREE_TEXT} fit.",
            person=_("%(header)s: your answer is %(length)d characters; at most %(limit)d fit.")
            % {"header": question.header, "length": len(value), "limit": contract.MAX_FREE_TEXT},
        )
    if control_character(value):
        raise InvalidAnswer(
            f"{question.key}: your answer contains control characters.",
            person=_("%(header)s: your answer contains control characters.") % {"header": question.header},
        )
    return value


def skip_all(prompt: Prompt, *, by: User | None, surface: str = "api") -> Prompt:
    return _no_answer(prompt, Reason.SKIPPED, PromptEvent.Kind.SKIPPED, by=by, surface=surface)


def cancel(prompt: Prompt, *, agent: Agent | None = None, by: User | None = None, surface: str = "api") -> Prompt:
    """Cancel a pending prompt: its agent through the API, or staff (``by=``, ``surface="admin"``)."""
    actor = f"agent {agent.name}" if agent is not None else ""
    return _no_answer(prompt, Reason.CANCELLED, PromptEvent.Kind.CANCELLED, by=by, actor=actor, surface=surface)


@dataclass(frozen=True)
class Aborted:
    run: Run
    cancelled: Prompt | None


def abort_run(agent: Agent, run_id: str) -> Aborted:
    """Mark the run aborted and cancel its pending prompt; the run may not ask again."""
    now = timezone.now()
    with transaction.atomic():
        run, _ = Run.objects.get_or_create(agent=agent, run_id=run_id)
        Run.objects.filter(pk=run.pk, status=Run.Status.ACTIVE).update(status=Run.Status.ABORTED, aborted_at=now)
        run.refresh_from_db()
        pending = Prompt.objects.filter(run=run, status=PENDING).first()
    cancelled = None
    if pending is not None:
        with contextlib.suppress(AlreadyResolved):  # resolved in between: nothing left to cancel
            cancelled = _no_answer(
                pending, Reason.ABORTED, PromptEvent.Kind.ABORTED, actor=f"agent {agent.name}", surface="api"
            )
    return Aborted(run, cancelled)


def hand_back(prompt: Prompt, *, agent: Agent) -> Prompt:
    """A coding agent's hook stopped waiting (its ``wait`` passed, or it hung up): the
    agent's own dialog at its terminal asks instead, so the prompt closes here."""
    return _no_answer(prompt, Reason.TERMINAL, PromptEvent.Kind.AT_TERMINAL, actor=f"agent {agent.name}", surface="api")


def open_hook_question(agent: Agent, key: str) -> Prompt | None:
    """The pending prompt a coding agent's hook asked in the owner's session ``key``, if any."""
    pending = Prompt.objects.filter(session__owner_id=agent.owner_id, session__key=key, status=PENDING)
    return pending.exclude(hook_kind="").first()


def last_hook_question(agent: Agent, key: str) -> Prompt | None:
    """The newest prompt a coding agent's hook asked in the owner's session ``key``, in any state."""
    asked = Prompt.objects.filter(session__owner_id=agent.owner_id, session__key=key).exclude(hook_kind="")
    return asked.order_by("-created_at", "-pk").first()


def decided_at_terminal(prompt: Prompt, *, agent: Agent, event: str) -> Prompt | None:
    """A later hook ``event`` of the agent (``PostToolUse``, ``Stop``, …) shows it decided at its
    terminal what the prompt asks: the prompt closes, on every surface, and an answer after this
    one is refused, never recorded. None when the prompt was resolved meanwhile."""
    try:
        return _no_answer(
            prompt,
            Reason.DECIDED,
            PromptEvent.Kind.DECIDED,
            actor=f"agent {agent.name}",
            surface="api",
            detail={"hook_event": event},
        )
    except Conflict:  # answered, expired or handed back first: that stands
        return None


def expire(prompt: Prompt) -> Prompt:
    """Expire a prompt whose deadline has passed; refuse one that is still in time."""
    if prompt.is_pending and not prompt.is_overdue():
        raise Conflict(f"This prompt is still in time until {clock(prompt.expires_at)}.")
    return _expire(prompt)


def _expire(prompt: Prompt) -> Prompt:
    return _no_answer(prompt, Reason.EXPIRED, PromptEvent.Kind.EXPIRED, actor="system", surface="", overdue=True)


def expire_due(now: datetime | None = None) -> int:
    """Expire every pending prompt overdue at ``now``; safe to run in several processes at once.
    One that cannot be expired (a bug, a row no code expects) is logged and left for the next
    turn: the others are expired all the same."""
    count = 0
    for prompt in Prompt.objects.filter(status=PENDING, expires_at__lte=now or timezone.now()):
        try:
            _expire(prompt)
            count += 1
        except Conflict:  # resolved meanwhile, or its deadline moved (More time): not due
            pass
        except Exception:
            log.exception("Expiring prompt %s failed; the other prompts are expired all the same.", prompt.pk)
    return count


@dataclass(frozen=True)
class Extended:
    """A deadline moved: the prompt as it now stands, and the old deadline."""

    prompt: Prompt
    previous: datetime

    @property
    def added_seconds(self) -> int:
        return round((self.prompt.expires_at - self.previous).total_seconds())


# Two people asking for more time in the same instant (two tabs, the panel and
# the email page) each get their extension: the loser of the compare-and-set
# reads the prompt again and tries once more, up to this many times.
EXTEND_TRIES = 5


def extension_limits(prompt: Prompt) -> tuple[int, datetime]:
    """How many more extensions the prompt may have, and the latest deadline it may reach."""
    left = max(0, settings.ASKUSER_EXTEND_TIMES - prompt.extended)
    return left, prompt.created_at + timedelta(seconds=settings.ASKUSER_EXTEND_LIMIT_SECONDS)


def extension_seconds(prompt: Prompt, now: datetime | None = None) -> int:
    """How many seconds the next "More time" would add; 0 when no more may be added
    (resolved, overdue, extended ``ASKUSER_EXTEND_TIMES`` times, or at the cap)."""
    left, latest = extension_limits(prompt)
    if not prompt.is_pending or prompt.is_overdue(now) or left == 0:
        return 0
    room = (latest - prompt.expires_at).total_seconds()
    return max(0, min(settings.ASKUSER_EXTEND_SECONDS, math.floor(room)))


def can_extend(prompt: Prompt, now: datetime | None = None) -> bool:
    """More time can still be asked for: pending, in time, extensions left, not at the cap."""
    return extension_seconds(prompt, now) > 0


def extend(prompt: Prompt, *, by: User | None, surface: str) -> Extended:
    """Move a pending prompt's deadline ``ASKUSER_EXTEND_SECONDS`` later ("I need more time").

    At most ``ASKUSER_EXTEND_TIMES`` times and never past ``ASKUSER_EXTEND_LIMIT_SECONDS``
    after creation (``Refused``, code ``extend_limit``). It is a compare-and-set on the
    deadline and the count, like every transition here: an extension that loses to the expiry
    (or to an answer) raises ``AlreadyResolved``; one that wins means the old deadline no
    longer expires the prompt, since an expiry only wins once the deadline has passed (the
    expiry's own compare-and-set reads the deadline the extension wrote). Extensions racing
    each other each count once, never past the limits."""
    for _try in range(EXTEND_TRIES):
        current = Prompt.objects.get(pk=prompt.pk)
        _check_extendable(current)
        extended = _extend_once(current, by, surface)
        if extended is not None:
            prompt.expires_at, prompt.extended = current.expires_at, current.extended
            return extended
    raise Conflict(_("The deadline kept changing meanwhile; try again."))


def _check_extendable(current: Prompt) -> None:
    now = timezone.now()
    if not current.is_pending or current.is_overdue(now):
        raise AlreadyResolved(_current_expiring_if_overdue(current))
    if not can_extend(current, now):
        raise Refused(
            _("No more time can be added to this question: it has had all the extra time it may get."),
            code="extend_limit",
        )


def _extend_once(current: Prompt, by: User | None, surface: str) -> Extended | None:
    """One compare-and-set on the deadline and the count as ``current`` read them; None when it lost."""
    now = timezone.now()
    previous, count = current.expires_at, current.extended
    deadline = previous + timedelta(seconds=extension_seconds(current, now))
    with transaction.atomic():
        won = Prompt.objects.filter(
            pk=current.pk, status=PENDING, expires_at=previous, extended=count, expires_at__gt=now
        ).update(expires_at=deadline, extended=count + 1)
        if not won:
            return None
        # Set before the announcement: outside an outer transaction it leaves as this block ends.
        current.expires_at, current.extended = deadline, count + 1
        extended = Extended(current, previous)
        _record(
            current,
            PromptEvent.Kind.EXTENDED,
            _username(by) or "unknown",
            surface,
            previous=contract.iso(previous),
            deadline=contract.iso(deadline),
            added_seconds=extended.added_seconds,
            extended=count + 1,
        )
        effects.prompt_extended(current)
    return extended


def next_deadline(after: datetime | None = None) -> datetime | None:
    """The first pending prompt's deadline (only of those not yet due at ``after``, when given)."""
    pending = Prompt.objects.filter(status=PENDING)
    if after is not None:
        pending = pending.filter(expires_at__gt=after)
    at: datetime | None = pending.aggregate(at=Min("expires_at"))["at"]
    return at


def _no_answer(
    prompt: Prompt,
    reason: str,
    event: str,
    *,
    by: User | None = None,
    actor: str = "",
    surface: str,
    overdue: bool = False,
    detail: Mapping[str, Any] | None = None,
) -> Prompt:
    questions = list(prompt.questions.values_list("key", "header"))
    # An expiry happened at the deadline, whenever the loop got to it.
    resolved_at = prompt.expires_at if overdue else timezone.now()
    result = contract.no_answer_result(
        str(prompt.pk),
        questions,
        reason=reason,
        resolved_by=_username(by),
        surface=surface or None,
        resolved_at=resolved_at,
    )
    resolution = Resolution(
        Prompt.Status.NO_ANSWER,
        reason,
        event,
        by=by,
        actor=actor,
        surface=surface,
        resolved_at=resolved_at,
        result=result,
        overdue=overdue,
        detail=detail or {},
    )
    return _transition(prompt, resolution)


@dataclass(frozen=True)
class Resolution:
    """One way out of pending, complete before the compare-and-set tries it."""

    status: str
    reason: str
    event: str  # the PromptEvent kind the trail records
    by: User | None
    surface: str
    resolved_at: datetime
    result: dict[str, Any]  # what the agent receives, exactly
    actor: str = ""  # who the trail names when ``by`` is nobody: "agent helper", "system"
    answers: tuple[Answer, ...] = ()
    overdue: bool = False  # an expiry: it wins only after the deadline, an answer only before
    detail: Mapping[str, Any] = field(default_factory=dict)  # more for the trail (how a reply was read)

    @property
    def trail_actor(self) -> str:
        return self.actor or _username(self.by) or "unknown"


def _transition(prompt: Prompt, resolution: Resolution) -> Prompt:
    """The one compare-and-set out of pending; raises AlreadyResolved for the loser."""
    now = timezone.now()
    with transaction.atomic():
        # An answer is accepted only before the deadline; an expiry only after it.
        in_time = {"expires_at__lte": now} if resolution.overdue else {"expires_at__gt": now}
        won = Prompt.objects.filter(pk=prompt.pk, status=PENDING, **in_time).update(
            status=resolution.status,
            reason=resolution.reason,
            resolved_at=resolution.resolved_at,
            resolved_by=resolution.by,
            surface=resolution.surface,
            result=resolution.result,
            **_searched_answers(resolution.answers),
        )
        if won:
            Answer.objects.bulk_create(resolution.answers)
            deadline = contract.iso(prompt.expires_at)
            _record(
                prompt,
                resolution.event,
                resolution.trail_actor,
                resolution.surface,
                deadline=deadline,
                **resolution.detail,
            )
            effects.prompt_resolved(prompt, resolution.result)
    if not won:
        current = _current_expiring_if_overdue(prompt)
        if current.is_pending:  # an expiry read the deadline before More time moved it
            raise Conflict(f"This prompt is still in time until {clock(current.expires_at)}.")
        raise AlreadyResolved(current)
    prompt.status, prompt.reason, prompt.surface = resolution.status, resolution.reason, resolution.surface
    prompt.resolved_at, prompt.resolved_by, prompt.result = resolution.resolved_at, resolution.by, resolution.result
    return prompt


def _searched_answers(answers: tuple[Answer, ...]) -> dict[str, Concat]:
    """The free-text answers added to the prompt's search_text, in the same UPDATE."""
    typed = [a.free_text for a in answers if a.free_text]
    return {"search_text": Concat("search_text", Value(LINE + LINE.join(typed)))} if typed else {}


def _current_expiring_if_overdue(prompt: Prompt) -> Prompt:
    """The prompt as it stands after losing a race; one found overdue is expired first."""
    current = Prompt.objects.get(pk=prompt.pk)
    if current.is_overdue():
        try:
            return _expire(current)
        except AlreadyResolved as lost:
            return lost.prompt
        except Conflict:  # not overdue after all: More time moved its deadline meanwhile
            return Prompt.objects.get(pk=prompt.pk)
    return current


def _record(prompt: Prompt, kind: str, actor: str, surface: str, **detail: Any) -> None:
    """A line of the prompt's trail (append-only: never read back here, so written raw)."""
    EVENT_ROWS.insert([(prompt.pk, timezone.now(), kind, actor, surface, detail)])


def _username(user: User | None) -> str | None:
    return user.get_username() if user is not None else None


# --- chat messages -------------------------------------------------------------

MAX_MESSAGE = 4000


def post_agent_message(agent: Agent, key: str, text: Any, *, title: str | None = None) -> Message:
    """The agent says something in the session's chat; the session is made on first use."""
    return _post_for_agent(agent, key, text, title, Message.Author.AGENT)


def post_agent_note(
    agent: Agent, key: str, text: str, *, title: str | None = None, tell: Literal["", "waiting", "finished"] = ""
) -> Message:
    """A line askuser writes in the session's timeline about the agent ("Claude Code finished: …"):
    counted like the agent's messages, shown as askuser's own, never read as a reply. With ``tell``,
    it is also news for the person's channels (``effects.agent_news``), written with the line."""
    with transaction.atomic():
        message = _post_for_agent(agent, key, text, title, Message.Author.SYSTEM)
        if tell:
            effects.agent_news(message, finished=tell == "finished")
    return message


def _post_for_agent(agent: Agent, key: str, text: Any, title: str | None, author: str) -> Message:
    text = _message_text(text)
    with transaction.atomic():
        # Before the session is made on demand: a refused message leaves nothing behind.
        posted = Message.objects.filter(agent=agent)
        _check_window(posted, settings.ASKUSER_MESSAGE_RATE_LIMIT, "posted {limit} messages")
        session, _ = _session_for(agent, key, title)
        message = Message.objects.create(session=session, author=author, text=text, agent=agent)
        effects.message_created(message)
    return message


@dataclass(frozen=True)
class Posted:
    message: Message
    answered: Prompt | None = None
    note: Message | None = None  # what askuser told the user about the reply


def post_user_message(session: Session, user: User, text: Any) -> Posted:
    """A message typed into the composer; while a prompt is pending, it is read as the reply."""
    text = _message_text(text)
    pending = session.prompts.filter(status=PENDING).first()
    if pending is not None and pending.is_overdue():
        _current_expiring_if_overdue(pending)  # a late reply is a plain message
        pending = None
    with transaction.atomic():
        message = Message.objects.create(
            session=session, author=Message.Author.USER, text=text, user=user, prompt=pending
        )
        effects.message_created(message)
    if pending is None:
        return Posted(message)
    return _read_as_reply(session, user, message, pending)


def _read_as_reply(session: Session, user: User, message: Message, prompt: Prompt) -> Posted:
    questions = [textreply.TextQuestion.of(q) for q in questions_of(prompt)]  # read once: answer() reuses them
    reading = textreply.read_reply(questions, message.text)
    if not reading.complete:
        return Posted(message, note=_note(session, prompt, textreply.what_is_missing(questions, reading)))
    detail = {"reply": message.text, "read_as": textreply.how_it_was_read(questions, reading)}
    try:
        answered = answer(prompt, reading.answers, by=user, surface="text", detail=detail)
    except AlreadyResolved as lost:
        stays = _("%(outcome)s Your message stays in the chat.") % {"outcome": lost.for_person}
        return Posted(message, note=_note(session, prompt, stays))
    except InvalidAnswer as refused:
        return Posted(message, note=_note(session, prompt, refused.for_person))
    return Posted(message, answered=answered)


def _note(session: Session, prompt: Prompt, text: str) -> Message:
    with transaction.atomic():
        note = Message.objects.create(session=session, author=Message.Author.SYSTEM, text=text, prompt=prompt)
        effects.message_created(note)
    return note


def _message_text(text: Any) -> str:
    problem, person = None, ""
    if not isinstance(text, str):
        problem, person = "must be a string", _("A message must be text.")
    elif not text.strip():
        problem, person = "must not be blank", _("Write something first.")
    elif len(text.strip()) > MAX_MESSAGE:
        problem = f"must be at most {MAX_MESSAGE} characters (got {len(text.strip())})"
        person = _("A message holds at most %(limit)d characters; this one has %(length)d.") % {
            "limit": MAX_MESSAGE,
            "length": len(text.strip()),
        }
    elif control_character(text.strip()):
        problem, person = "must not contain control characters", _("A message must not contain control characters.")
    if problem:
        raise InvalidMessage(f"text: {problem}.", person=person, errors=[{"path": "text", "message": problem}])
    return str(text).strip()  # a str: anything else was refused above


def messages_after(session_id: int, after: int) -> list[Message]:
    """The user's messages after the given id, oldest first: what an agent reads."""
    messages = Message.objects.filter(session_id=session_id, id__gt=after, author=Message.Author.USER)
    return list(messages.order_by("id")[:200])


def session_for_owner(owner_id: int, key: str) -> Session:
    session = Session.objects.filter(owner_id=owner_id, key=key).first()
    if session is None:
        raise NotFound(f"No session {key}: a session starts when its agent first asks or posts a message.")
    return session


def mute_session(session: Session, *, by: User, muted: bool = True) -> bool:
    """Mute the session's notifications for its owner ``by`` (or, ``muted=False``, unmute them);
    False when it already was so. A compare-and-set: a tap on a notification and the page's
    switch at once change it once. What a mute holds back is the channels' to say
    (``delivery.channels.Folder.heeds_mute``): the session's page shows every prompt as before."""
    if session.owner_id != by.pk:
        raise NotFound("No such session.")
    now = timezone.now() if muted else None
    changed = Session.objects.filter(pk=session.pk, muted_at__isnull=muted).update(muted_at=now)
    if changed:
        session.muted_at = now
    else:
        session.refresh_from_db(fields=["muted_at"])
    return bool(changed)


# --- reading -------------------------------------------------------------------


def result_expiring_if_overdue(prompt: Prompt) -> dict[str, Any]:
    """The agent's view of a prompt (SPEC 3.2). A read that writes: an overdue
    prompt is expired first, so no result waits for the deadline loop."""
    if prompt.is_overdue():
        prompt = _current_expiring_if_overdue(prompt)
    if prompt.result is not None:
        result: dict[str, Any] = prompt.result
        return result
    return contract.pending_result(str(prompt.pk), prompt.expires_at, prompt.extended)


def prompt_for_owner(owner_id: int, prompt_id: uuid.UUID | str) -> Prompt:
    try:
        return Prompt.objects.get(pk=prompt_id, session__owner_id=owner_id)
    except (Prompt.DoesNotExist, ValidationError, ValueError):
        raise NotFound(f"No prompt {prompt_id} for this agent's owner.") from None


def describe_resolution(prompt: Prompt, say: wording.Say = wording.for_agent) -> str:
    """What happened to a prompt, as the loser of a race is told: in English for
    the agent API, or ``say=wording.for_person`` for people."""
    outcome = wording.outcome_of(prompt.status, prompt.reason)
    if outcome is None:
        return say(wording.STILL_PENDING)
    who = prompt.resolved_by.get_username() if prompt.resolved_by else None
    return wording.sentence(outcome, prompt.surface, who, clock(prompt.resolved_at), say)


def clock(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%H:%M:%S UTC") if moment else "an unknown time"
