"""Staff review of the question history in Django admin (SPEC 5).

The history is evidence: staff with the view permissions (the "Reviewers"
group holds them all) can see all of it, and nobody edits or deletes it by
hand. The only writes here are the product's own, through the same service
functions the API uses: cancel a pending prompt (waiting agents
and open pages hear of it), create an agent (its token shown once) and revoke
one. Cells are rendered from templates, so every agent and user string is
escaped.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from asgiref.sync import sync_to_async
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import PAGE_VAR, ChangeList
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.core.handlers.asgi import ASGIRequest
from django.core.paginator import Page, Paginator
from django.db.models import Count, Model, OuterRef, QuerySet, Subquery, prefetch_related_objects
from django.db.models.functions import Coalesce
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect, StreamingHttpResponse
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.utils.functional import cached_property
from django.utils.http import urlencode
from django.utils.translation import gettext, gettext_lazy, ngettext

from askuser_app.domain import services
from askuser_app.domain.chars import ascii_int
from askuser_app.models import (
    Agent,
    ChatLink,
    Delivery,
    DeliveryAttempt,
    Prompt,
    PushSubscription,
    Run,
    Session,
    WebhookAttempt,
    WebhookDelivery,
)
from askuser_app.staff import history

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django_stubs_ext import StrPromise, WithAnnotations

    # The stubs make these generic over their models; Django's classes take no
    # parameters at run time.
    ModelAdmin = admin.ModelAdmin[Any]
    TabularInline = admin.TabularInline[Any, Any]
    InlineFormSet = BaseInlineFormSet[Any, Any, Any]
    AnyPaginator = Paginator[Any]
else:
    ModelAdmin, TabularInline, InlineFormSet = admin.ModelAdmin, admin.TabularInline, BaseInlineFormSet
    AnyPaginator = Paginator

PENDING = Prompt.Status.PENDING


class PromptsTotal(TypedDict):
    prompts_total: int


def staff_user(request: HttpRequest) -> User:
    """Who is using the admin: its login lets in only active staff."""
    assert not isinstance(request.user, AnonymousUser)
    return request.user


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def changelist_url(model: type[Model], **filters: Any) -> str:
    # Admin URL names use the lower-cased class name (model_name).
    url = reverse(f"admin:askuser_app_{model.__name__.lower()}_changelist")
    return f"{url}?{urlencode(filters)}" if filters else url


def link(url: str, text: Any) -> str:
    return render_to_string("admin/askuser_app/link.html", {"url": url, "text": text})


class HistoryAdmin(ModelAdmin):
    """Django's view permissions decide who reads the history; nobody adds, edits or
    deletes a record by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# --- filters -------------------------------------------------------------------


class CreatedFilter(admin.DateFieldListFilter):
    """Django's date filter with Yesterday added: "what did the agent ask yesterday?"."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
        yesterday: dict[str, bool | date | datetime] = {
            self.lookup_kwarg_since: today - timedelta(days=1),
            self.lookup_kwarg_until: today,
        }
        self.links = (*self.links[:2], ("Yesterday", yesterday), *self.links[2:])


class AgentFilter(admin.RelatedFieldListFilter):
    """Agents with their owners: two owners may both call theirs "helper"."""

    def field_choices(
        self, field: Any, request: HttpRequest, model_admin: ModelAdmin
    ) -> list[tuple[str, str | StrPromise]]:
        agents = Agent.objects.select_related("owner").order_by("name", "owner__username")
        # Keys as strings: the filter compares them with the query string.
        return [(str(a.pk), f"{a.name} ({a.owner.get_username()})") for a in agents]


class OwnerFilter(admin.RelatedFieldListFilter):
    """Only users who have agents: nobody else has been asked anything."""

    def field_choices(
        self, field: Any, request: HttpRequest, model_admin: ModelAdmin
    ) -> list[tuple[str, str | StrPromise]]:
        owners = get_user_model().objects.filter(pk__in=Agent.objects.values("owner_id")).order_by("username")
        return [(str(user.pk), user.get_username()) for user in owners]


class SurfaceFilter(admin.SimpleListFilter):
    title = "surface"
    parameter_name = "surface"
    NONE = "-"

    def lookups(self, request: HttpRequest, model_admin: ModelAdmin) -> list[tuple[str, str]]:
        surfaces = Prompt.objects.exclude(surface="").order_by("surface").values_list("surface", flat=True).distinct()
        return [*((s, s) for s in surfaces), (self.NONE, "none (pending or expired)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Prompt]) -> QuerySet[Prompt]:
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(surface="" if value == self.NONE else value)


class RevokedFilter(admin.SimpleListFilter):
    title = "token"
    parameter_name = "revoked"

    def lookups(self, request: HttpRequest, model_admin: ModelAdmin) -> list[tuple[str, str]]:
        return [("no", "active"), ("yes", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Agent]) -> QuerySet[Agent]:
        if self.value() in ("yes", "no"):
            return queryset.filter(revoked_at__isnull=self.value() == "no")
        return queryset


# --- prompts -------------------------------------------------------------------


class PromptColumns:
    """Cells shared by the prompt list and the prompts shown inside sessions and runs."""

    @admin.display(description="created (UTC)", ordering="created_at")
    def created(self, prompt: Prompt) -> str:
        return f"{prompt.created_at.astimezone(UTC):%Y-%m-%d %H:%M:%S}"

    @admin.display(description="owner", ordering="session__owner__username")
    def owner(self, prompt: Prompt) -> str:
        return prompt.session.owner.get_username()

    @admin.display(description="questions")
    def question_list(self, prompt: Prompt) -> str:
        return render_to_string("admin/askuser_app/prompt/question_list.html", {"questions": prompt.questions.all()})

    @admin.display(description="answer")
    def answer_summary(self, prompt: Prompt) -> str:
        return render_to_string("admin/askuser_app/prompt/answer_summary.html", {"lines": history.answer_lines(prompt)})

    @admin.display(description="time to resolution", ordering="took")
    def time_to_resolution(self, prompt: Prompt) -> str:
        return history.duration_text(history.took(prompt))


class PromptQuerySet(QuerySet[Prompt]):
    """Prompts whose date hierarchy asks the ``created_at`` index.

    Django finds the years, months or days that have rows by truncating every
    row's date, a Python function per row on SQLite (a second for 100,000
    prompts). Here each candidate period between the first and the last date is
    one index range probe instead."""

    # A list, not a QuerySet as the stubs say: the date hierarchy only iterates it.
    def datetimes(  # type: ignore[override]
        self,
        field_name: str,
        kind: Literal["year", "month", "week", "day", "hour", "minute", "second"],
        order: Literal["ASC", "DESC"] = "ASC",
        tzinfo: Any = None,
    ) -> list[datetime]:
        if kind not in PERIODS or tzinfo is not None:
            return list(super().datetimes(field_name, kind, order, tzinfo))
        rows = self.order_by()
        # Two ordered reads, not MIN and MAX in one statement, which SQLite answers by a scan.
        first = rows.order_by(field_name).values_list(field_name, flat=True).first()
        last = rows.order_by(f"-{field_name}").values_list(field_name, flat=True).first()
        if first is None or last is None:
            return []
        found = [
            start
            for start, end in periods(timezone.localtime(first), timezone.localtime(last), kind)
            if rows.filter(**{f"{field_name}__gte": start, f"{field_name}__lt": end}).exists()
        ]
        return found if order == "ASC" else found[::-1]


PERIODS = ("year", "month", "day")


def periods(first: datetime, last: datetime, kind: str) -> Iterator[tuple[datetime, datetime]]:
    """Successive calendar years, months or days (local time) from the one holding ``first`` to ``last``."""
    start = first.replace(hour=0, minute=0, second=0, microsecond=0)
    if kind in ("year", "month"):
        start = start.replace(day=1, month=1 if kind == "year" else start.month)
    while start <= last:
        end = next_period(start, kind)
        yield start, end
        start = end


def next_period(start: datetime, kind: str) -> datetime:
    if kind == "year":
        naive = start.replace(tzinfo=None, year=start.year + 1)
    elif kind == "month":
        naive = start.replace(tzinfo=None, year=start.year + start.month // 12, month=start.month % 12 + 1)
    else:
        naive = start.replace(tzinfo=None) + timedelta(days=1)
    return timezone.make_aware(naive, start.tzinfo)


class PromptChangeList(ChangeList):
    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        # The page's questions in one query, however many rows the page has.
        self.result_list = list(self.result_list)
        prefetch_related_objects(self.result_list, "questions")


# The page number the count is bounded by: any further page is past every count's reach
# (a billion pages), and its bound would overflow the database's LIMIT.
PAGE_DIGITS = 9


class BoundedPaginator(AnyPaginator):
    """Counts the matches up to ``BOUND`` past the page asked for, no further,
    by reading their keys; when that read found them all, the page is read by
    those keys.

    Counting every prompt of a long history, or every one a common word
    matches, reads them all. Past the bound, the list says "more than"
    (templates/admin/askuser_app/prompt/pagination.html) and pages on to the
    bound; a later page counts on from there. Under it, the page sorts the
    matches found instead of walking the history newest first to find them
    again: a rare word's page was a second read of every prompt on SQLite (and
    on PostgreSQL whenever the planner took the word for a common one)."""

    BOUND = 1000

    def __init__(self, prompts: QuerySet[Prompt], per_page: int, *, page: int = 1, **kwargs: Any) -> None:
        super().__init__(prompts, per_page, **kwargs)
        self.prompts = prompts
        self.bound = self.BOUND + (max(page, 1) - 1) * per_page

    @cached_property
    def matches(self) -> list[uuid.UUID]:
        """The keys of up to bound + 1 matches, in no order: any of them tell "more than" from a count."""
        return list(self.prompts.order_by().values_list("pk", flat=True)[: self.bound + 1])

    @cached_property
    def count(self) -> int:
        return len(self.matches)

    @property
    def bounded(self) -> bool:
        """Whether there are more matches than counted."""
        return self.count > self.bound

    def page(self, number: int | str) -> Page[Any]:
        page = super().page(number)
        if self.bounded:
            return page
        bottom = (page.number - 1) * self.per_page
        top = self.count if page.number == self.num_pages else bottom + self.per_page
        page.object_list = self.prompts.filter(pk__in=self.matches)[bottom:top]
        return page


@admin.register(Prompt)
class PromptAdmin(PromptColumns, HistoryAdmin):
    list_display = (
        "created",
        "agent",
        "session_key",
        "owner",
        "question_list",
        "answer_summary",
        "status",
        "reason",
        "surface",
        "resolved_by",
        "time_to_resolution",
        "extended_times",
    )
    list_filter = (
        "status",
        "reason",
        SurfaceFilter,
        ("agent", AgentFilter),
        ("session__owner", OwnerFilter),
        ("created_at", CreatedFilter),
    )
    list_select_related = ("agent", "session", "session__owner", "resolved_by")
    date_hierarchy = "created_at"
    # Each word in one column of the prompt (Prompt.search_text: its session key, questions,
    # option labels and free-text answers), which Django's own search reads with no join.
    search_fields = ("search_text",)
    search_help_text = "Question text or header, option labels, free-text answers, session key or prompt id."
    ordering = ("-created_at",)
    list_per_page = 50
    # The list's count is bounded (BoundedPaginator); the unfiltered total would count all.
    show_full_result_count = False
    actions = ("cancel_pending",)
    fieldsets = (
        (None, {"fields": ("id", "status", "reason", "agent", "owner", "session", "run", "hook_event")}),
        (
            "Time",
            {"fields": ("created", "timeout_seconds", "expires", "extended_times", "resolved", "time_to_resolution")},
        ),
        ("Resolved", {"fields": ("resolved_by", "surface")}),
        (
            "As the agent sent and received it",
            {"classes": ["collapse"], "fields": ("warnings", "idempotency_key", "result_json")},
        ),
    )
    readonly_fields = (
        *(name for _, options in fieldsets for name in options["fields"] if isinstance(name, str)),  # no pairs here
        "question_list",
        "answer_summary",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Prompt]:
        prompts = PromptQuerySet(Prompt).annotate(took=history.TOOK)
        return prompts.order_by(*self.get_ordering(request))

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return PromptChangeList

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Prompt], search_term: str
    ) -> tuple[QuerySet[Prompt], bool]:
        """Django's search of ``search_text``, and the prompt whose id the term is."""
        prompts, duplicates = super().get_search_results(request, queryset, search_term)
        try:
            prompt_id = uuid.UUID(search_term.strip())
        except ValueError:
            return prompts, duplicates
        return prompts | queryset.filter(pk=prompt_id), duplicates

    def get_paginator(
        self, request: HttpRequest, queryset: QuerySet[Prompt], per_page: int, orphans: int = 0,
        allow_empty_first_page: bool = True,
    ) -> AnyPaginator:  # fmt: skip
        page = ascii_int(request.GET.get(PAGE_VAR), digits=PAGE_DIGITS) or 1
        return BoundedPaginator(queryset, per_page, page=page, orphans=orphans,
                                allow_empty_first_page=allow_empty_first_page)  # fmt: skip

    @admin.display(description="session", ordering="session__key")
    def session_key(self, prompt: Prompt) -> str:
        return link(changelist_url(Prompt, session__id__exact=prompt.session_id), prompt.session.key)

    @admin.display(description="expires (UTC)")
    def expires(self, prompt: Prompt) -> str:
        return f"{prompt.expires_at.astimezone(UTC):%Y-%m-%d %H:%M:%S}"

    @admin.display(description="extended", ordering="extended")
    def extended_times(self, prompt: Prompt) -> str:
        """How often the person asked for more time (each moved ``expires``)."""
        return f"{prompt.extended}×" if prompt.extended else "—"

    @admin.display(description="resolved (UTC)")
    def resolved(self, prompt: Prompt) -> str:
        return f"{prompt.resolved_at.astimezone(UTC):%Y-%m-%d %H:%M:%S}" if prompt.resolved_at else "—"

    @admin.display(description="result as the agent received it")
    def result_json(self, prompt: Prompt) -> str:
        text = json.dumps(prompt.result, indent=2, ensure_ascii=False) if prompt.result is not None else ""
        return render_to_string("admin/askuser_app/prompt/result_json.html", {"result": text})

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        prompt = self.get_object(request, unquote(object_id))
        if prompt is not None:
            extra_context = {
                **(extra_context or {}),
                "questions": history.question_views(prompt),
                "outcome": history.outcome_caption(prompt),
                "events": prompt.events.all(),
                "session_prompts_url": changelist_url(Prompt, session__id__exact=prompt.session_id),
                "can_cancel": prompt.is_pending and self.has_cancel_permission(request),
            }
        return super().change_view(request, object_id, form_url, extra_context)

    # --- the one write: cancel, through the service the API uses ---------------

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(f"{self.opts.app_label}.change_prompt")

    @admin.action(description="Cancel selected pending prompts", permissions=["cancel"])
    def cancel_pending(self, request: HttpRequest, queryset: QuerySet[Prompt]) -> None:
        pending = list(queryset.filter(status=PENDING).select_related("session"))
        left_alone = queryset.exclude(status=PENDING).count()
        cancelled = 0
        for prompt in pending:
            try:
                services.cancel(prompt, by=staff_user(request), surface="admin")
            except services.AlreadyResolved as lost:
                label = f"{prompt.session.key} · {prompt.pk}"
                self.message_user(request, f"Not cancelled: {label}: {lost.message}", messages.WARNING)
            else:
                self.log_change(request, prompt, "Cancelled it (no_answer, reason cancelled).")
                cancelled += 1
        if cancelled:
            self.message_user(
                request, f"Cancelled {plural(cancelled, 'pending prompt')}; waiting agents and open pages were told."
            )
        if left_alone:
            self.message_user(
                request, f"Left {plural(left_alone, 'selected prompt')} unchanged: no longer pending.", messages.WARNING
            )

    # --- export and dashboard --------------------------------------------------

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view
        return [
            path("export.csv", view(self.export_view), name="askuser_app_prompt_export"),
            path("dashboard/", view(self.dashboard_view), name="askuser_app_prompt_dashboard"),
            *super().get_urls(),
        ]

    def export_view(self, request: HttpRequest) -> HttpResponseBase:
        """The changelist's prompts (same filters, search and order) as CSV, one row per question."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            return HttpResponseRedirect(changelist_url(Prompt, e=1))
        chunks = history.csv_chunks(history.csv_rows(changelist.queryset))
        response = StreamingHttpResponse(streamed(request, chunks), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="prompts-{timezone.now():%Y%m%d-%H%M%S}.csv"'
        return response

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        days = ascii_int(request.GET.get("days"))
        days = days if days in history.DASHBOARD_DAYS else history.DEFAULT_DAYS
        agent_id = ascii_int(request.GET.get("agent"))
        agent = Agent.objects.select_related("owner").filter(pk=agent_id).first() if agent_id else None
        board = history.dashboard(days, agent)
        context = {
            **self.admin_site.each_context(request),
            "title": "Question history dashboard",
            "opts": self.opts,
            "board": board,
            "chart": history.chart(board.per_day),
            "day_choices": history.DASHBOARD_DAYS,
            "agents": Agent.objects.select_related("owner").order_by("name", "owner__username"),
            "reasons": [(reason, board.figures.by_reason[reason]) for reason in Prompt.Reason.values],
        }
        return TemplateResponse(request, "admin/askuser_app/prompt/dashboard.html", context)


def streamed(request: HttpRequest, chunks: Iterator[bytes]) -> Iterator[bytes] | AsyncIterator[bytes]:
    """Under ASGI, Django reads a plain iterator to its end before sending a byte;
    hand it an async one that pulls chunk by chunk on the request's thread (where
    the generator's database cursor lives)."""
    if not isinstance(request, ASGIRequest):
        return chunks

    async def pull() -> AsyncIterator[bytes]:
        def next_chunk() -> bytes | None:
            return next(chunks, None)

        step = sync_to_async(next_chunk, thread_sensitive=True)
        while (chunk := await step()) is not None:
            yield chunk

    return pull()


# --- prompts inside sessions and runs -------------------------------------------


def prompt_count(field: str) -> Coalesce:
    """How many prompts a row has, counted per row through the foreign key's index
    (a GROUP BY over every prompt would cost the whole table for one page)."""
    counted = Prompt.objects.filter(**{field: OuterRef("pk")}).order_by().values(field).annotate(n=Count("*"))
    return Coalesce(Subquery(counted.values("n")), 0)


class LatestPrompts(InlineFormSet):
    """The latest prompts only, with a link to all of them: a session may hold thousands."""

    shown = 50

    def get_queryset(self) -> QuerySet[Prompt]:
        if not hasattr(self, "_latest"):
            prompts = super().get_queryset().select_related("session__owner", "resolved_by")
            self._latest = prompts.prefetch_related("questions")[: self.shown]
        return self._latest

    def total(self) -> int:
        return super().get_queryset().count()

    def all_url(self) -> str:
        return changelist_url(Prompt, **{f"{self.fk.name}__id__exact": self.instance.pk})


class PromptInline(PromptColumns, TabularInline):
    model = Prompt
    formset = LatestPrompts
    template = "admin/askuser_app/edit_inline/prompts.html"
    fields = (
        "created",
        "question_list",
        "answer_summary",
        "status",
        "reason",
        "surface",
        "resolved_by",
        "time_to_resolution",
    )
    readonly_fields = fields
    ordering = ("-created_at",)
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Session)
class SessionAdmin(HistoryAdmin):
    list_display = ("key", "title", "owner", "agent", "created_at", "prompt_count")
    list_filter = (("owner", OwnerFilter), ("agent", AgentFilter), ("created_at", CreatedFilter))
    list_select_related = ("owner", "agent")
    search_fields = ("key", "title", "owner__username", "agent__name")
    fields = ("key", "title", "owner", "agent", "created_at", "prompt_count")
    readonly_fields = fields
    inlines = (PromptInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Session]:
        sessions: QuerySet[Session] = super().get_queryset(request)
        return sessions.annotate(prompts_total=prompt_count("session"))

    @admin.display(description="prompts", ordering="prompts_total")
    def prompt_count(self, session: WithAnnotations[Session, PromptsTotal]) -> str:
        return link(changelist_url(Prompt, session__id__exact=session.pk), session.prompts_total)


@admin.register(Run)
class RunAdmin(HistoryAdmin):
    list_display = ("run_id", "agent", "owner", "session", "kind", "status", "created_at", "aborted_at", "prompt_count")
    list_filter = ("kind", "status", ("agent", AgentFilter))
    list_select_related = ("agent__owner", "session")
    search_fields = ("run_id", "session__key", "agent__name")
    fields = ("run_id", "agent", "owner", "session", "kind", "status", "created_at", "aborted_at", "prompt_count")
    readonly_fields = fields
    inlines = (PromptInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        runs: QuerySet[Run] = super().get_queryset(request)
        return runs.annotate(prompts_total=prompt_count("run"))

    @admin.display(description="owner", ordering="agent__owner__username")
    def owner(self, run: Run) -> str:
        return run.agent.owner.get_username()

    @admin.display(description="prompts", ordering="prompts_total")
    def prompt_count(self, run: WithAnnotations[Run, PromptsTotal]) -> str:
        return link(changelist_url(Prompt, run__id__exact=run.pk), run.prompts_total)


# --- agents ------------------------------------------------------------------------


class NewAgentForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Shown to its owner, e.g. the tool or project it works for.")
    owner = forms.ModelChoiceField(
        queryset=get_user_model().objects.none(), help_text="The person it asks; it sees only their sessions."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        owner = self.fields["owner"]
        assert isinstance(owner, forms.ModelChoiceField)
        owner.queryset = get_user_model().objects.filter(is_active=True).order_by("username")


@admin.register(Agent)
class AgentAdmin(HistoryAdmin):
    list_display = ("name", "owner", "token_prefix", "created_at", "last_used_at", "revoked_at", "prompt_count")
    list_filter = (RevokedFilter, ("owner", OwnerFilter))
    list_select_related = ("owner",)
    search_fields = ("name", "owner__username", "token_prefix")
    # Never the token hash: a token is shown once, when it is made, and never again.
    fields = ("name", "owner", "token_prefix", "created_at", "last_used_at", "revoked_at", "prompt_count")
    readonly_fields = fields
    actions = ("revoke", "rotate")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Agent]:
        agents: QuerySet[Agent] = super().get_queryset(request)
        return agents.annotate(prompts_total=prompt_count("agent"))

    @admin.display(description="prompts", ordering="prompts_total")
    def prompt_count(self, agent: WithAnnotations[Agent, PromptsTotal]) -> str:
        return link(changelist_url(Prompt, agent__id__exact=agent.pk), agent.prompts_total)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(f"{self.opts.app_label}.add_agent")

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(f"{self.opts.app_label}.change_agent")

    @admin.action(description="Revoke the selected agents' tokens", permissions=["revoke"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        agents = list(queryset)
        revoked = [agent for agent in agents if services.revoke_agent(agent)]
        for agent in revoked:
            self.log_change(request, agent, "Revoked its token.")
        if revoked:
            done = plural(len(revoked), "agent token")
            self.message_user(request, f"Revoked {done}; requests with them now get 401.")
        if len(agents) > len(revoked):
            already = plural(len(agents) - len(revoked), "agent")
            self.message_user(request, f"{already} already revoked.", messages.WARNING)

    @admin.action(description=gettext_lazy("Rotate token and webhook secret"), permissions=["revoke"])
    def rotate(self, request: HttpRequest, queryset: QuerySet[Agent]) -> TemplateResponse | None:
        """New tokens and secrets for the selected agents, shown once; the old tokens stop at once."""
        agents = list(queryset.select_related("owner"))
        rotated = [(agent, token) for agent in agents if (token := services.rotate_agent(agent)) is not None]
        for agent, _ in rotated:
            self.log_change(request, agent, "Rotated its token and webhook secret.")
        if len(agents) > len(rotated):
            skipped = len(agents) - len(rotated)
            text = ngettext(
                "%(count)d revoked agent left alone: a revoked token stays revoked.",
                "%(count)d revoked agents left alone: a revoked token stays revoked.",
                skipped,
            )
            self.message_user(request, text % {"count": skipped}, messages.WARNING)
        if not rotated:
            return None
        return self.credentials(request, gettext("New tokens and webhook secrets"), rotated)

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """A new agent through services.create_agent; its token is in this one response only."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = NewAgentForm(request.POST if request.method == "POST" else None)
        if form.is_bound and form.is_valid():
            agent, token = services.create_agent(form.cleaned_data["name"], form.cleaned_data["owner"])
            self.log_addition(request, agent, [{"added": {}}])
            return self.credentials(request, f"Agent {agent.name} created", [(agent, token)])
        return self.page(request, "add_form.html", "Add agent", form=form)

    def credentials(self, request: HttpRequest, title: str, made: list[tuple[Agent, str]]) -> TemplateResponse:
        """The one response that shows new tokens (and their webhook secrets): never cached."""
        response = self.page(request, "token.html", title, credentials=made)
        add_never_cache_headers(response)
        return response

    def page(self, request: HttpRequest, template: str, title: str, **context: Any) -> TemplateResponse:
        context = {**self.admin_site.each_context(request), "title": title, "opts": self.opts, **context}
        return TemplateResponse(request, f"admin/askuser_app/agent/{template}", context)


# --- webhooks: every delivery and each of its attempts, read-only -------------------------


class WebhookAttemptInline(TabularInline):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = ("number", "started_at", "duration_ms", "status_code", "error", "response_excerpt")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(HistoryAdmin):
    list_display = ["prompt", "url", "status", "attempt_count", "created_at", "next_attempt_at", "finished_at"]
    list_filter = ["status", "created_at"]
    search_fields = ["url", "prompt__id", "prompt__session__key"]
    list_select_related = ["prompt__session"]
    readonly_fields = [
        "prompt",
        "owner",
        "url",
        "host",
        "status",
        "attempt_count",
        "created_at",
        "next_attempt_at",
        "finished_at",
        "body",
    ]
    inlines = [WebhookAttemptInline]


# --- chat apps' linked identities; every message to a person with its tries ------------------


@admin.register(ChatLink)
class ChatLinkAdmin(ModelAdmin):
    """Links are made by their people (a code) or by ``manage.py linkchat``; staff who
    may delete one unlink it here, nobody edits one."""

    list_display = ["user", "channel", "handle", "external_id", "chat_id", "created_at"]
    list_filter = ["channel"]
    search_fields = ["user__username", "handle", "external_id"]
    list_select_related = ["user"]
    readonly_fields = ["user", "channel", "external_id", "chat_id", "handle", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class DeliveryAttemptInline(TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    fields = ("action", "started_at", "duration_ms", "ok", "error")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Delivery)
class DeliveryAdmin(HistoryAdmin):
    """Every message of a prompt to a person (a chat, a mail, a push, a follow-up) and each try."""

    list_display = ["prompt", "channel", "link", "state", "attempts", "created_at", "next_attempt_at", "last_error"]
    list_filter = ["channel", "state", "created_at"]
    search_fields = ["prompt__id", "prompt__session__key", "link__user__username", "link__handle"]
    list_select_related = ["prompt__session", "link"]
    readonly_fields = [
        "prompt",
        "owner",
        "channel",
        "link",
        "address",
        "host",
        "notice",
        "state",
        "ref",
        "attempts",
        "created_at",
        "next_attempt_at",
        "last_error",
    ]
    inlines = [DeliveryAttemptInline]


@admin.register(PushSubscription)
class PushSubscriptionAdmin(ModelAdmin):
    """Each person's Web Push devices, and why the last push to one failed: the person is
    told only whether a test notification was delivered. Staff who may delete one remove it."""

    list_display = ["user", "device", "created_at", "last_used_at", "last_error"]
    search_fields = ["user__username", "device"]
    list_select_related = ["user"]
    readonly_fields = ["user", "device", "endpoint", "created_at", "last_used_at", "last_error"]
    exclude = ["p256dh", "auth"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
