"""Sessions that say who is asking, and a list that keeps ended conversations out of the way."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from askuser_app.domain import contract, services
from askuser_app.models import Message, Prompt, Session
from askuser_app.runtime.asyncdb import database_call
from tests.conftest import connect, payload

DEADLINE = 10

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def ask(agent, **fields) -> Prompt:
    return services.ask(agent, contract.parse_create(payload(**fields))).prompt


def idle(key: str, days: float) -> None:
    """Make the session look as if nothing happened in it for ``days``."""
    then = timezone.now() - timedelta(days=days)
    Session.objects.filter(key=key).update(created_at=then)
    Message.objects.filter(session__key=key).update(created_at=then)
    Prompt.objects.filter(session__key=key).update(created_at=then)


# --- the API's title ----------------------------------------------------------------------------


def test_a_prompt_with_a_title_names_its_session(api):
    response = api.ask(payload(session="mcp-1a2b3c4d5e6f", title="  claude-code 1.2 · billing-service  "))

    assert response.status_code == 201, response.content
    assert Session.objects.get(key="mcp-1a2b3c4d5e6f").title == "claude-code 1.2 · billing-service"


def test_a_later_title_renames_the_session_and_no_title_keeps_it(api, agent):
    ask(agent, session="s1", title="first", run_id="r1")
    services.cancel(Prompt.objects.get(), agent=agent)
    ask(agent, session="s1", title="second", run_id="r2")
    services.post_agent_message(agent, "s1", "Still here.")

    assert Session.objects.get(key="s1").title == "second"


@pytest.mark.parametrize(
    "title,message",
    [
        ("x" * 121, "must be at most 120 characters (got 121)"),
        ("line\nbreak", "must be one line (found U+000A, a line break)"),
        ("line\u2028separator", "must be one line (found U+2028, a line break)"),
        ("paragraph\u2029separator", "must be one line (found U+2029, a line break)"),
        ("next\x85line", "must be one line (found U+0085, a line break)"),
        ("   ", "must not be blank"),
        (7, "must be a string"),
    ],
)
def test_a_bad_title_is_refused_naming_the_field_and_nothing_is_stored(api, title, message):
    response = api.ask(payload(title=title))

    assert response.status_code == 422
    assert response.json()["errors"] == [{"path": "title", "message": message}]
    assert not Session.objects.exists() and not Prompt.objects.exists()


def test_an_agent_message_can_title_the_session_it_creates(api):
    response = api.post("/sessions/py-0123456789ab/messages", {"text": "Starting.", "title": "deploy.py · ops"})
    refused = api.post("/sessions/other/messages", {"text": "Hi", "title": "tab\there"})
    separated = api.post("/sessions/other/messages", {"text": "Hi", "title": "line\u2028separator"})

    assert response.status_code == 201
    assert Session.objects.get(key="py-0123456789ab").title == "deploy.py · ops"
    assert (refused.status_code, refused.json()["errors"][0]["path"]) == (422, "title")
    assert (separated.status_code, separated.json()["errors"][0]["path"]) == (422, "title")
    assert not Session.objects.filter(key="other").exists()


def test_a_retried_create_with_its_title_replays_the_same_prompt(api):
    body = payload(title="worker · api")
    first = api.ask(body, headers={"Idempotency-Key": "k1"})
    again = api.ask(body, headers={"Idempotency-Key": "k1"})

    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]


# --- the pages -------------------------------------------------------------------------------------


def test_the_title_names_the_session_in_the_list_and_on_its_page(agent, browser):
    ask(agent, session="mcp-77aa00bb11cc", title="claude-code 1.2 · billing-service")

    listing = browser.get("/").content.decode()
    session_page = browser.get("/s/mcp-77aa00bb11cc/").content.decode()

    assert "claude-code 1.2 · billing-service" in listing
    assert "<title>(1) claude-code 1.2 · billing-service · askuser</title>" in session_page
    assert 'class="crumb"' in session_page and "billing-service <span" in session_page


def test_a_hooks_prompt_is_marked_as_one_and_never_answered_by_one_key(agent, browser):
    asked = services.ask(
        agent,
        contract.parse_create(payload(session="cc-hook")),
        hook=services.HookAsk("PermissionRequest", "permission"),
    )
    ask(agent, session="plain")

    hook_page = browser.get("/s/cc-hook/").content.decode()
    plain_page = browser.get("/s/plain/").content.decode()

    assert asked.prompt.hook_event == "PermissionRequest"
    assert 'data-hook="PermissionRequest"' in hook_page
    assert "data-answers-on-click" in hook_page and "data-answers-at-once" not in hook_page
    assert "data-hook" not in plain_page and "data-answers-at-once" in plain_page


def test_a_session_idle_for_a_day_with_nothing_pending_leaves_the_list(agent, browser):
    services.post_agent_message(agent, "ended-yesterday", "Done, bye.")
    idle("ended-yesterday", days=2)
    services.post_agent_message(agent, "active-now", "Working on it.")

    listing = browser.get("/").content.decode()
    everything = browser.get("/?all=1").content.decode()

    assert "active-now" in listing and "ended-yesterday" not in listing
    assert "Show 1 older session" in listing and "/?all=1" in listing
    assert "ended-yesterday" in everything and "active-now" in everything
    assert browser.get("/s/ended-yesterday/").status_code == 200


def test_an_old_session_with_a_pending_prompt_stays_in_the_list_first(agent, browser):
    ask(agent, session="old-but-waiting", timeoutSeconds=3600)
    idle("old-but-waiting", days=3)
    Prompt.objects.update(expires_at=timezone.now() + timedelta(minutes=30))
    services.post_agent_message(agent, "old-and-done", "Bye")
    idle("old-and-done", days=3)
    services.post_agent_message(agent, "chatty", "Hello")

    listing = browser.get("/").content.decode()

    assert listing.index("old-but-waiting") < listing.index("chatty")
    assert "old-and-done" not in listing


def test_recent_sessions_are_listed_by_last_activity_and_idle_ones_are_left_out(agent, browser):
    for key in ("first", "second", "third", "idle-one"):
        services.post_agent_message(agent, key, "Hi")
    Message.objects.filter(session__key="second").update(created_at=timezone.now() - timedelta(hours=3))
    Session.objects.update(created_at=timezone.now() - timedelta(hours=4))
    idle("idle-one", days=1.5)
    services.post_agent_message(agent, "first", "Back again")

    listing = browser.get("/").content.decode()

    # By their links: a word like "second" also appears in the page's own markup ("secondary").
    assert listing.index("/s/first/") < listing.index("/s/third/") < listing.index("/s/second/")
    assert "/s/idle-one/" not in listing


def test_the_idle_limit_is_a_setting(agent, browser, settings):
    settings.ASKUSER_SESSION_IDLE_HIDE = 60
    services.post_agent_message(agent, "ten-minutes-ago", "Hi")
    idle("ten-minutes-ago", days=10 / 1440)

    assert "ten-minutes-ago" not in browser.get("/").content.decode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path,shows_idle", [("/ws/sessions/", False), ("/ws/sessions/?all=1", True)])
async def test_a_live_list_keeps_showing_what_it_was_opened_with(agent, owner, path, shows_idle):
    @database_call
    def prepare() -> None:
        services.post_agent_message(agent, "last-week", "Done.")
        idle("last-week", days=7)

    await prepare()
    socket = await connect(path, owner)
    assert (await socket.connect(timeout=DEADLINE))[0]
    joined = await socket.receive_from(timeout=DEADLINE)
    await database_call(ask)(agent, session="new-question")
    pushed = await socket.receive_from(timeout=DEADLINE)
    await socket.disconnect()

    assert "new-question" in pushed
    assert ("last-week" in joined, "last-week" in pushed) == (shows_idle, shows_idle)


def test_the_admin_lists_and_finds_sessions_by_title(agent, staff):
    ask(agent, session="mcp-5e5e5e5e5e5e", title="cursor 0.9 · webshop")
    ask(agent, session="other", title="zed 1.0")
    admin = Client()
    admin.force_login(staff)

    html = admin.get("/admin/askuser_app/session/", {"q": "webshop"}).content.decode()

    assert "cursor 0.9 · webshop" in html and "zed 1.0" not in html
