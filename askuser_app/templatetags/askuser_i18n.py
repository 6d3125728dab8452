"""Spans of time in the page's language: "14 minutes", "1 hour 5 minutes".

Django's ``timeuntil`` and ``timesince`` have no Hindi translation of their
units, so askuser says them with its own (askuser_app/locale)."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.translation import ngettext, pgettext

register = template.Library()


def span(seconds: float) -> str:
    """A span of time in at most two units: days and hours, hours and minutes, or seconds under a minute."""
    seconds = max(0, int(seconds))
    if seconds >= 86400:
        days, hours = seconds // 86400, seconds % 86400 // 3600
        said_days = ngettext("%(num)d day", "%(num)d days", days) % {"num": days}
        if not hours:
            return said_days
        said = ngettext("%(num)d hour", "%(num)d hours", hours) % {"num": hours}
        return pgettext("days and hours", "%(days)s %(hours)s") % {"days": said_days, "hours": said}
    hours, minutes = seconds // 3600, seconds % 3600 // 60
    if not hours and not minutes:
        return ngettext("%(num)d second", "%(num)d seconds", seconds) % {"num": seconds}
    said = ngettext("%(num)d minute", "%(num)d minutes", minutes) % {"num": minutes}
    if not hours:
        return said
    said_hours = ngettext("%(num)d hour", "%(num)d hours", hours) % {"num": hours}
    if not minutes:
        return said_hours
    return pgettext("hours and minutes", "%(hours)s %(minutes)s") % {"hours": said_hours, "minutes": said}


@register.filter
def time_left(moment: datetime, now: datetime | None = None) -> str:
    """From ``now`` until ``moment``: "14 minutes"."""
    return span((moment - (now or timezone.now())).total_seconds())


@register.filter
def time_since(moment: datetime, now: datetime | None = None) -> str:
    """From ``moment`` until ``now``: "3 hours 2 minutes"."""
    return span(((now or timezone.now()) - moment).total_seconds())
