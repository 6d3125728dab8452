"""A coding agent's plan as safe rendered Markdown: ``{{ q.detail|plan_html }}`` (``web.plans``)."""

from __future__ import annotations

from django import template

from askuser_app.web import plans

register = template.Library()
register.filter("plan_html", plans.plan_html)
