"""Spans of time in the page's language, as template filters: ``{{ deadline|time_left }}``.

The words are ``domain.wording``'s, the same for a page, a mail and a chat message."""

from __future__ import annotations

from django import template

from askuser_app.domain import wording

register = template.Library()
register.filter("time_left", wording.time_left)
register.filter("time_since", wording.time_since)
