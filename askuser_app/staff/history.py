"""Reading the question history for staff: what was asked, what was answered.

The admin (``admin.py``) shows these; nothing here changes a prompt. A long
history costs queries, not memory: the CSV export walks the prompts in chunks.
The dashboard reads its window (at most 90 days) once, five plain columns per
prompt, and counts in Python: one portable query, and no date function per
row (on SQLite those are Python callbacks, a second per 100,000 rows); its
memory is one float per answered prompt, for the percentiles.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from datetime import date, datetime, timedelta
from itertools import islice
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import DurationField, ExpressionWrapper, F, QuerySet
from django.utils import timezone

from askuser_app.domain import contract, wording
from askuser_app.models import Agent, Option, Prompt, Question

# resolved_at - created_at: the "time to resolution" of a prompt (time to answer, for an answered one).
TOOK = ExpressionWrapper(F("resolved_at") - F("created_at"), output_field=DurationField())

ANSWERED, NO_ANSWER, PENDING = Prompt.Status.ANSWERED, Prompt.Status.NO_ANSWER, Prompt.Status.PENDING


def took(prompt: Prompt) -> timedelta | None:
    return prompt.resolved_at - prompt.created_at if prompt.resolved_at else None


def duration_text(span: timedelta | None) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``: short enough for a table cell."""
    if span is None:
        return "—"
    seconds = max(span.total_seconds(), 0)
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, seconds = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def answer_lines(prompt: Prompt) -> list[str]:
    """One line per question, as the agent's result summarises it (``Deploy: Production``)."""
    if prompt.result is not None:
        return list(prompt.result.get("summary") or [])
    return [f"Pending until {prompt.expires_at:%Y-%m-%d %H:%M} UTC"]


def outcome_caption(prompt: Prompt) -> str:
    """What happened to the prompt, in the words the Control UI's summary uses."""
    outcome = wording.outcome_of(prompt.status, prompt.reason)
    if outcome is None:
        return ""
    who = prompt.resolved_by.get_username() if prompt.resolved_by else None
    return wording.caption(outcome, prompt.surface, who, wording.for_person)


# --- the detail page -------------------------------------------------------------


@dataclass(frozen=True)
class OptionView:
    position: int
    label: str
    description: str
    recommended: bool
    chosen: bool


@dataclass(frozen=True)
class QuestionView:
    question: Question
    options: list[OptionView]
    outcome: str  # answered / skipped / expired / cancelled / aborted / pending
    chosen: list[str] = field(default_factory=list)
    free_text: str = ""

    @property
    def outcome_word(self) -> str:
        """The outcome's word (Skipped, Expired, Cancelled) as summaries say it; "" otherwise."""
        return wording.word(self.outcome, wording.for_person) if self.outcome in wording.OUTCOMES else ""


def question_views(prompt: Prompt) -> list[QuestionView]:
    """Each question with its options in order, the recommended one and the chosen ones marked."""
    questions = prompt.questions.select_related("answer").prefetch_related("options")
    return [_question_view(prompt, question) for question in questions]


def _question_view(prompt: Prompt, question: Question) -> QuestionView:
    answer = getattr(question, "answer", None)
    chosen = [v for v in answer.values if v != answer.free_text] if answer else []
    options = [
        OptionView(o.position + 1, o.label, o.description, o.is_recommended, o.label in chosen)
        for o in question.options.all()
    ]
    if answer is not None:
        outcome = "skipped" if answer.skipped else "answered"
        return QuestionView(question, options, outcome, chosen, answer.free_text)
    return QuestionView(question, options, prompt.reason or prompt.status)


# --- CSV export --------------------------------------------------------------------

CSV_HEADER = [
    "prompt_id",
    "created_at",
    "agent",
    "owner",
    "session",
    "run_id",
    "status",
    "reason",
    "surface",
    "resolved_by",
    "resolved_at",
    "seconds_to_resolution",
    "question_id",
    "position",
    "header",
    "question",
    "multi_select",
    "options",
    "answer_values",
    "free_text",
    "skipped",
]
CSV_CHUNK = 500  # prompts fetched per query (with their questions, options and answers)
CSV_ROWS_PER_WRITE = 200  # rows sent to the client at a time
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> Any:
    """Questions and answers come from agents and people: a cell that a spreadsheet
    would run as a formula gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


@dataclass(frozen=True)
class ExportedPrompt:
    """The prompt columns of an export row, read as plain values (no model instances:
    building those costs more than the query at 100,000 prompts)."""

    id: Any
    created_at: datetime
    agent: str
    owner: str
    session: str
    run_id: str
    status: str
    reason: str
    surface: str
    resolved_by: str | None
    resolved_at: datetime | None


@dataclass(frozen=True)
class ExportedQuestion:
    key: str
    position: int
    header: str
    text: str
    multi_select: bool
    values: list[str] | None  # None: no answer row (pending, or resolved without an answer)
    free_text: str | None
    skipped: bool | None
    options: list[str] = field(default_factory=list)


def csv_rows(prompts: QuerySet[Prompt]) -> Iterator[list[Any]]:
    """The header, then one row per question with its answer, in the queryset's order,
    reading ``CSV_CHUNK`` prompts (and then their questions and options) at a time."""
    yield CSV_HEADER
    username = f"__{get_user_model().USERNAME_FIELD}"
    columns = [f.name for f in fields(ExportedPrompt)]
    paths = {"id": "pk", "agent": "agent__name", "owner": "session__owner" + username, "session": "session__key"}
    paths |= {"run_id": "run__run_id", "resolved_by": "resolved_by" + username}
    rows = prompts.values_list(*(paths.get(c, c) for c in columns)).iterator(chunk_size=CSV_CHUNK)
    for chunk in _batches((ExportedPrompt(*row) for row in rows), CSV_CHUNK):
        questions = _questions_of([prompt.id for prompt in chunk])
        for prompt in chunk:
            for question in questions.get(prompt.id, ()):
                yield [csv_safe(value) for value in _csv_row(prompt, question)]


def _batches(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    while batch := list(islice(items, size)):
        yield batch


QUESTION_COLUMNS = {"header": "header_full", "values": "answer__values", "free_text": "answer__free_text"}
QUESTION_COLUMNS |= {"skipped": "answer__skipped"}


def _questions_of(prompt_ids: list[Any]) -> dict[Any, list[ExportedQuestion]]:
    """The prompts' questions in order, each with its answer and its option labels in order."""
    questions: dict[Any, list[ExportedQuestion]] = defaultdict(list)
    by_id: dict[int, ExportedQuestion] = {}
    columns = [QUESTION_COLUMNS.get(f.name, f.name) for f in fields(ExportedQuestion) if f.name != "options"]
    rows = Question.objects.filter(prompt_id__in=prompt_ids).order_by("prompt_id", "position")
    for pk, prompt_id, *values in rows.values_list("pk", "prompt_id", *columns):
        by_id[pk] = question = ExportedQuestion(*values)
        questions[prompt_id].append(question)
    options = Option.objects.filter(question_id__in=by_id).order_by("question_id", "position")
    for question_id, label in options.values_list("question_id", "label"):
        by_id[question_id].options.append(label)
    return questions


def _csv_row(prompt: ExportedPrompt, question: ExportedQuestion) -> list[Any]:
    span = prompt.resolved_at - prompt.created_at if prompt.resolved_at else None
    answered = question.values is not None
    skipped = question.skipped if answered else prompt.reason == Prompt.Reason.SKIPPED
    return [
        str(prompt.id),
        contract.iso(prompt.created_at),
        prompt.agent,
        prompt.owner,
        prompt.session,
        prompt.run_id,
        prompt.status,
        prompt.reason,
        prompt.surface,
        prompt.resolved_by or "",
        contract.iso(prompt.resolved_at) or "",
        round(span.total_seconds(), 3) if span is not None else "",
        question.key,
        question.position + 1,
        question.header,
        question.text,
        "yes" if question.multi_select else "no",
        _json(question.options),
        _json(question.values) if answered else "",
        question.free_text if answered else "",
        ("yes" if skipped else "no") if prompt.status != PENDING else "",
    ]


def _json(values: list[str] | None) -> str:
    return json.dumps(values, ensure_ascii=False)


class _Line:
    """A file-like object whose write returns what was written, for csv.writer."""

    def write(self, text: str) -> str:
        return text


def csv_chunks(rows: Iterable[list[Any]]) -> Iterator[bytes]:
    writer = csv.writer(_Line())
    batch: list[str] = []
    for row in rows:
        batch.append(writer.writerow(row))
        if len(batch) >= CSV_ROWS_PER_WRITE:
            yield "".join(batch).encode()
            batch = []
    if batch:
        yield "".join(batch).encode()


# --- the dashboard -------------------------------------------------------------

DASHBOARD_DAYS = (7, 14, 30, 90)
DEFAULT_DAYS = 14


@dataclass(frozen=True)
class Figures:
    """What happened to a set of prompts."""

    total: int
    answered: int
    no_answer: int
    pending: int
    by_reason: dict[str, int]
    median: timedelta | None
    p90: timedelta | None

    @property
    def answered_share(self) -> float | None:
        resolved = self.answered + self.no_answer
        return self.answered / resolved if resolved else None

    @property
    def answered_percent(self) -> str:
        share = self.answered_share
        return "—" if share is None else f"{share:.0%}"

    @property
    def median_text(self) -> str:
        return duration_text(self.median)

    @property
    def p90_text(self) -> str:
        return duration_text(self.p90)


@dataclass(frozen=True)
class AgentFigures:
    agent: Agent
    figures: Figures


@dataclass(frozen=True)
class Day:
    day: date
    answered: int
    no_answer: int
    pending: int

    @property
    def total(self) -> int:
        return self.answered + self.no_answer + self.pending


@dataclass(frozen=True)
class Dashboard:
    since: datetime
    days: int
    agent: Agent | None
    figures: Figures
    per_day: list[Day]
    per_agent: list[AgentFigures]


def dashboard(days: int = DEFAULT_DAYS, agent: Agent | None = None) -> Dashboard:
    """The figures of the last ``days`` calendar days, read in one pass over their prompts."""
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    since = today - timedelta(days=days - 1)
    prompts = Prompt.objects.filter(created_at__gte=since)
    if agent is not None:
        prompts = prompts.filter(agent=agent)
    overall = Tally()
    by_agent: defaultdict[int, Tally] = defaultdict(Tally)
    by_day: defaultdict[date, Counter[str]] = defaultdict(Counter)
    rows = prompts.order_by().values_list("agent_id", "status", "reason", "created_at", "resolved_at")
    for agent_id, status, reason, created, resolved in rows.iterator(chunk_size=2000):
        # An answered prompt always has its resolved_at; the check is for the types.
        seconds = (resolved - created).total_seconds() if status == ANSWERED and resolved is not None else None
        overall.add(status, reason, seconds)
        by_agent[agent_id].add(status, reason, seconds)
        by_day[timezone.localtime(created).date()][status] += 1
    agents = Agent.objects.filter(pk__in=by_agent).select_related("owner").order_by("name", "pk")
    per_day = [
        Day(day, by_day[day][ANSWERED], by_day[day][NO_ANSWER], by_day[day][PENDING])
        for day in (since.date() + timedelta(days=n) for n in range(days))
    ]
    per_agent = [AgentFigures(a, by_agent[a.pk].figures()) for a in agents]
    return Dashboard(since, days, agent, overall.figures(), per_day, per_agent)


class Tally:
    """Counts and answer times of some prompts, added one at a time."""

    def __init__(self) -> None:
        self.statuses: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()
        self.seconds: list[float] = []

    def add(self, status: str, reason: str, seconds: float | None) -> None:
        self.statuses[status] += 1
        if status == NO_ANSWER:
            self.reasons[reason] += 1
        if seconds is not None:
            self.seconds.append(seconds)

    def figures(self) -> Figures:
        self.seconds.sort()
        return Figures(
            total=self.statuses.total(),
            answered=self.statuses[ANSWERED],
            no_answer=self.statuses[NO_ANSWER],
            pending=self.statuses[PENDING],
            by_reason={reason: self.reasons[reason] for reason in Prompt.Reason.values},
            median=percentile(self.seconds, 0.5),
            p90=percentile(self.seconds, 0.9),
        )


def percentile(ordered: list[float], fraction: float) -> timedelta | None:
    """The nearest-rank percentile of sorted seconds."""
    if not ordered:
        return None
    return timedelta(seconds=ordered[max(math.ceil(fraction * len(ordered)), 1) - 1])


# --- the chart: geometry here, markup in the template ---------------------------

CHART_WIDTH, CHART_HEIGHT, CHART_TOP, CHART_BOTTOM, CHART_LEFT = 720, 220, 10, 30, 40


@dataclass(frozen=True)
class Bar:
    day: Day
    x: float
    width: float
    segments: list[tuple[str, float, float, int]]  # (kind, y, height, count)
    label: str  # the date under the bar, on some bars only


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    ticks: list[tuple[float, int]]  # (y, value) for the horizontal grid lines
    left: int
    baseline: float


def chart(days: list[Day]) -> Chart:
    """Stacked bars per day (answered, no answer, pending), scaled to the busiest day."""
    plot_height = CHART_HEIGHT - CHART_TOP - CHART_BOTTOM
    top = _nice_ceiling(max((d.total for d in days), default=0))
    slot = (CHART_WIDTH - CHART_LEFT) / max(len(days), 1)
    label_every = max(math.ceil(len(days) / 10), 1)
    baseline = CHART_TOP + plot_height
    bars = []
    for index, day in enumerate(days):
        y: float = baseline
        segments: list[tuple[str, float, float, int]] = []
        for kind, count in (("answered", day.answered), ("no_answer", day.no_answer), ("pending", day.pending)):
            height = plot_height * count / top
            y -= height
            if count:
                segments.append((kind, round(y, 2), round(height, 2), count))
        label = f"{day.day:%b %d}" if index % label_every == 0 else ""
        bars.append(Bar(day, round(CHART_LEFT + index * slot + slot * 0.15, 2), round(slot * 0.7, 2), segments, label))
    ticks = [(round(baseline - plot_height * n / 4, 2), top * n // 4) for n in range(5)]
    return Chart(CHART_WIDTH, CHART_HEIGHT, bars, ticks, CHART_LEFT, baseline)


def _nice_ceiling(value: int) -> int:
    """A round number at least ``value`` that divides into four grid steps (4, 8, 20, 40, 100, …)."""
    if value <= 4:
        return 4
    magnitude: int = 10 ** int(math.log10(value))
    for step in (1, 2, 4, 5, 8, 10):
        if step * magnitude >= value and (step * magnitude) % 4 == 0:
            return step * magnitude
    return 10 * magnitude
