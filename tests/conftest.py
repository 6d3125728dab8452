"""Shared fixtures and helpers: a few explicit users and agents, the agent API, waits and
sockets, server processes (tests/servers.py), the fakes (chatfake, mailfake, webhookfake) and
the browser's setup (tests/browsers.py); and how pytest-xdist hands the tests to its workers."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import html
import json
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
import redis
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connection, connections
from django.test import Client
from xdist.scheduler import LoadScopeScheduling

from askuser_app.agents import calls
from askuser_app.delivery import engine
from askuser_app.domain import contract, services
from askuser_app.models import Prompt
from askuser_app.runtime import realtime
from askuser_app.runtime.asyncdb import KeptThreads, database_call
from askuser_app.server import keptthreads, loops

pytest_plugins = ["tests.servers", "tests.chatfake", "tests.mailfake", "tests.browsers", "tests.agentclis"]

SCALED = bool(os.environ.get("DATABASE_URL", "").startswith("postgres") and os.environ.get("REDIS_URL"))
SCALED_REASON = (
    "needs PostgreSQL and Redis: run with DATABASE_URL=postgres://… and REDIS_URL=redis://… "
    "(.ci/run does, against 127.0.0.1)"
)

if os.environ.get("ASKUSER_REQUIRE_SCALED") and not SCALED:
    raise pytest.UsageError(f"ASKUSER_REQUIRE_SCALED is set, but the scaled tier {SCALED_REASON}")
if os.environ.get("ASKUSER_REQUIRE_BROWSER") and not shutil.which("chromium"):
    raise pytest.UsageError(
        "ASKUSER_REQUIRE_BROWSER is set, but chromium is not installed (apt-get install -y chromium)"
    )


# Modules whose tests share a costly module-scoped setup: chromium and a Daphne (the browser
# modules), nginx and its server processes (the deployment), or 100,000 prompts on PostgreSQL
# (the admin search).
ONE_WORKER = re.compile(r"tests/\w+/test_(browser\w*|a11y|admin_search|deploy)\.py::")


class OneWorkerForSharedSetups(LoadScopeScheduling):
    """pytest-xdist's ``load`` distribution, test by test, except that a module whose tests
    share a costly module-scoped setup goes whole to one worker, which makes it once.

    Work is handed out in collection order, which is pytest-django's: the tests inside a
    transaction before those that commit and then empty every table (the Reviewers group
    a migration made too). Handing out the largest unit first would break it."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        config.option.loadscopereorder = False

    def _split_scope(self, nodeid: str) -> str:
        return nodeid.split("::", 1)[0] if ONE_WORKER.match(nodeid) else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadScopeScheduling | None:
    """``-n N`` (``--dist load``): the scheduling above."""
    return OneWorkerForSharedSetups(config, log) if config.getvalue("dist") == "load" else None


QUESTION = {
    "id": "deploy_target",
    "header": "Deploy",
    "question": "Where should this release go first?",
    "options": [
        {"label": "Staging (Recommended)", "description": "Safe, reversible"},
        {"label": "Production"},
    ],
}


EXTRAS = {
    "id": "extras",
    "header": "Extras",
    "question": "Which extras should ship with it?",
    "options": [{"label": "Docs", "description": "Update the guides"}, {"label": "Changelog"}, {"label": "Blog post"}],
    "multiSelect": True,
}


def payload(*questions: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A valid create body; override any field."""
    body = {"session": "support-42", "questions": [copy.deepcopy(q) for q in questions] or [copy.deepcopy(QUESTION)]}
    body.update(fields)
    return body


DEADLINE = 20  # seconds any awaited condition may take before the test fails


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def until(condition, within: float = 10) -> None:
    """Yield to the event loop until ``condition()`` holds; fail after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not condition():
        assert loop.time() < end, "condition not reached in time"
        await asyncio.sleep(0.005)


def until_sync(condition, within: float = DEADLINE) -> None:
    """Block until ``condition()`` holds (what another process or thread does); fail after ``within`` seconds."""
    end = time.monotonic() + within
    while not condition():
        assert time.monotonic() < end, "condition not reached in time"
        time.sleep(0.02)


async def until_async(find, within: float = DEADLINE):
    """Poll the database (in a thread) until ``find()`` returns something."""
    end = time.monotonic() + within
    while (found := await sync_to_async(find)()) is None:
        assert time.monotonic() < end, "condition not reached in time"
        await asyncio.sleep(0.02)
    return found


def pending_prompt(session: str = "support-42") -> Prompt | None:
    return Prompt.objects.filter(session__key=session, status="pending").first()


def ask(agent, *questions, session="support-42", **fields) -> Prompt:
    """A prompt asked in this process, through the domain, not the API."""
    return services.ask(agent, contract.parse_create(payload(*questions, session=session, **fields))).prompt


ask_async = database_call(ask)


def parked(prompt: Prompt, count: int = 1):
    """True once ``count`` requests wait on the prompt's group in this process."""
    group = realtime.prompt_group(prompt.pk)
    return lambda: len(realtime.hub().inboxes.get(group, ())) >= count


def start_wait(token: str, prompt: Prompt, wait: float = 30) -> asyncio.Task:
    """An agent's long-poll on ``prompt``, through the ASGI application."""
    return asyncio.ensure_future(asgi_get(f"/api/v1/prompts/{prompt.pk}?wait={wait}", auth(token)))


def wait_until_parked(server, count: int = 1) -> None:
    """Until ``count`` waits are parked in a Daphne process (its ``/healthz`` counts them)."""
    deadline = time.monotonic() + 10
    while httpx.get(f"{server.url}/healthz").json()["waiting"] < count:
        assert time.monotonic() < deadline, "the wait never parked"
        time.sleep(0.01)


def cookie_for(user) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


async def connect(
    path: str, user=None, origin: str = "http://127.0.0.1", host: str = "127.0.0.1", extra=()
) -> WebsocketCommunicator:
    """A socket to the ASGI application, logged in as ``user`` when given (not yet connected)."""
    from controlui.asgi import application

    headers = [(b"origin", origin.encode()), (b"host", host.encode()), *extra]
    if user is not None:
        headers.append((b"cookie", (await database_call(cookie_for)(user)).encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def opened(path: str, user) -> WebsocketCommunicator:
    """A connected socket that has received the state as of joining."""
    socket = await connect(path, user)
    connected, _ = await socket.connect(timeout=DEADLINE)
    assert connected
    await socket.receive_from(timeout=DEADLINE)  # the state as of joining
    return socket


def page(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def words(body: str) -> str:
    """The page's text as a reader sees it: no tags, single spaces."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def backdate(prompt: Prompt, created, took: timedelta | None = None) -> None:
    """Move a prompt in time (a test's way of having a history)."""
    fields = {"created_at": created, "expires_at": created + timedelta(seconds=prompt.timeout_seconds)}
    if took is not None:
        fields["resolved_at"] = created + took
    Prompt.objects.filter(pk=prompt.pk).update(**fields)


@pytest.fixture(autouse=True)
def ctrl_c_left_as_found():
    """A test leaves Ctrl-C's handler as it found it: a handler left behind turns a later
    test's Ctrl-C (tests/agents/test_client.py) into something else than a KeyboardInterrupt."""
    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    assert after is before, f"this test left SIGINT's handler changed: {after!r}"


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    """Each test (and its event loop) gets a new channel layer and hub."""
    channel_layers.backends.clear()
    realtime._hubs.clear()
    yield
    channel_layers.backends.clear()
    realtime._hubs.clear()


def empty_the_cache() -> None:
    """Forget every login and recipient cached. In the scaled mode only this
    project's keys go: Django's ``clear()`` would empty the whole Redis
    database, which may hold more than the tests' keys."""
    if not os.environ.get("REDIS_URL"):
        cache.clear()
        return
    prefix = settings.CACHES["default"]["KEY_PREFIX"]
    with redis.Redis.from_url(os.environ["REDIS_URL"]) as server:
        for key in server.scan_iter(f"{prefix}:*"):
            server.delete(key)


@pytest.fixture(autouse=True)
def empty_cache():
    """Each test starts with nothing cached: a user id an earlier test's
    rolled-back rows used is someone else's here."""
    empty_the_cache()


PASSWORD = "correct-horse-battery"


def password_hash() -> str:
    return _password_hash(settings.PASSWORD_HASHERS[0])


@functools.cache
def _password_hash(hasher: str) -> str:
    # Hashing is deliberately slow; hash the shared test password once per run
    # and hasher: a hash made while a test had a fast hasher configured
    # (test_logins) cannot be checked once that hasher is gone.
    return make_password(PASSWORD)


def make_user(username: str, **fields: Any):
    return get_user_model().objects.create(username=username, password=password_hash(), **fields)


def log_in(user) -> str:
    """A login for ``user``, as a browser's ``sessionid`` cookie holds it (Django's ``force_login``)."""
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


@pytest.fixture
def owner(db):
    return make_user("alice")


@pytest.fixture
def other_user(db):
    return make_user("bob")


@pytest.fixture
def staff(db):
    return make_user("sam", is_staff=True, is_superuser=True)


@pytest.fixture
def reviewer(db):
    """Staff in the Reviewers group (made by a migration): reads the history, changes nothing."""
    user = make_user("rita", is_staff=True)
    user.groups.add(Group.objects.get(name="Reviewers"))
    return user


@pytest.fixture
def agent_and_token(owner):
    return services.create_agent("helper", owner)


@pytest.fixture
def agent(agent_and_token):
    return agent_and_token[0]


@pytest.fixture
def token(agent_and_token):
    return agent_and_token[1]


@pytest.fixture
def other_token(other_user):
    return services.create_agent("intruder", other_user)[1]


class AgentClient:
    """The agent API as an agent sees it, through the ASGI application production serves."""

    def __init__(self, token: str | None) -> None:
        self.token = token

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return {**headers, **(extra or {})}

    def post(self, path: str, body: Any = None, *, raw: bytes | None = None, headers=None) -> AsgiResponse:
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        sent = {"Content-Type": "application/json", **self.headers(headers)}
        return async_to_sync(asgi_post)(f"/api/v1{path}", data, sent)

    def get(self, path: str, headers=None) -> AsgiResponse:
        return async_to_sync(asgi_get)(f"/api/v1{path}", self.headers(headers))

    def ask(self, body: dict[str, Any] | None = None, **kwargs) -> AsgiResponse:
        return self.post("/prompts", body if body is not None else payload(), **kwargs)


class AsgiResponse:
    def __init__(self, response: httpx.Response) -> None:
        self.status_code = response.status_code
        self.headers = response.headers
        self.content = response.content

    def json(self) -> Any:
        return json.loads(self.content)

    def __getitem__(self, header: str) -> str:
        return self.headers[header]


async def asgi_request(method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One request through the whole ASGI application, as a server would pass it on."""
    from controlui.asgi import application

    transport = httpx.ASGITransport(app=application)
    with sparing_the_tests_connection():
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.request(method, url, **kwargs)


class TestsConnection:
    """Whether the test's connection, inside its transaction, is the one requests use, and
    how many in-process requests are in flight meanwhile."""

    shared = False
    in_flight = 0
    lock = threading.Lock()


@contextlib.contextmanager
def sparing_the_tests_connection() -> Iterator[None]:
    """While a request runs in a test inside a transaction, Django's request signals do not
    close old connections, as Django's test clients have it around each of their own requests.

    ``close_old_connections`` closes a connection whose autocommit is off, which is every
    connection inside a transaction: the test's, used by Django's handler on the test's
    thread and shared with the kept threads. Switched off once for the whole test, it would
    come back with the test client's next request (which connects it again after its own)."""
    if not TestsConnection.shared:
        yield
        return
    with TestsConnection.lock:
        TestsConnection.in_flight += 1
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        with TestsConnection.lock:
            TestsConnection.in_flight -= 1
            if not TestsConnection.in_flight:
                request_started.connect(close_old_connections)
                request_finished.connect(close_old_connections)


async def asgi_get(url: str, headers: dict[str, str]) -> AsgiResponse:
    return AsgiResponse(await asgi_request("GET", url, headers=headers, timeout=70))


async def asgi_post(url: str, body: bytes | str, headers: dict[str, str]) -> AsgiResponse:
    return AsgiResponse(await asgi_request("POST", url, content=body, headers=headers))


# The threads a served process keeps for its routes: the agents' calls and the panel's answers.
KEPT_THREADS = (calls.threads, keptthreads.threads)


def on_every_thread(threads: KeptThreads, work) -> None:
    """Run ``work`` once on each of ``threads``: each holds until all of them have it."""
    size = threads.size()
    together = threading.Barrier(size)

    def once() -> None:
        work()
        together.wait(DEADLINE)

    for done in [threads.executor().submit(once) for _ in range(size)]:
        done.result(DEADLINE)


def engine_thread_settled() -> None:
    """The delivery engine's own database thread has done what it was given and dropped its
    connection. A test that ends on what a delivery did (a mail received) ends while the engine
    still records it on that thread; pytest-django's flush then met the record's transaction
    (PostgreSQL: "deadlock detected", the next test finding the last one's rows)."""
    if engine.database.pool is not None:
        engine.database.pool.submit(connections.close_all).result(DEADLINE)


@pytest.fixture(autouse=True)
def kept_threads_see_the_tests_database(request):
    """The ASGI application serves the agent routes and the panel's answer on threads of their
    own, as in production. In a test inside a transaction (pytest-django's ``db``) those
    threads use the test's connection, as Django's ``LiveServerTestCase`` hands its server
    thread the test's: they see the test's rows and the test sees theirs, rolled back with it
    (and each request spares it: ``sparing_the_tests_connection``). In a test that commits
    (``transaction=True``), they keep connections of their own, closed when the test ends."""
    marker = request.node.get_closest_marker("django_db")
    if marker is None and not {"db", "transactional_db"} & set(request.fixturenames):
        yield
        return
    request.getfixturevalue("db")
    if not connection.in_atomic_block:
        yield
        for threads in KEPT_THREADS:
            on_every_thread(threads, connections.close_all)
        engine_thread_settled()
        return
    shared = connections[DEFAULT_DB_ALIAS]
    shared.inc_thread_sharing()
    for threads in KEPT_THREADS:
        on_every_thread(threads, functools.partial(connections.__setitem__, DEFAULT_DB_ALIAS, shared))
    TestsConnection.shared = True
    try:
        yield
    finally:
        TestsConnection.shared = False
        for threads in KEPT_THREADS:
            on_every_thread(threads, functools.partial(connections.__delitem__, DEFAULT_DB_ALIAS))
        shared.dec_thread_sharing()


@pytest.fixture
async def served_loops(settings) -> AsyncIterator[None]:
    """The background loops and ``/mcp``'s session manager, started in the test's event loop as
    ``manage.py serve`` starts them once it listens (``loops.start_serving``: the deadlines, the
    deliveries, the chat apps' polling where the process is the worker); ended when the test
    ends. A request starts nothing: a test whose prompts must expire or be delivered in
    process, or that speaks MCP to the application in process, asks for this."""
    loops.start_serving(worker=settings.ASKUSER_SERVE_WORKER)
    yield
    await loops.stop_serving()


@pytest.fixture
def api(token) -> AgentClient:
    return AgentClient(token)


@pytest.fixture
def asked(api):
    """A pending prompt, created through the API."""
    response = api.ask()
    assert response.status_code == 201, response.content
    return Prompt.objects.get(pk=response.json()["id"])
