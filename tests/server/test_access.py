"""Who may do what: every route × every role, in one table.

Roles: anonymous, the agent token of owner A, the agent token of owner B, a
revoked token of owner A, user A (the owner), user B, and staff. Owner A has
session ``s-a`` with a pending prompt and a run ``run-a``. The last test
walks every route the server has (Django's, the long-polls, the WebSockets)
and fails for any route that has no rule here.
"""

from __future__ import annotations

import re

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from askuser_app.agents.create import CreateRoute
from askuser_app.domain import contract, services
from askuser_app.server import edge, routing
from controlui.asgi import application
from tests.conftest import asgi_get, asgi_request, make_user, payload

CSRF = "accesscsrftokenaccesscsrftoken12"  # an unmasked 32-character secret
ROLES = ["anonymous", "token_a", "token_b", "revoked", "user_a", "user_b", "staff"]
AGENTS = ("token_a", "token_b", "revoked")
USERS = ("user_a", "user_b", "staff")

# Every refusal here is decided before any storage or channel-layer call differs.
pytestmark = pytest.mark.backend_neutral


class World:
    def __init__(self) -> None:
        self.alice, self.bob = make_user("alice"), make_user("bob")
        self.staff = make_user("sam", is_staff=True, is_superuser=True)
        agent_a, self.token_a = services.create_agent("a", self.alice)
        _, self.token_b = services.create_agent("b", self.bob)
        revoked, self.revoked = services.create_agent("old", self.alice)
        services.revoke_agent(revoked)
        self.prompt = services.ask(agent_a, contract.parse_create(payload(session="s-a", run_id="run-a"))).prompt
        services.post_agent_message(agent_a, "s-a", "hello")

    def headers(self, role: str) -> dict[str, str]:
        token = {"token_a": self.token_a, "token_b": self.token_b, "revoked": self.revoked}.get(role)
        return {"Authorization": f"Bearer {token}"} if token else {}

    def client(self, role: str) -> Client:
        client = Client()
        user = {"user_a": self.alice, "user_b": self.bob, "staff": self.staff}.get(role)
        if user is not None:
            client.force_login(user)
        return client

    def request(self, role: str, method: str, path: str, body=None, form=None) -> int:
        """The request through the ASGI application production serves, logged in as the role's user."""
        path = path.replace("{prompt}", str(self.prompt.pk))
        cookie = self.client(role).cookies.get("sessionid")
        login = f"sessionid={cookie.value}; " if cookie else ""
        # A page's form carries its CSRF token: Django checks it on every route.
        headers = {**self.headers(role), "Cookie": f"{login}csrftoken={CSRF}", "X-CSRFToken": CSRF}
        if method == "GET":
            return async_to_sync(asgi_get)(path, headers).status_code
        if form is not None:
            return async_to_sync(asgi_request)(method, path, data=form, headers=headers).status_code
        return async_to_sync(asgi_request)(method, path, json=body or {}, headers=headers).status_code


def expect(default: int, **by_role: int) -> dict[str, int]:
    return {role: by_role.get(role, default) for role in ROLES}


def for_agents(ok: int, *, b: int = 404, users: int = 401) -> dict[str, int]:
    """An agent endpoint: A allowed, B's token does not see A's things, no login counts."""
    return expect(users, token_a=ok, token_b=b, revoked=401, anonymous=401)


def for_people(ok: int, *, b: int = 404, staff: int = 404, anonymous: int = 302) -> dict[str, int]:
    """A Control UI page: the owner only; tokens are not logins."""
    return expect(anonymous, user_a=ok, user_b=b, staff=staff)


STAFF_ONLY = expect(302, staff=200)
NEW_PROMPT = payload(session="fresh")
HOOK_EVENT = {
    "hook_event_name": "Stop",
    "session_id": "conversation-1",
    "cwd": "/home/a/app",
    "stop_hook_active": False,
}

# (route as the server knows it, method, concrete path, request data, expected status by role)
HTTP_RULES = [
    ("api/v1/prompts", "POST", "/api/v1/prompts", {"body": NEW_PROMPT}, for_agents(201, b=201)),
    ("api/v1/prompts/<prompt_id>", "GET", "/api/v1/prompts/{prompt}", {}, for_agents(200)),
    ("api/v1/prompts/<prompt_id>", "GET", "/api/v1/prompts/{prompt}?wait=0.01", {}, for_agents(200)),
    ("api/v1/prompts/<prompt_id>/cancel", "POST", "/api/v1/prompts/{prompt}/cancel", {}, for_agents(200)),
    ("api/v1/runs/<run_id>/abort", "POST", "/api/v1/runs/run-a/abort", {}, for_agents(200, b=200)),
    (
        "api/v1/sessions/<key>/messages",
        "POST",
        "/api/v1/sessions/s-a/messages",
        {"body": {"text": "hi"}},
        for_agents(201, b=201),
    ),
    ("api/v1/sessions/<key>/messages", "GET", "/api/v1/sessions/s-a/messages", {}, for_agents(200)),
    # A coding agent's hook: a Stop line in the token's own owner's session (another session key per owner).
    ("api/v1/hooks", "POST", "/api/v1/hooks?wait=0", {"body": HOOK_EVENT}, for_agents(200, b=200)),
    # Public by decision, like the OpenAPI document: it describes the API and holds nothing of anyone's.
    ("api/v1/tool", "GET", "/api/v1/tool", {}, expect(200)),
    ("api/v1/", "GET", "/api/v1/", {}, expect(404)),  # the API's root has nothing to show
    ("api/v1/openapi.json", "GET", "/api/v1/openapi.json", {}, expect(200)),
    ("api/v1/docs", "GET", "/api/v1/docs", {}, expect(200)),
    ("", "GET", "/", {}, for_people(200, b=200, staff=200)),
    ("login/", "GET", "/login/", {}, expect(200, user_a=302, user_b=302, staff=302)),
    ("logout/", "POST", "/logout/", {"form": {}}, expect(302)),
    ("s/<str:key>/", "GET", "/s/s-a/", {}, for_people(200)),
    ("s/<str:key>/messages", "POST", "/s/s-a/messages", {"form": {"text": "two"}}, for_people(302)),
    (
        "s/<str:key>/prompts/<uuid:prompt_id>/answer",
        "POST",
        "/s/s-a/prompts/{prompt}/answer",
        {"form": {"q-deploy_target": "1", "action": "answer"}},
        for_people(302),
    ),
    # The answer's POST is served by Django on threads kept for it; its other methods by Django's ASGI handler.
    (
        "s/<key>/prompts/<prompt_id>/answer",
        "GET",
        "/s/s-a/prompts/{prompt}/answer",
        {},
        for_people(405, b=405, staff=405),
    ),
    # More time: the owner's form posts and is sent back to the page; nobody else's prompt is found.
    (
        "s/<str:key>/prompts/<uuid:prompt_id>/extend",
        "POST",
        "/s/s-a/prompts/{prompt}/extend",
        {"form": {}},
        for_people(302),
    ),
    (
        "s/<str:key>/prompts/<uuid:prompt_id>/extend",
        "GET",
        "/s/s-a/prompts/{prompt}/extend",
        {},
        for_people(405, b=405, staff=405),
    ),
    # Muting a session's notifications: the owner's switch, back to the page; nobody else's session is found.
    ("s/<str:key>/mute", "POST", "/s/s-a/mute", {"form": {"muted": "1"}}, for_people(302)),
    ("s/<str:key>/mute", "GET", "/s/s-a/mute", {}, for_people(405, b=405, staff=405)),
    ("p/<uuid:prompt_id>/", "GET", "/p/{prompt}/", {}, for_people(302)),  # to its session's page
    # Each person's own inbox: B and staff see theirs (empty here), never A's questions (tests/web/test_ui.py).
    ("inbox/", "GET", "/inbox/", {}, for_people(200, b=200, staff=200)),
    ("settings/", "GET", "/settings/", {}, for_people(200, b=200, staff=200)),
    ("settings/chat/", "GET", "/settings/chat/", {}, for_people(200, b=200, staff=200)),
    (
        "settings/chat/",
        "POST",
        "/settings/chat/",
        {"form": {"channel": "telegram", "action": "code"}},
        expect(302),  # no chat app is set up here: back to the page, or to the login
    ),
    # When to be emailed: the person's own choice (tests/delivery/test_email.py); back to the page, or to the login.
    ("settings/email/", "POST", "/settings/email/", {"form": {"email_after": "0"}}, expect(302)),
    ("settings/agents/", "POST", "/settings/agents/", {"form": {"tell_finished": "on"}}, expect(302)),
    # A mail's link is its own credential, for every role alike: a forged one is refused, a GET never answers.
    ("chat/email/<str:token>/", "GET", "/chat/email/forged/", {}, expect(400)),
    ("chat/email/<str:token>/", "POST", "/chat/email/forged/", {"form": {"action": "answer"}}, expect(400)),
    # The language switcher: anyone, the login page's visitor too (a cookie before the login).
    ("language/", "POST", "/language/", {"form": {"language": "hi", "next": "/"}}, expect(302)),
    ("language/", "GET", "/language/", {}, expect(405)),
    ("jsi18n/", "GET", "/jsi18n/", {}, expect(200)),  # the JavaScript's words: public, like the login page
    # The web app manifest (tests/web/test_manifest.py): public, browsers fetch it without the login cookie.
    ("manifest.webmanifest", "GET", "/manifest.webmanifest", {}, expect(200)),
    # Web Push (tests/delivery/test_push.py): each person's own devices; a request names no one else's.
    ("settings/push/key", "GET", "/settings/push/key", {}, for_people(200, b=200, staff=200)),
    ("settings/push/subscribe", "POST", "/settings/push/subscribe", {}, for_people(400, b=400, staff=400)),
    ("settings/push/unsubscribe", "POST", "/settings/push/unsubscribe", {}, for_people(400, b=400, staff=400)),
    # Only the person's own device is removed (tests/delivery/test_push.py); an unknown one is not found for anyone.
    ("settings/push/remove", "POST", "/settings/push/remove", {"form": {"device": "999999"}}, for_people(404)),
    ("settings/push/test", "POST", "/settings/push/test", {"form": {}}, expect(302)),  # back to the page
    # A notification's button: its token is the credential, for every role alike (tests/delivery/test_push_taps.py).
    ("push/answer", "POST", "/push/answer", {"body": {"token": "forged"}}, expect(400)),
    ("push/answer", "GET", "/push/answer", {}, expect(405)),
    ("push/mute", "POST", "/push/mute", {"body": {"token": "forged"}}, expect(400)),
    # How long a new question waits before it is pushed: the person's own choice; back to the page, or to the login.
    ("settings/push/grace", "POST", "/settings/push/grace", {"form": {"push_grace": "0"}}, expect(302)),
    # Public, like the static files: the service worker's script holds nothing of anyone's.
    ("sw.js", "GET", "/sw.js", {}, expect(200)),
    # A chat app's endpoint answers only while the app is set up (tests/delivery/test_chat_*.py).
    ("chat/telegram/webhook", "POST", "/chat/telegram/webhook", {}, expect(404)),
    ("chat/discord/interactions", "POST", "/chat/discord/interactions", {}, expect(404)),
    ("chat/slack/events", "POST", "/chat/slack/events", {}, expect(404)),
    ("chat/slack/interactivity", "POST", "/chat/slack/interactivity", {}, expect(404)),
    ("chat/slack/commands", "POST", "/chat/slack/commands", {}, expect(404)),
    ("admin/", "GET", "/admin/", {}, STAFF_ONLY),
    ("admin/", "GET", "/admin/askuser_app/prompt/", {}, STAFF_ONLY),
    ("admin/", "GET", "/admin/askuser_app/agent/", {}, STAFF_ONLY),
    ("admin/", "GET", "/admin/auth/user/", {}, STAFF_ONLY),
]

# Routes served in front of Django.
# /metrics: these requests come over loopback, which may read it; from elsewhere only with
# its token (tests/server/test_metrics.py).
ASGI_RULES = {"/healthz": expect(200), "/metrics": expect(200), "/mcp": expect(401, token_a=406, token_b=406)}

# WebSocket routes: may the role open the socket?
WS_RULES = [
    ("ws/sessions/", "/ws/sessions/", expect(False, user_a=True, user_b=True, staff=True)),
    ("ws/sessions/<str:key>/", "/ws/sessions/s-a/", expect(False, user_a=True)),
]


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("route", "method", "path", "data", "expected"),
    HTTP_RULES,
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_http_access(route, method, path, data, expected, role):
    world = World()

    status = world.request(role, method, path, **data)

    assert status == expected[role], f"{role} {method} {path}: {status}, expected {expected[role]}"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("path", "expected"), ASGI_RULES.items())
async def test_routes_in_front_of_django(path, expected, role, served_loops):
    from askuser_app.runtime.asyncdb import database_call

    world = await database_call(World)()
    headers = {**world.headers(role), "Accept": "application/json"}

    assert (await asgi_get(path, headers)).status_code == expected[role]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("route", "path", "expected"), WS_RULES)
async def test_websocket_access(route, path, expected, role):
    from askuser_app.runtime.asyncdb import database_call

    world = await database_call(World)()
    client = await database_call(world.client)(role)
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    if "sessionid" in client.cookies:
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    socket = WebsocketCommunicator(application, path, headers=headers)

    connected, _ = await socket.connect(timeout=10)

    assert connected is expected[role]
    await socket.disconnect()


def django_routes(resolver: URLResolver | None = None, prefix: str = "") -> list[str]:
    routes = []
    for entry in (resolver or get_resolver()).url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            routes += [route] if route == "admin/" else django_routes(entry, route)
        elif isinstance(entry, URLPattern):
            routes.append(route)
    return routes


def front_route(pattern: str) -> str:
    """``^api/v1/prompts/(?P<prompt_id>[^/]+)/?$`` as ``api/v1/prompts/<prompt_id>``."""
    return re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", pattern).strip("^$").lstrip("/").removesuffix("/?")


def routes_in_front_of_django() -> tuple[set[str], set[str]]:
    """The routes whose reads or writes are served before Django (the long-polls,
    the create), and the other routes served before Django."""
    from controlui.asgi import django_asgi_app

    waits, others = set(), set()
    for entry in routing.http_urlpatterns(django_asgi_app):
        if entry.callback is not django_asgi_app:
            route = front_route(str(entry.pattern))
            (waits if isinstance(entry.callback, edge.ByMethod | CreateRoute) else others).add(route)
    return waits, others


def test_every_route_has_an_access_rule():
    """A new endpoint without a row above fails here."""
    ruled = {rule[0] for rule in HTTP_RULES} | {rule[0] for rule in WS_RULES}
    known = set(django_routes())
    waits, others = routes_in_front_of_django()
    known |= waits
    known |= {str(entry.pattern) for entry in routing.websocket_urlpatterns}

    assert known - ruled == set(), f"routes without an access rule: {sorted(known - ruled)}"
    assert {f"/{route}" for route in others} == set(ASGI_RULES)
