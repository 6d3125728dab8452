"""A person's preferences, read with their defaults: the language, when to email and to push, what agents tell."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings

from askuser_app.models import Preferences

if TYPE_CHECKING:
    from django.contrib.auth.models import User

EMAIL_CHOICES = (0, 60, 120, 300, 900)  # off, after 1, 2, 5 or 15 minutes
EMAIL_DEFAULT = 120
PUSH_GRACE_CHOICES = (0, 10, 20, 30, 60, 120, 300)  # at once, or after so many seconds


def of(user: User) -> Preferences:
    """The person's stored preferences, or unsaved defaults when they never chose."""
    found = Preferences.objects.filter(user=user).first()
    return found if found is not None else Preferences(user=user)


def email_after(user: User, preferences: Preferences | None = None) -> timedelta | None:
    """How long a prompt waits unanswered before it is emailed to ``user``; None is never.

    Never without an address. By default two minutes when ``EMAIL_HOST`` names an SMTP
    server, and off with the embedded file backend (which a person may still choose)."""
    if not user.email:
        return None
    chosen = (preferences or of(user)).email_after
    default = EMAIL_DEFAULT if settings.ASKUSER_EMAIL_SMTP else 0
    seconds = default if chosen is None else chosen
    return timedelta(seconds=seconds) if seconds else None


def choose_email_after(user: User, seconds: int) -> Preferences:
    """Store when ``user`` is emailed about an unanswered prompt: one of ``EMAIL_CHOICES``, 0 is never."""
    if seconds not in EMAIL_CHOICES:
        raise ValueError(f"email_after must be one of {EMAIL_CHOICES}, not {seconds}")
    chosen, _created = Preferences.objects.update_or_create(user=user, defaults={"email_after": seconds})
    return chosen


def choose_tell_finished(user: User, on: bool) -> Preferences:
    """Store whether ``user`` is told on their channels when a coding agent finishes (its ``Stop`` hook)."""
    chosen, _created = Preferences.objects.update_or_create(user=user, defaults={"tell_finished": on})
    return chosen


def push_grace(chosen: int | None) -> timedelta:
    """How long a new prompt waits before it is pushed to a person's devices: their choice
    (``Preferences.push_grace``), else ``ASKUSER_PUSH_GRACE``; 0 is at once."""
    seconds: float = settings.ASKUSER_PUSH_GRACE if chosen is None else chosen
    return timedelta(seconds=max(0.0, seconds))


def push_grace_choices() -> list[int]:
    """What a person may choose, the server's default among them (whole seconds)."""
    default = round(settings.ASKUSER_PUSH_GRACE)
    return sorted({*PUSH_GRACE_CHOICES, max(0, default)})


def choose_push_grace(user: User, seconds: int) -> Preferences:
    """Store how long ``user``'s new prompts wait before they are pushed: one of ``push_grace_choices()``."""
    if seconds not in push_grace_choices():
        raise ValueError(f"push_grace must be one of {push_grace_choices()}, not {seconds}")
    chosen, _created = Preferences.objects.update_or_create(user=user, defaults={"push_grace": seconds})
    return chosen
