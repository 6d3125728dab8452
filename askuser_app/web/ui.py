"""What the Control UI shows, built once for the page, HTMX responses and pushes.

Views and consumers call these functions and render the same partials with
their results, so the first page load, an HTMX response and a WebSocket push
of the same piece of UI cannot drift apart.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery, prefetch_related_objects
from django.db.models.functions import Coalesce, Greatest
from django.template.loader import render_to_string
from django.utils import formats, timezone
from django.utils.translation import gettext as _

from askuser_app.delivery import messages
from askuser_app.domain import services, wording
from askuser_app.domain.chars import ascii_digits, ascii_int
from askuser_app.models import Message, Prompt, Question, Session

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class LastActivity(TypedDict):
    last_activity: datetime


PANEL_COOKIE = "askuser_panel"
TIMELINE_LENGTH = 200
# How far before a page's render a reconnecting tab is sent items again: longer
# than any write transaction, so an item committed while the page was being
# read (stamped before it, visible after it) is not missed. Items sent twice
# are replaced in place by the page.
CATCH_UP_MARGIN = timedelta(seconds=60)


# --- the timeline ------------------------------------------------------------------


@dataclass
class SummaryLine:
    header: str
    values: list[str] = field(default_factory=list)
    free_text: str = ""
    outcome: str = ""  # the outcome's word (wording.OUTCOMES) when there is no value


@dataclass
class Summary:
    """A resolved prompt as the timeline keeps it: one line per question."""

    prompt: Prompt
    lines: list[SummaryLine]
    caption: str
    read_as: list[str]
    undelivered: list[str] = field(default_factory=list)  # chat apps its message never reached

    @property
    def dom_id(self) -> str:
        return f"item-prompt-{self.prompt.pk}"

    @property
    def at(self) -> datetime:
        at = self.prompt.resolved_at
        assert at is not None  # a summary is of a resolved prompt
        return at


@dataclass
class Item:
    """One entry of the timeline: a message or a summary."""

    kind: str
    at: datetime
    dom_id: str
    message: Message | None = None
    summary: Summary | None = None


def summarize(prompt: Prompt, questions: list[Question]) -> Summary:
    result = prompt.result or {}
    details = result.get("details") or {}
    word = wording.word(prompt.reason or "skipped", wording.for_person)
    lines = []
    for question in questions:
        detail = details.get(question.key)
        if detail is None or detail["skipped"]:
            lines.append(SummaryLine(question.header, outcome=word))
        else:
            lines.append(SummaryLine(question.header, detail["options"], detail["free_text"] or ""))
    return Summary(prompt, lines, caption(prompt), _read_as(prompt))


def caption(prompt: Prompt) -> str:
    """What happened and when, under the summary: "Answered on the web by alice · 14:02"."""
    outcome = wording.outcome_of(prompt.status, prompt.reason)
    if outcome is None:
        return ""
    who = prompt.resolved_by.get_username() if prompt.resolved_by else None
    when = formats.time_format(timezone.localtime(prompt.resolved_at), "H:i")
    return f"{wording.caption(outcome, prompt.surface, who, wording.for_person)} · {when}"


def _read_as(prompt: Prompt) -> list[str]:
    if prompt.surface != "text":
        return []
    event = next((e for e in prompt.events.all() if e.kind == "answered"), None)
    return list(event.detail.get("read_as", [])) if event else []


def summaries(prompts: list[Prompt]) -> list[Summary]:
    made = [summarize(p, list(p.questions.all())) for p in prompts]
    undelivered = messages.undelivered([p.pk for p in prompts])
    for summary in made:
        summary.undelivered = undelivered.get(str(summary.prompt.pk), [])
    return made


def resolved_prompts(session: Session, **filters: Any) -> list[Prompt]:
    """The session's latest resolved prompts with what their summaries show."""
    query = session.prompts.exclude(status=Prompt.Status.PENDING).filter(**filters)
    prompts = list(
        query.select_related("resolved_by")
        .prefetch_related(services.QUESTIONS_IN_ORDER[0])
        .order_by("-resolved_at")[:TIMELINE_LENGTH]
    )
    # Only a text reply's summary shows its trail (how the reply was read).
    prefetch_related_objects([p for p in prompts if p.surface == "text"], "events")
    return prompts


def timeline(session: Session, *, since: datetime | None = None) -> list[Item]:
    """The session's latest messages and answer summaries, oldest first; only
    those from ``since`` on when given."""
    messages = session.messages.select_related("agent")
    resolved = {}
    if since is not None:
        messages = messages.filter(created_at__gte=since)
        resolved = {"resolved_at__gte": since}
    items = [message_item(m) for m in messages.order_by("-id")[:TIMELINE_LENGTH]]
    items += [summary_item(s) for s in summaries(resolved_prompts(session, **resolved))]
    items.sort(key=lambda item: item.at)
    return items[-TIMELINE_LENGTH:]


def timeline_cursor() -> str:
    """What a page hands its live socket to be caught up from: its render time."""
    return str(int(timezone.now().timestamp() * 1000))


def catch_up_since(cursor: str | None) -> datetime | None:
    """From a page's cursor, when a (re)connecting tab may have missed items; None for all."""
    # Strict, and never later than now: a huge number overflows datetime. Anything else gets the whole state.
    millis = ascii_int(cursor, digits=15)
    if millis is None or millis > int(timezone.now().timestamp() * 1000):
        return None
    return datetime.fromtimestamp(millis / 1000, tz=timezone.get_current_timezone()) - CATCH_UP_MARGIN


def message_item(message: Message) -> Item:
    return Item("message", message.created_at, f"item-msg-{message.pk}", message=message)


def summary_item(summary: Summary) -> Item:
    return Item("summary", summary.at, summary.dom_id, summary=summary)


# --- the panel -----------------------------------------------------------------------


def pending_prompt_expiring_overdue(session: Session) -> Prompt | None:
    """The session's pending prompt, with what the panel shows; one found overdue is expired."""
    pending = session.prompts.filter(status=Prompt.Status.PENDING).select_related("agent")
    prompt = pending.prefetch_related(*services.QUESTIONS_IN_ORDER).first()
    if prompt is not None and prompt.is_overdue():
        services.result_expiring_if_overdue(prompt)
        return None
    return prompt


def panel_context(
    session: Session, cookies: dict[str, str], *, error: str = "", pending: bool = True
) -> dict[str, Any]:
    """What the panel shows; ``pending=False`` when the session is known to have no pending prompt."""
    prompt = pending_prompt_expiring_overdue(session) if pending else None
    return {
        "session": session,
        "prompt": prompt,
        "questions": list(prompt.questions.all()) if prompt else [],
        "undelivered": messages.undelivered([prompt.pk]).get(str(prompt.pk), []) if prompt else [],
        "collapsed": cookies.get(PANEL_COOKIE) == "collapsed",
        "error": error,
        "now": timezone.now(),
        **(deadline_context(prompt) if prompt else {}),
    }


def deadline_context(prompt: Prompt) -> dict[str, Any]:
    """What the countdown and the More time button show (``partials/deadline.html``)."""
    now = timezone.now()
    seconds = services.extension_seconds(prompt, now)
    # "+15 min"; a last, shorter extension up to the cap says what it really adds.
    minutes = max(1, round(seconds / 60)) if seconds else 0
    return {"prompt": prompt, "now": now, "extend_minutes": minutes}


def answers_from_form(prompt: Prompt, form: Any) -> dict[str, list[str]]:
    """The panel's form fields as services.answer() takes them: chosen labels, then Other."""
    answers = {}
    for question in services.questions_of(prompt):  # read once: services.answer() reads them from here
        options = list(question.options.all())
        values = []
        for raw in form.getlist(f"q-{question.key}"):
            values.append(options[_option_index(question, raw, len(options))].label)
        other = form.get(f"q-{question.key}-other", "").strip()
        answers[question.key] = [*values, other] if other else values
    return answers


def _option_index(question: Question, raw: str, count: int) -> int:
    # ASCII or Devanagari digits only, as a text reply's numbers.
    index = ascii_int(ascii_digits(raw), digits=2)
    if index is None or index >= count:
        refused = _("%(header)s: %(value)s is not one of its options.")
        raise services.InvalidAnswer(refused % {"header": question.header, "value": repr(raw[:20])})
    return index


# --- the sessions list -----------------------------------------------------------------


@dataclass
class SessionRow:
    session: Session
    pending: Prompt | None
    last_activity: datetime

    @property
    def recent(self) -> bool:
        return (timezone.now() - self.last_activity).total_seconds() < 60

    @property
    def headers(self) -> list[str]:
        return [q.header for q in self.pending.questions.all()] if self.pending else []


def session_rows(user: Any, *, everything: bool = False) -> list[SessionRow]:
    """The user's sessions, those with a pending prompt first (soonest deadline
    first), then the most recently active; unless ``everything``, without those
    idle for ASKUSER_SESSION_IDLE_HIDE with nothing pending (ended conversations)."""
    sessions = with_last_activity(Session.objects.filter(owner=user).select_related("agent"))
    pending = {
        p.session_id: p
        for p in Prompt.objects.filter(Q(session__owner=user), status=Prompt.Status.PENDING).prefetch_related(
            "questions"
        )
    }
    if not everything:
        idle_since = timezone.now() - timedelta(seconds=settings.ASKUSER_SESSION_IDLE_HIDE)
        sessions = sessions.filter(Q(last_activity__gte=idle_since) | Q(pk__in=list(pending)))
    rows = [SessionRow(s, pending.get(s.pk), s.last_activity) for s in sessions]
    rows.sort(
        key=lambda r: (
            r.pending is None,
            r.pending.expires_at.timestamp() if r.pending else -r.last_activity.timestamp(),
        )
    )
    return rows


def with_last_activity(sessions: QuerySet[Session]) -> QuerySet[WithAnnotations[Session, LastActivity]]:
    """``last_activity``: the session's latest message or prompt, or its creation."""
    latest_message = Message.objects.filter(session=OuterRef("pk")).order_by("-id").values("created_at")[:1]
    latest_prompt = Prompt.objects.filter(session=OuterRef("pk")).order_by("-created_at").values("created_at")[:1]
    # Coalesce: SQLite's GREATEST is NULL when any argument is.
    latest = [Coalesce(Subquery(query), "created_at") for query in (latest_message, latest_prompt)]
    return sessions.annotate(last_activity=Greatest("created_at", *latest))


def sessions_context(user: Any, *, everything: bool = False) -> dict[str, Any]:
    """What the sessions list shows, and how many idle sessions it leaves out."""
    rows = session_rows(user, everything=everything)
    hidden = 0 if everything else Session.objects.filter(owner=user).count() - len(rows)
    return {"rows": rows, "hidden": hidden, "everything": everything, "now": timezone.now()}


# --- what is waiting for the person ----------------------------------------------------


@dataclass(frozen=True)
class Arrived:
    """A prompt that has just been asked, as a desktop notification shows it."""

    prompt_id: uuid.UUID
    agent: str
    header: str
    question: str


@dataclass(frozen=True)
class Waiting:
    """How many of the person's prompts wait for an answer, across their sessions,
    and the oldest: the tab title's count, the icon's badge, the header's link."""

    count: int
    oldest: uuid.UUID | None
    arrived: Arrived | None = None  # what a push for a new prompt brings the notification

    @property
    def state(self) -> str:
        """What a page shows, as it tells its socket (the push is skipped when it matches)."""
        return f"{self.count}:{self.oldest or ''}"

    @functools.cached_property
    def icon(self) -> str:
        """The tab's icon with the count on it, as a data: URL (the policy allows img-src data:)."""
        badge = "9+" if self.count > 9 else str(self.count)
        svg = render_to_string("askuser/partials/waiting_icon.svg", {"badge": badge}).strip()
        return "data:image/svg+xml," + quote(svg, safe="")


def waiting(user: Any, *, arrived: str | None = None, known: Arrived | None = None) -> Waiting:
    """The person's pending prompts, oldest first (one query), and with ``arrived``
    the prompt just asked, read for its notification (one more), unless it is
    ``known`` already."""
    pending = Prompt.waiting_for(user.pk)
    ids = list(pending.order_by("created_at", "pk").values_list("pk", flat=True))
    if known is None and arrived:
        known = arrival(user, arrived)
    return Waiting(len(ids), ids[0] if ids else None, known if arrived else None)


def arrival(user: Any, prompt_id: str) -> Arrived | None:
    """A pending prompt of the person's, by its first question and its agent."""
    first = (
        Question.objects.filter(prompt_id=prompt_id, prompt__session__owner=user, prompt__status=Prompt.Status.PENDING)
        .select_related("prompt__agent")
        .order_by("position")
        .first()
    )
    if first is None:
        return None
    return arrived_from(first.prompt, first)


def arrived_from(prompt: Prompt, first: Question) -> Arrived:
    return Arrived(prompt.pk, prompt.agent.name, first.header, first.text)


def render_waiting(
    user: Any,
    *,
    oob: bool = False,
    arrived: str | None = None,
    unless: str | None = None,
    known: Arrived | None = None,
) -> str:
    """The header's "2 waiting" link and what the title and icon show; nothing
    when the page already shows this state (``unless``, its ``Waiting.state``)."""
    now = waiting(user, arrived=arrived, known=known)
    if unless is not None and unless == now.state:
        return ""
    return render_to_string("askuser/partials/waiting.html", {"waiting": now, "oob": oob})


# --- rendering -------------------------------------------------------------------------


def render_panel(
    session: Session, cookies: dict[str, str], *, oob: bool = False, error: str = "", pending: bool = True
) -> str:
    context = {**panel_context(session, cookies, error=error, pending=pending), "oob": oob}
    return render_to_string("askuser/partials/panel.html", context)


def render_deadline(session: Session, prompt: Prompt, *, inbox: bool = False) -> str:
    """The prompt's countdown and More time button, swapped in place by id: the
    rest of the panel, and whatever the person has chosen in it, stays as it is;
    ``inbox`` when the inbox shows it (its More time comes back to the inbox)."""
    context = {**deadline_context(prompt), "session": session, "oob": True, "inbox": inbox}
    return render_to_string("askuser/partials/deadline.html", context)


def render_deadline_change(session: Session, prompt_id: str, cookies: dict[str, str], *, inbox: bool = False) -> str:
    """What a tab needs when a prompt's deadline moved: its countdown and button;
    nothing once it resolved meanwhile (its resolution has a push of its own)."""
    prompt = session.prompts.filter(pk=prompt_id).first()
    if prompt is None or not prompt.is_pending:
        return ""
    return render_deadline(session, prompt, inbox=inbox)


def render_appended(items: list[Item]) -> str:
    return render_to_string("askuser/partials/timeline_append.html", {"items": items}) if items else ""


def render_timeline(session: Session, *, oob: bool = False) -> str:
    return render_to_string("askuser/partials/timeline.html", {"items": timeline(session), "oob": oob})


class CatchUp(TypedDict):
    pending_id: uuid.UUID | None
    anything_new: bool


def with_catch_up(sessions: QuerySet[Session], since: datetime) -> QuerySet[WithAnnotations[Session, CatchUp]]:
    """Sessions read with what a tab (re)connecting needs to know: the id of
    the prompt pending, and whether any message or answer is new from ``since`` on.

    A socket opening its page reads the same with its session, in one raw
    statement (``socketauth.SESSION_PAGE``, compared with this in
    tests/web/test_socketauth.py); this is the reading for a session read without it."""
    prompts = Prompt.objects.filter(session=OuterRef("pk"))
    return sessions.annotate(
        pending_id=Subquery(prompts.filter(status=Prompt.Status.PENDING).values("pk")[:1]),
        anything_new=Exists(Message.objects.filter(session=OuterRef("pk"), created_at__gte=since))
        | Exists(prompts.exclude(status=Prompt.Status.PENDING).filter(resolved_at__gte=since)),
    )


def render_catch_up(
    session: Session, cookies: dict[str, str], since: datetime | None, shown: str = "", extended: str = ""
) -> str:
    """What a tab needs on (re)connecting: the panel, unless its page already
    shows the prompt that is pending (``shown``, its id or "" for none), and
    the timeline items it may have missed since ``since``; without ``since``,
    the whole panel and timeline.

    The panel is not sent again for the prompt the page shows: an answer the
    person has begun before the socket connected stays as it is. Most tabs
    connect to a page that is up to date: with ``since``, ``session`` was read
    ``with_catch_up(since)``, which says so, and nothing else is read."""
    if since is None:
        return render_panel(session, cookies, oob=True) + render_timeline(session, oob=True)
    # What the socket's read of the session brought (socketauth), kept on it as
    # Django keeps annotations; a session read without it is read again for it.
    state = vars(session)
    if "anything_new" not in state:
        state = with_catch_up(Session.objects.filter(pk=session.pk), since).values("pending_id", "anything_new").get()
    items = timeline(session, since=since) if state["anything_new"] else []
    pending = state["pending_id"]
    unchanged = str(pending or "") == shown
    panel = "" if unchanged else render_panel(session, cookies, oob=True, pending=pending is not None)
    shown_extended = ascii_int(extended, digits=4)
    if unchanged and pending is not None and shown_extended is not None:
        panel = _deadline_if_moved(session, pending, shown_extended)
    return panel + render_appended(items)


def _deadline_if_moved(session: Session, prompt_id: uuid.UUID, extended: int) -> str:
    """The countdown of the prompt a page shows, if the person asked for more time since
    (``extended``: the count the page shows); a page that shows the latest gets nothing."""
    prompt = session.prompts.filter(pk=prompt_id, status=Prompt.Status.PENDING).exclude(extended=extended).first()
    return render_deadline(session, prompt) if prompt is not None else ""


def sessions_changed(user: Any, since: datetime) -> bool:
    """Whether anything the sessions list shows changed from ``since`` on: one query."""
    mine = {"session__owner": user}
    changed = (
        Exists(Session.objects.filter(owner=user, created_at__gte=since))
        | Exists(Message.objects.filter(created_at__gte=since, **mine))
        | Exists(Prompt.objects.filter(Q(created_at__gte=since) | Q(resolved_at__gte=since), **mine))
    )
    return get_user_model().objects.filter(changed, pk=user.pk).exists()


def render_sessions_since(user: Any, since: datetime | None, *, everything: bool = False) -> str:
    """The sessions list for a (re)connecting tab: nothing when its page is up to date."""
    if since is not None and not sessions_changed(user, since):
        return ""
    return render_sessions(user, oob=True, everything=everything)


def render_sessions(user: Any, *, oob: bool = False, everything: bool = False) -> str:
    context = {**sessions_context(user, everything=everything), "oob": oob}
    return render_to_string("askuser/partials/sessions_list.html", context)


def render_notice(text: str, *, target: str = "notice") -> str:
    """A short status line (or its removal), swapped into the element ``target``."""
    return render_to_string("askuser/partials/notice.html", {"text": text, "target": target, "oob": True})


def render_prompt_change(session: Session, prompt_id: str, cookies: dict[str, str], *, appeared: bool = False) -> str:
    """What a tab needs when a prompt appears or resolves: the panel, and the summary.

    A prompt that just ``appeared`` has no summary yet; its resolution will bring one."""
    items = [] if appeared else [summary_item(s) for s in summaries(resolved_prompts(session, pk=prompt_id))]
    return render_panel(session, cookies, oob=True) + render_appended(items)


def render_asked(user: Any, session: Session, prompt_id: str, cookies: dict[str, str]) -> str:
    """What a tab of ``session`` needs when the session asks ``prompt_id``: the count with
    the prompt's notification, then the panel (``render_waiting``, ``render_prompt_change``).

    The panel's prompt is read first: when it is the one asked, as it is unless it
    resolved meanwhile, the notification is taken from it instead of read again."""
    context = {**panel_context(session, cookies), "oob": True}
    prompt, questions = context["prompt"], context["questions"]
    asked = prompt is not None and bool(questions) and str(prompt.pk) == prompt_id
    known = arrived_from(prompt, questions[0]) if asked else None
    count = render_waiting(user, oob=True, arrived=prompt_id, known=known)
    return count + render_to_string("askuser/partials/panel.html", context)


def render_closed_panel(prompt_id: uuid.UUID | str) -> str:
    """The panel of ``prompt_id`` closed, for the response to the person's own request.

    Not the panel as the session stands: the agent may ask its next prompt the moment
    this one is answered, and that prompt's push can reach the page before this
    response does; a panel rendered before it would hide it there. The page closes
    the panel only while it shows ``prompt_id`` (app.js); what the session asks
    next comes by the push."""
    return render_to_string("askuser/partials/panel.html", {"prompt": None, "closes": prompt_id, "oob": True})


def render_resolved(prompt: Prompt) -> str:
    """What the tab that just resolved ``prompt`` needs: its panel closed, and the
    prompt's summary from the prompt in hand (as the transition left it, its
    questions read already), not read again."""
    summary = summarize(prompt, list(prompt.questions.all()))
    return render_closed_panel(prompt.pk) + render_appended([summary_item(summary)])


def render_closed(session: Session, prompt_id: str) -> str:
    """What the tab whose request found ``prompt_id`` resolved already needs: its
    panel closed, and its summary (read)."""
    items = [summary_item(s) for s in summaries(resolved_prompts(session, pk=prompt_id))]
    return render_closed_panel(prompt_id) + render_appended(items)


def render_message(message_id: int) -> str:
    message = Message.objects.select_related("agent").filter(pk=message_id).first()
    return render_appended([message_item(message)]) if message else ""


# --- the inbox ---------------------------------------------------------------------------

# What "just answered" keeps: the person's latest resolutions, for a while.
JUST_ANSWERED_COUNT = 10
JUST_ANSWERED_WITHIN = timedelta(hours=1)


@dataclass
class InboxCard:
    """A prompt waiting for the person, as the inbox shows it in the panel partial."""

    prompt: Prompt
    questions: list[Question]
    extend_minutes: int
    undelivered: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def session(self) -> Session:
        return self.prompt.session

    @property
    def error_target(self) -> str:
        return panel_error_target(self.prompt.pk, inbox=True)


@dataclass
class JustAnswered:
    """A prompt of the person's resolved a moment ago: its session and its summary, in one line."""

    session: Session
    summary: Summary


def panel_error_target(prompt_id: uuid.UUID | str, *, inbox: bool) -> str:
    """The id of a panel's error line: one panel on a session page, one per prompt in the inbox."""
    return f"panel-error-{prompt_id}" if inbox else "panel-error"


def inbox_cards(user: Any, *, error: str = "", error_for: str = "") -> list[InboxCard]:
    """Every prompt waiting for the person across their sessions, oldest deadline first."""
    now = timezone.now()
    pending = Prompt.objects.filter(session__owner=user, status=Prompt.Status.PENDING, expires_at__gt=now)
    prompts = list(
        pending.select_related("session", "agent")
        .prefetch_related(*services.QUESTIONS_IN_ORDER)
        .order_by("expires_at", "created_at", "pk")
    )
    undelivered = messages.undelivered([p.pk for p in prompts]) if prompts else {}
    return [
        InboxCard(
            p,
            list(p.questions.all()),
            deadline_context(p)["extend_minutes"],
            undelivered.get(str(p.pk), []),
            error if str(p.pk) == error_for else "",
        )
        for p in prompts
    ]


def just_answered(user: Any) -> list[JustAnswered]:
    """The person's prompts resolved within JUST_ANSWERED_WITHIN, latest first."""
    since = timezone.now() - JUST_ANSWERED_WITHIN
    resolved = Prompt.objects.filter(session__owner=user, resolved_at__gte=since).exclude(status=Prompt.Status.PENDING)
    prompts = list(
        resolved.select_related("session", "resolved_by")
        .prefetch_related(services.QUESTIONS_IN_ORDER[0])
        .order_by("-resolved_at")[:JUST_ANSWERED_COUNT]
    )
    prefetch_related_objects([p for p in prompts if p.surface == "text"], "events")
    return [JustAnswered(p.session, summarize(p, list(p.questions.all()))) for p in prompts]


def inbox_context(user: Any, *, error: str = "", error_for: str = "") -> dict[str, Any]:
    return {
        "cards": inbox_cards(user, error=error, error_for=error_for),
        "answered": just_answered(user),
        "now": timezone.now(),
    }


def render_inbox(user: Any, *, oob: bool = False) -> str:
    """The inbox's two lists: what waits (a page keeps the cards it shows, and what is
    chosen in them) and what was just answered."""
    context = {**inbox_context(user), "oob": oob}
    return render_to_string("askuser/partials/inbox_prompts.html", context) + render_to_string(
        "askuser/partials/inbox_answered.html", context
    )


def render_inbox_since(user: Any, since: datetime | None) -> str:
    """The inbox for a (re)connecting tab: nothing when its page is up to date."""
    if since is not None and not sessions_changed(user, since):
        return ""
    return render_inbox(user, oob=True)


def render_inbox_deadline(user: Any, prompt_id: str) -> str:
    """A prompt's countdown and More time button in the inbox, after its deadline moved."""
    prompt = Prompt.objects.filter(pk=prompt_id, session__owner=user, status=Prompt.Status.PENDING).first()
    if prompt is None:
        return ""
    return render_deadline(prompt.session, prompt, inbox=True)
