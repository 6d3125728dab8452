"""Reading the question history for staff: what was asked, what was answered.

The admin (``admin.py``) shows these; nothing here changes a prompt. The
figures are computed in the database so that a long history costs queries,
not memory: the CSV export walks prompts in chunks, and percentiles are read
with ``ORDER BY … LIMIT 1 OFFSET k`` rather than by loading every duration.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import Count, DurationField, ExpressionWrapper, F, Prefetch, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from . import contract
from .models import Agent, Option, Prompt, Question

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


def export_queryset(prompts: QuerySet[Prompt]) -> QuerySet[Prompt]:
    questions = Question.objects.select_related("answer").prefetch_related(
        Prefetch("options", queryset=Option.objects.order_by("position"))
    )
    return prompts.select_related("agent", "session", "session__owner", "run", "resolved_by").prefetch_related(
        Prefetch("questions", queryset=questions.order_by("position"))
    )


def csv_rows(prompts: QuerySet[Prompt]) -> Iterator[list[Any]]:
    """The header, then one row per question with its answer, in the queryset's order."""
    yield CSV_HEADER
    for prompt in export_queryset(prompts).iterator(chunk_size=CSV_CHUNK):
        for question in prompt.questions.all():
            yield [csv_safe(value) for value in _csv_row(prompt, question)]


def _csv_row(prompt: Prompt, question: Question) -> list[Any]:
    answer = getattr(question, "answer", None)
    span = took(prompt)
    resolved = prompt.status != PENDING
    return [
        str(prompt.pk),
        contract.iso(prompt.created_at),
        prompt.agent.name,
        prompt.session.owner.get_username(),
        prompt.session.key,
        prompt.run.run_id,
        prompt.status,
        prompt.reason,
        prompt.surface,
        prompt.resolved_by.get_username() if prompt.resolved_by else "",
        contract.iso(prompt.resolved_at) or "",
        round(span.total_seconds(), 3) if span is not None else "",
        question.key,
        question.position + 1,
        question.header_full,
        question.text,
        "yes" if question.multi_select else "no",
        _json([o.label for o in question.options.all()]),
        _json(answer.values) if answer else "",
        answer.free_text if answer else "",
        ("yes" if (answer.skipped if answer else prompt.reason == Prompt.Reason.SKIPPED) else "no") if resolved else "",
    ]


def _json(values: list[str]) -> str:
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
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    since = today - timedelta(days=days - 1)
    prompts = Prompt.objects.filter(created_at__gte=since)
    if agent is not None:
        prompts = prompts.filter(agent=agent)
    per_agent = [
        AgentFigures(a, figures(prompts.filter(agent=a)))
        for a in Agent.objects.filter(pk__in=prompts.values("agent")).select_related("owner").order_by("name", "pk")
    ]
    return Dashboard(since, days, agent, figures(prompts), per_day(prompts, since.date(), days), per_agent)


def figures(prompts: QuerySet[Prompt]) -> Figures:
    counts = prompts.aggregate(
        total=Count("pk"),
        answered=Count("pk", filter=Q(status=ANSWERED)),
        no_answer=Count("pk", filter=Q(status=NO_ANSWER)),
        pending=Count("pk", filter=Q(status=PENDING)),
        **{reason: Count("pk", filter=Q(status=NO_ANSWER, reason=reason)) for reason in Prompt.Reason.values},
    )
    answered = prompts.filter(status=ANSWERED)
    return Figures(
        total=counts["total"],
        answered=counts["answered"],
        no_answer=counts["no_answer"],
        pending=counts["pending"],
        by_reason={reason: counts[reason] for reason in Prompt.Reason.values},
        median=percentile(answered, 0.5, counts["answered"]),
        p90=percentile(answered, 0.9, counts["answered"]),
    )


def percentile(prompts: QuerySet[Prompt], fraction: float, count: int) -> timedelta | None:
    """The nearest-rank percentile of the time to resolution, read in the database."""
    if not count:
        return None
    rank = max(math.ceil(fraction * count), 1)
    ordered = prompts.annotate(took=TOOK).order_by("took", "pk").values_list("took", flat=True)
    return next(iter(ordered[rank - 1 : rank]), None)


def per_day(prompts: QuerySet[Prompt], first: date, days: int) -> list[Day]:
    rows = (
        prompts.annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(
            answered=Count("pk", filter=Q(status=ANSWERED)),
            no_answer=Count("pk", filter=Q(status=NO_ANSWER)),
            pending=Count("pk", filter=Q(status=PENDING)),
        )
        .order_by("day")
    )
    by_day = {row["day"]: row for row in rows}
    empty = {"answered": 0, "no_answer": 0, "pending": 0}
    return [
        Day(day, **{k: by_day.get(day, empty)[k] for k in empty})
        for day in (first + timedelta(days=n) for n in range(days))
    ]


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
        y, segments = baseline, []
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
    magnitude = 10 ** int(math.log10(value))
    for step in (1, 2, 4, 5, 8, 10):
        if step * magnitude >= value and (step * magnitude) % 4 == 0:
            return step * magnitude
    return 10 * magnitude
