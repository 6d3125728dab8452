"""The browser tests' shared setup: Debian's chromium driven by Playwright, against a live Daphne.

``playwright`` is the one setup they share: the Playwright driver for a module's tests.
``chromium`` is a browser launched by it; ``server`` a live Daphne on this test worker's
database and a port of its own (each pytest-xdist worker starts its own). ``human``
is a logged-in person with the Control UI open, ``agent_api`` an agent over HTTP.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.test import Client
from playwright.sync_api import Browser, Playwright, sync_playwright

from askuser_app import services

from .conftest import payload
from .servers import DaphneServer

CHROMIUM = shutil.which("chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
WAIT_MS = 10_000

# Every browser test module's marks: ``pytestmark = MARKS``.
MARKS = [
    pytest.mark.live,
    pytest.mark.browser,
    # The pushes these pages show are proven over Redis by test_consumers and test_scaled.
    pytest.mark.backend_neutral,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium: apt-get install -y chromium (.ci/run does)"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    """The Playwright driver, for one module's tests.

    Its sync API keeps an event loop marked running in this thread between calls,
    which makes Django refuse the tests' own (synchronous) database calls, and
    would make an asyncio test refuse to start: so it lives no longer than the
    module that asked for it, and Django is told to allow those calls meanwhile."""
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as driver:
            yield driver
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


@pytest.fixture(scope="module")
def chromium(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def server(server_env) -> Iterator[DaphneServer]:
    """A live Daphne for one module's browser tests, on this worker's database (each test's rows
    are its own: they commit, and are flushed after it). Never longer than the module: its
    background loops (webhooks, chats, expiry) would act on rows of other modules' tests, which
    start servers of their own, with other settings."""
    daphne = DaphneServer(server_env).start()
    yield daphne
    daphne.stop()


class Human:
    """A logged-in person with the Control UI open."""

    def __init__(self, chromium, server, user, **context) -> None:
        self.server = server
        self.context = chromium.new_context(base_url=server.url, **context)
        client = Client()
        client.force_login(user)
        self.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": server.url}])
        self.errors: list[str] = []

    def open(self, key: str = "support-42"):
        page = self.context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.goto(f"/s/{key}/")
        page.wait_for_function("() => document.documentElement.classList.contains('js')")
        page.wait_for_selector(".chat-live[hx-ext='ws']")
        wait_connected(page)
        return page


def wait_connected(page) -> None:
    # The socket's first message (the current state) has been swapped in.
    page.wait_for_function(
        "() => !!document.querySelector('#timeline-items') && window.htmx !== undefined", timeout=WAIT_MS
    )


@pytest.fixture
def human(chromium, server, owner, agent):
    services.post_agent_message(agent, "support-42", "Hi! I'm getting release 2.4 ready.")
    person = Human(chromium, server, owner, viewport={"width": 1280, "height": 800})
    yield person
    person.context.close()
    assert person.errors == []


class Agent:
    def __init__(self, server, token) -> None:
        self.server, self.headers = server, {"Authorization": f"Bearer {token}"}
        self.pool = concurrent.futures.ThreadPoolExecutor(2)

    def ask(self, *questions, **fields) -> str:
        response = httpx.post(
            f"{self.server.url}/api/v1/prompts", json=payload(*questions, **fields), headers=self.headers
        )
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def wait(self, prompt_id: str) -> concurrent.futures.Future:
        url = f"{self.server.url}/api/v1/prompts/{prompt_id}?wait=30"
        return self.pool.submit(lambda: httpx.get(url, headers=self.headers, timeout=60).json())


@pytest.fixture
def agent_api(server, token):
    return Agent(server, token)


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"{name}.png")


def panel_open(page):
    page.wait_for_selector("#prompt-panel:not([hidden])", timeout=WAIT_MS)
    return page.locator("#prompt-panel")


def panel_closed(page) -> None:
    page.wait_for_selector("#prompt-panel[hidden]", state="attached", timeout=WAIT_MS)
