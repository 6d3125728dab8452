"""What every Control UI page's frame shows, beside the page's own context."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from askuser_app.web import ui


def waiting(request: HttpRequest) -> dict[str, Any]:
    """``waiting``: the person's prompts waiting across their sessions (the title's
    count, the icon's badge, the header's link), so that the first paint is right.
    Read only by a page that shows it: the admin's pages do not."""

    def read() -> ui.Waiting | None:
        user = getattr(request, "user", None)
        return ui.waiting(user) if user is not None and user.is_authenticated else None

    return {"waiting": SimpleLazyObject(read)}
