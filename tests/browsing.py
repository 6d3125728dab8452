"""A real chromium (Debian's, driven by Playwright) for the browser tests, and a person
logged in to the Control UI with a session's page open in it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings

from tests.conftest import log_in

try:
    from playwright import sync_api as playwright_api
except ImportError:  # the test requirements are not installed (make test installs them)
    playwright_api = None

CHROMIUM = shutil.which("chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
WAIT_MS = 10_000

BROWSER_MARKS = [
    pytest.mark.live,
    pytest.mark.browser,
    pytest.mark.backend_neutral,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium: apt-get install -y chromium (.ci/run does)"),
    pytest.mark.skipif(
        playwright_api is None, reason="needs Playwright: install the test requirements (make test does)"
    ),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """The one chromium a module's browser tests share (a pytest plugin of tests/conftest.py)."""
    assert playwright_api is not None
    # Playwright's sync API keeps an event loop running in this thread, which
    # makes Django refuse the tests' own (synchronous) database calls.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()
    del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


class Person:
    """``user`` logged in to the Control UI at ``url``, in a browser context of their own."""

    def __init__(self, chromium: Any, url: str, user: Any) -> None:
        self.context = chromium.new_context(base_url=url, viewport={"width": 1280, "height": 800})
        self.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": log_in(user), "url": url}])
        self.errors: list[str] = []

    def open(self, key: str) -> Any:
        """The session's page, its live socket connected (the first push swapped in)."""
        page = self.context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.goto(f"/s/{key}/")
        page.wait_for_function("() => document.documentElement.classList.contains('js')")
        page.wait_for_selector(".chat-live[hx-ext='ws']")
        page.wait_for_function(
            "() => !!document.querySelector('#timeline-items') && window.htmx !== undefined", timeout=WAIT_MS
        )
        return page

    def close(self) -> None:
        self.context.close()
