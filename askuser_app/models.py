"""What askuser stores: agents, chat sessions, runs, prompts and their trail.

Only ``services.py`` changes a prompt's state; these classes hold data and
small read helpers.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from askuser_app.domain import wording

# The group of staff who may read the whole question history in the admin (migration 0006 makes it).
REVIEWERS = "Reviewers"


def new_webhook_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


class Agent(models.Model):
    """An API client acting for its owner; authenticates with a bearer token."""

    name = models.CharField(max_length=100)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agents")
    # sha256 of the token; the token itself is shown once and never stored.
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    token_prefix = models.CharField(
        max_length=16, editable=False, help_text="First characters of the token, to recognise it."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Signs webhook deliveries, so unlike the token it is kept as it is.
    webhook_secret = models.CharField(max_length=64, default=new_webhook_secret, editable=False)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class Session(models.Model):
    """One chat conversation between an owner and their agents, keyed by the agent."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_sessions")
    key = models.CharField(max_length=128)
    # Who is asking, in words (e.g. "claude-code 1.2 · billing-service"); the key when blank.
    title = models.CharField(max_length=120, blank=True)
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="sessions", help_text="The agent that last used the session."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # Muted by its owner: no notification reaches their devices for it (the page and the other
    # channels are unchanged). Set and cleared by ``services.mute_session``.
    muted_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="session_key_unique_per_owner")]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.key

    @property
    def name(self) -> str:
        """What people see the session called: its title, or its key."""
        return self.title or self.key


class Run(models.Model):
    class Kind(models.TextChoices):
        MAIN = "main"
        SUBAGENT = "subagent"

    class Status(models.TextChoices):
        ACTIVE = "active"
        ABORTED = "aborted"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="runs")
    run_id = models.CharField(max_length=128)
    # Null for a run that was aborted before it ever asked anything.
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="runs", null=True, blank=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.MAIN)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    aborted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "run_id"], name="run_id_unique_per_agent")]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.run_id


SEARCH_LINES = (
    "The session key, each question's header, text and option labels, then each free-text answer, a line each."
)


class Prompt(models.Model):
    """One ask_user call: one to three questions, a deadline and a status."""

    class Status(models.TextChoices):
        PENDING = "pending"
        ANSWERED = "answered"
        NO_ANSWER = "no_answer"

    class Reason(models.TextChoices):
        EXPIRED = "expired"
        CANCELLED = "cancelled"
        ABORTED = "aborted"
        SKIPPED = "skipped"
        # A coding agent's hook stopped waiting: its own dialog at the terminal asks instead.
        TERMINAL = "terminal"
        # A later event of the coding agent showed it had decided at its terminal meanwhile.
        DECIDED = "decided"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="prompts")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="prompts")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="prompts")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    reason = models.CharField(max_length=10, choices=Reason.choices, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    timeout_seconds = models.PositiveIntegerField()
    expires_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="resolved_prompts"
    )
    surface = models.CharField(max_length=32, blank=True, help_text="Where it was resolved: web, text, api, …")
    warnings = models.JSONField(default=list, blank=True)
    # The terminal result exactly as agents receive it (SPEC 3.2), written once.
    result = models.JSONField(null=True, blank=True, editable=False)
    idempotency_key = models.CharField(max_length=255, blank=True)
    request_digest = models.CharField(max_length=64, blank=True, editable=False)
    callback_url = models.URLField(max_length=2048, blank=True, help_text="Where the result is POSTed on resolution.")
    extended = models.PositiveSmallIntegerField(default=0, help_text="How often the person asked for more time.")
    hook_event = models.CharField(
        max_length=32, blank=True, help_text="The coding agent's hook event that asked (PermissionRequest, …), if any."
    )
    hook_kind = models.CharField(max_length=16, blank=True, help_text="What a hook asked: permission, …")
    hook_tool_use = models.CharField(
        max_length=32, blank=True, help_text="The tool use a hook asked about (a digest its later events give)."
    )
    # What staff's search reads (askuser_app/staff/admin.py), written with the prompt and
    # its answer: one column of one table, not a join of five (SEARCH_LINES).
    search_text = models.TextField(blank=True, editable=False, help_text=SEARCH_LINES)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # The database, not the code, guarantees one pending prompt per session.
            models.UniqueConstraint(
                fields=["session"], condition=Q(status="pending"), name="one_pending_prompt_per_session"
            ),
            models.UniqueConstraint(
                fields=["agent", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="idempotency_key_unique_per_agent",
            ),
        ]
        indexes = [
            # The rate limit's query: an agent's prompts of the last minute.
            models.Index(fields=["agent", "created_at"], name="prompt_agent_created_idx"),
            # The expiry loop's query: the next pending deadline.
            models.Index(fields=["expires_at"], condition=Q(status="pending"), name="pending_deadline_idx"),
            # The admin's history, newest first (ties by id) and by date: the list's
            # ORDER BY … LIMIT, its date filters and hierarchy, and the dashboard's window.
            models.Index(fields=["created_at", "id"], name="prompt_created_idx"),
            # The list filtered by status (pending first of all), newest first.
            models.Index(fields=["status", "created_at"], name="prompt_status_created_idx"),
            # The surface filter's choices: the distinct surfaces, read off the index.
            models.Index(fields=["surface"], name="prompt_surface_idx"),
            # /metrics' count of prompts by status, reason and surface: read off the index alone.
            models.Index(fields=["status", "reason", "surface"], name="prompt_outcome_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.session.key} · {self.id}"

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING

    def is_overdue(self, now: datetime | None = None) -> bool:
        return self.is_pending and self.expires_at <= (now or timezone.now())

    @classmethod
    def waiting_for(cls, owner_id: Any) -> models.QuerySet[Prompt]:
        """The prompts waiting for their person: pending and in time. The pages count them (the
        title, the header), and so does the installed app's badge (each push about a prompt)."""
        return cls.objects.filter(session__owner_id=owner_id, status=cls.Status.PENDING, expires_at__gt=timezone.now())


class Question(models.Model):
    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="questions")
    position = models.PositiveSmallIntegerField()
    key = models.CharField(max_length=64, help_text="The id the agent gave the question.")
    header = models.CharField(max_length=64, help_text="Shown in the UI, at most 12 characters.")
    header_full = models.CharField(max_length=500, help_text="The header as the agent sent it.")
    text = models.TextField()
    multi_select = models.BooleanField(default=False)
    detail = models.TextField(blank=True, help_text="Text shown verbatim under the question (a command, a diff).")
    rule = models.JSONField(
        default=dict, blank=True, help_text="What its answer must be (an MCP form field's type and limits)."
    )

    class Meta:
        ordering = ["prompt", "position"]
        constraints = [models.UniqueConstraint(fields=["prompt", "key"], name="question_key_unique_per_prompt")]

    def __str__(self) -> str:
        return f"{self.header}: {self.text}"


class Option(models.Model):
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="options")
    position = models.PositiveSmallIntegerField()
    label = models.CharField(max_length=64)
    description = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["question", "position"]

    def __str__(self) -> str:
        return self.label

    @property
    def is_recommended(self) -> bool:
        return "(recommended)" in self.label.casefold()


class Answer(models.Model):
    """The human's answer to one question of an answered prompt."""

    question = models.OneToOneField(Question, on_delete=models.CASCADE, related_name="answer")
    values = models.JSONField(default=list, help_text="Chosen option labels, then the free text if any.")
    free_text = models.TextField(blank=True, help_text="The value typed as Other, if any.")
    skipped = models.BooleanField(default=False)

    def __str__(self) -> str:
        return wording.word("skipped", wording.for_person) if self.skipped else ", ".join(self.values)


class PromptEvent(models.Model):
    """Append-only trail of everything that happened to a prompt."""

    class Kind(models.TextChoices):
        CREATED = "created"
        ANSWERED = "answered"
        SKIPPED = "skipped"
        EXPIRED = "expired"
        CANCELLED = "cancelled"
        ABORTED = "aborted"
        EXTENDED = "extended"  # not terminal: the person asked for more time
        AT_TERMINAL = "terminal"  # the agent's hook stopped waiting and asked at its terminal
        DECIDED = "decided"  # the agent's later event showed it decided at its terminal

    TERMINAL = frozenset(
        {Kind.ANSWERED, Kind.SKIPPED, Kind.EXPIRED, Kind.CANCELLED, Kind.ABORTED, Kind.AT_TERMINAL, Kind.DECIDED}
    )

    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    actor = models.CharField(max_length=200, help_text="Who caused it: a user, an agent or the system.")
    surface = models.CharField(max_length=32, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["prompt", "at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} by {self.actor}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise ValueError("Prompt events are append-only.")
        super().save(*args, **kwargs)


class Message(models.Model):
    """A chat message in a session's timeline: from the agent, the user, or askuser itself."""

    class Author(models.TextChoices):
        AGENT = "agent"
        USER = "user"
        SYSTEM = "system"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages")
    author = models.CharField(max_length=10, choices=Author.choices)
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="messages")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    # The prompt a user's message replied to (answered or not), or a note is about.
    prompt = models.ForeignKey(Prompt, on_delete=models.SET_NULL, null=True, blank=True, related_name="messages")

    class Meta:
        ordering = ["session", "id"]
        indexes = [
            # The message rate limit's query: an agent's messages of the last minute.
            models.Index(fields=["agent", "created_at"], name="message_agent_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.author}: {self.text[:60]}"


class WebhookDelivery(models.Model):
    """A prompt's result on its way to the agent's callback_url, retried until it lands.

    One of the delivery engine's row kinds (``askuser_app/delivery/webhooks.py``)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    prompt = models.OneToOneField(Prompt, on_delete=models.CASCADE, related_name="webhook")
    # Whose it is: the engine shares its attempts out per owner first.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", editable=False)
    url = models.URLField(max_length=2048)
    # The url's host:port, the unit of fair sharing (within an owner) and of backing off.
    host = models.CharField(max_length=300, blank=True, editable=False)
    # The exact bytes every attempt sends (and signs).
    body = models.TextField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    attempt_count = models.PositiveSmallIntegerField(default=0)
    # When the next attempt is due; a claimed attempt pushes it past its own timeout.
    next_attempt_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "webhook deliveries"
        indexes = [
            # The engine's queries: the next due pending delivery, and an owner's due ones.
            models.Index(fields=["next_attempt_at"], condition=Q(status="pending"), name="webhook_due_idx"),
            models.Index(
                fields=["owner", "next_attempt_at"], condition=Q(status="pending"), name="webhook_owner_due_idx"
            ),
            # An owner's due ones host by host: a turn steps over a busy host's backlog (engine._each_host).
            models.Index(
                fields=["owner", "host", "next_attempt_at"],
                condition=Q(status="pending"),
                name="webhook_owner_host_due_idx",
            ),
            # A host's pending deliveries, pushed back together when it times out.
            models.Index(
                fields=["host", "next_attempt_at"], condition=Q(status="pending"), name="webhook_host_due_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.url} · {self.status}"


class DeliveryHost(models.Model):
    """A host deliveries go to (a callback's host:port, a push service, a chat platform) that
    keeps timing out for one owner, and until when everything of that owner for it waits.

    Per owner, so that one person's slow path on a shared host pauses no one else's deliveries;
    stored, so that every server process backs off from the same host."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    host = models.CharField(max_length=300)
    timeouts = models.PositiveIntegerField(default=0, help_text="Attempts in a row that got no answer in time.")
    paused_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "host"], name="one_pause_per_owner_and_host")]

    def __str__(self) -> str:
        return self.host


class WebhookAttempt(models.Model):
    """One POST of a delivery: when, how long, and what came back."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True, help_text="The receiver's HTTP status.")
    error = models.TextField(blank=True, help_text="Why it failed, when it did.")
    response_excerpt = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="webhook_attempt_number_unique")]

    def __str__(self) -> str:
        return f"attempt {self.number}: {self.status_code or self.error[:40]}"

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


# --- chat apps (Telegram, Slack, Discord) ------------------------------------------


class ChatLink(models.Model):
    """A chat identity (a Telegram, Slack or Discord user) that answers for a user."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_links")
    channel = models.CharField(max_length=16, help_text="telegram, slack or discord")
    external_id = models.CharField(max_length=64, help_text="The platform's user id.")
    # Where a direct message to them goes: a Telegram chat id, a Slack DM channel.
    chat_id = models.CharField(max_length=64, blank=True)
    handle = models.CharField(max_length=200, blank=True, help_text="Their name on the platform, when known.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["user", "channel"]
        constraints = [
            models.UniqueConstraint(fields=["channel", "external_id"], name="chat_link_unique_identity"),
            # One identity per user and channel: linking another replaces it.
            models.UniqueConstraint(fields=["user", "channel"], name="chat_link_one_per_channel"),
        ]

    def __str__(self) -> str:
        return f"{self.channel}:{self.handle or self.external_id}"


class LinkCode(models.Model):
    """A one-time code a logged-in user gives a chat app to link their identity there."""

    code = models.CharField(max_length=8, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_link_codes")
    channel = models.CharField(max_length=16)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.channel} code for {self.user_id}"


# The states with a try to make: the due indexes' condition, and the engine's reads
# (``messages.Messages.rows``) filter by this same Q, or a database cannot use the
# indexes and reads every row of the table. Equalities, not ``state IN (…)``: Django
# binds the values as parameters, and SQLite matches a bound value with an
# equality's literal in an index's condition, never with an IN list's.
LIVE_DELIVERY = Q(state="to_send") | Q(state="to_edit") | Q(state="maybe_sent")


class Delivery(models.Model):
    """One message of a prompt to one address: a linked chat identity (Telegram, Slack,
    Discord), an email address or a push device; one of the delivery engine's row kinds
    (``askuser_app/delivery/messages.py``), sent and later edited.

    to_send → sent → to_edit → closed; a prompt resolved before its send is
    dropped (or, when the send was already under way, edited once it lands).
    The edit is only ever tried from a row whose send succeeded. A row with a
    ``notice`` is a one-off text instead of the prompt's card (Discord's
    follow-up to a tap), or, without a prompt, a coding agent's news to the
    person ("Claude Code finished"): to_send → closed."""

    class State(models.TextChoices):
        TO_SEND = "to_send"
        SENT = "sent"
        TO_EDIT = "to_edit"
        CLOSED = "closed"
        FAILED = "failed"
        DROPPED = "dropped"
        # Resolved while a send's outcome was unknown (in flight, or its process died): closed by a follow-up.
        MAYBE_SENT = "maybe_sent"

    # None for an agent's news (a ``notice`` about a session, not a prompt).
    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, null=True, blank=True, related_name="deliveries")
    # The session an agent's news is about (None for a prompt's rows): its newer news replaces
    # an older one still waiting for the same address, so a flood of news is one row per address.
    session = models.ForeignKey(Session, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    # Whose it is: the engine shares its attempts out per owner first.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", editable=False)
    channel = models.CharField(max_length=16)
    # Null once the identity is unlinked; a message already sent is still edited.
    link = models.ForeignKey(ChatLink, on_delete=models.SET_NULL, null=True, blank=True, related_name="deliveries")
    # A chat id, an email address, a push subscription's id, an interaction's token.
    address = models.CharField(max_length=254, blank=True, help_text="Where the message is sent.")
    # Where the engine sends it (a push service's host:port, the channel's own for the rest):
    # the unit of fair sharing within an owner, and of backing off.
    host = models.CharField(max_length=300, blank=True, editable=False)
    notice = models.TextField(blank=True, help_text="A one-off text sent instead of the prompt's card.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.TO_SEND)
    ref = models.JSONField(default=dict, blank=True, help_text="Where the sent message lives on the platform.")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Tries of the current step (send or edit).")
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "deliveries"
        indexes = [
            # The engine's queries: the next due send or edit, and an owner's due ones.
            models.Index(fields=["next_attempt_at"], condition=LIVE_DELIVERY, name="delivery_due_idx"),
            models.Index(
                fields=["owner", "next_attempt_at"],
                condition=LIVE_DELIVERY,
                name="delivery_owner_due_idx",
            ),
            # An owner's due ones host by host: a turn steps over a busy host's backlog (engine._each_host).
            models.Index(
                fields=["owner", "host", "next_attempt_at"],
                condition=LIVE_DELIVERY,
                name="delivery_owner_host_due_idx",
            ),
            # A session's news still waiting, which newer news for the same address replaces.
            models.Index(
                fields=["session", "channel", "address"],
                condition=Q(state="to_send", session__isnull=False),
                name="delivery_waiting_news_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.channel} · {self.state}"

    @property
    def delivered(self) -> bool:
        return bool(self.ref)


class DeliveryAttempt(models.Model):
    """One send, edit or notice of a delivery: when, how long, and what went wrong."""

    class Action(models.TextChoices):
        SEND = "send"
        EDIT = "edit"
        NOTICE = "notice"
        TELL = "tell"

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    action = models.CharField(max_length=6, choices=Action.choices)
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    ok = models.BooleanField()
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["delivery", "started_at", "id"]

    def __str__(self) -> str:
        return f"{self.action}: {'ok' if self.ok else self.error[:40]}"


class SeenEvent(models.Model):
    """An inbound chat event already handled (a Telegram update_id, a Slack event_id), so a
    platform's retry never answers twice. Rows older than a day are pruned."""

    channel = models.CharField(max_length=16)
    event_id = models.CharField(max_length=128)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["channel", "event_id"], name="seen_event_unique")]
        indexes = [models.Index(fields=["at"], name="seen_event_at_idx")]

    def __str__(self) -> str:
        return f"{self.channel}:{self.event_id}"


class PollOffset(models.Model):
    """Where fetching a chat app's events goes on after a restart: for Telegram's getUpdates,
    the update id after the last one handled, per bot (each bot numbers its updates alone)."""

    channel = models.CharField(max_length=16)
    account = models.CharField(max_length=64)  # the bot's id, the public part of its token
    next_id = models.BigIntegerField()
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["channel", "account"], name="poll_offset_unique")]

    def __str__(self) -> str:
        return f"{self.channel}:{self.account} at {self.next_id}"


class Preferences(models.Model):
    """One person's choices: the language of the Control UI, when to be emailed and pushed."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preferences")
    # Blank: the browser's Accept-Language decides.
    language = models.CharField(max_length=8, blank=True)
    # Seconds a prompt waits unanswered before it is emailed; 0 is never, null the default.
    email_after = models.PositiveIntegerField(null=True, blank=True)
    # Told on their channels when a coding agent's hook says it finished (Stop); off by default.
    tell_finished = models.BooleanField(default=False)
    # Seconds a new prompt waits before it is pushed to their devices; null the server's default.
    push_grace = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "preferences"

    def __str__(self) -> str:
        return f"preferences of {self.user_id}"


class PushSubscription(models.Model):
    """One browser on one device that asked for Web Push: where to send and the keys to encrypt with."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="push_subscriptions")
    endpoint = models.URLField(max_length=2048, unique=True)
    p256dh = models.CharField(max_length=200)
    auth = models.CharField(max_length=100)
    device = models.CharField(max_length=200, blank=True, help_text="The browser and system, as a person reads them.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, help_text="Why the last push failed (its status or error), for staff.")

    class Meta:
        ordering = ["user", "-created_at"]

    def __str__(self) -> str:
        return self.device or self.endpoint[:60]
