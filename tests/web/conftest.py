"""The Control UI (askuser_app/web/): pages, the panel, live sockets, languages, logins,
and the browser tests (their chromium, live server and person come from tests/browsers.py)."""

from __future__ import annotations

import pytest

from askuser_app.web.consumers import holdings


@pytest.fixture
def socket_caps(settings):
    """Caps of 2 sockets per user and per address, counting from no open socket."""
    holdings.open.clear()  # sockets earlier tests left open count against nobody here
    settings.ASKUSER_MAX_SOCKETS_PER_USER = settings.ASKUSER_MAX_SOCKETS_PER_ADDRESS = 2
    yield settings
    holdings.open.clear()
