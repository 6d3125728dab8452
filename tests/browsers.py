"""The browser tests' shared setup: Debian's chromium driven by Playwright, against a live Daphne
(a pytest plugin of tests/conftest.py, so every browser test module gets these fixtures by name).

``chromium`` is the one browser a module's tests share; ``server`` a live Daphne on this test
worker's database and a port of its own (each pytest-xdist worker starts its own). ``human``
is a logged-in person with the Control UI open, ``agent_api`` an agent over HTTP.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from askuser_app.domain import services
from tests.conftest import log_in, payload
from tests.servers import DaphneServer

try:
    from playwright import sync_api as playwright_api
except ImportError:  # the test requirements are not installed (make test installs them)
    playwright_api = None

CHROMIUM = shutil.which("chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
WAIT_MS = 10_000
VIEWPORT = {"width": 1280, "height": 800}

# Every browser test module's marks: ``pytestmark = MARKS``.
MARKS = [
    pytest.mark.live,
    pytest.mark.browser,
    # The pushes these pages show are proven over Redis by test_consumers and test_scaled.
    pytest.mark.backend_neutral,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium: apt-get install -y chromium (.ci/run does)"),
    pytest.mark.skipif(
        playwright_api is None, reason="needs Playwright: install the test requirements (make test does)"
    ),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    """The Playwright driver, for one module's tests: its ``chromium``, or a browser launched
    another way (Web Push's, on a profile of its own).

    Its sync API keeps an event loop marked running in this thread between calls, which makes
    Django refuse the tests' own (synchronous) database calls, and would make an asyncio test
    refuse to start: so it lives no longer than the module that asked for it, and Django is
    told to allow those calls meanwhile."""
    assert playwright_api is not None
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with playwright_api.sync_playwright() as driver:
            yield driver
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


@contextlib.contextmanager
def profile_on_disk(playwright, server, *args: str) -> Iterator[Any]:
    """A chromium with a profile in a folder of its own, not off the record as a Playwright context
    is: chromium neither subscribes to push nor installs an app from an off-the-record context."""
    with tempfile.TemporaryDirectory() as folder:
        context = playwright.chromium.launch_persistent_context(
            folder, executable_path=CHROMIUM, args=[*ARGS, *args], base_url=server.url
        )
        yield context
        context.close()


@pytest.fixture(scope="module")
def chromium(playwright) -> Iterator[Any]:
    """The one chromium a module's browser tests share."""
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
    """``user`` logged in to the Control UI of ``server`` (anything with a ``url``), in a browser
    context of their own."""

    def __init__(self, chromium, server, user, **context) -> None:
        self.server = server
        self.context = chromium.new_context(base_url=server.url, **({"viewport": VIEWPORT} | context))
        self.context.add_cookies([{"name": "sessionid", "value": log_in(user), "url": server.url}])
        self.errors: list[str] = []

    def open(self, key: str = "support-42"):
        """The session's page, its live socket connected (the first push swapped in)."""
        page = self.context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.goto(f"/s/{key}/")
        page.wait_for_function("() => document.documentElement.classList.contains('js')")
        page.wait_for_selector(".chat-live[hx-ext='ws']")
        wait_connected(page)
        return page

    def close(self) -> None:
        self.context.close()


def wait_connected(page) -> None:
    # The socket's first message (the current state) has been swapped in.
    page.wait_for_function(
        "() => !!document.querySelector('#timeline-items') && window.htmx !== undefined", timeout=WAIT_MS
    )


@pytest.fixture
def human(chromium, server, owner, agent):
    services.post_agent_message(agent, "support-42", "Hi! I'm getting release 2.4 ready.")
    person = Human(chromium, server, owner)
    yield person
    person.close()
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


def answer_held(page, prompt_id: Any) -> list[tuple[Any, Any]]:
    """The answer to ``prompt_id`` reaches the server, and its response is held back from the page
    (``window.answerHeld`` set) until the test fulfils it: ``route, response = held[0]``."""
    held: list[tuple[Any, Any]] = []

    def hold(route) -> None:
        held.append((route, route.fetch()))  # the server has answered; its response waits here
        page.evaluate("() => { window.answerHeld = true; }")

    page.route(f"**/prompts/{prompt_id}/answer", hold)
    return held


def panel_closed(page) -> None:
    page.wait_for_selector("#prompt-panel[hidden]", state="attached", timeout=WAIT_MS)
