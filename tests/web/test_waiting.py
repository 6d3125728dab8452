"""What waits for the person across their sessions: the tab title's count, the
icon's badge and the header's link to the oldest, on every page and live."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from askuser_app.domain import contract, services
from askuser_app.models import Message, Prompt, Session
from askuser_app.runtime.asyncdb import database_call
from askuser_app.web import ui
from tests.conftest import ask_async, connect, opened, payload

DEADLINE = 10

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = ["/", "/s/first/", "/inbox/", "/settings/", "/settings/chat/"]
# Every other page's socket, saying it shows something out of date: it is sent the count at once.
ONLY_WAITING = "/ws/sessions/?only=waiting&waiting=stale"


@pytest.fixture
def client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def two_waiting(agent) -> list[Prompt]:
    """Two sessions with a prompt each, the first asked a minute before the second."""
    first = services.ask(agent, _request("first")).prompt
    Prompt.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(minutes=1))
    second = services.ask(agent, _request("second")).prompt
    return [first, second]


def _request(session: str) -> contract.CreatePromptIn:
    return contract.parse_create(payload(session=session))


@database_call
def make_it_all_old() -> None:
    """Everything so far happened an hour ago: a page rendered now is up to date."""
    earlier = timezone.now() - timedelta(hours=1)
    for model in (Session, Message, Prompt):
        model.objects.update(created_at=earlier)


def title_of(html: str) -> str:
    match = re.search(r"<title>(.*?)</title>", html, re.S)
    assert match
    return match.group(1).strip()


@pytest.mark.parametrize("path", PAGES)
def test_every_page_counts_the_prompts_waiting_in_all_sessions_from_its_first_paint(client, two_waiting, path):
    html = client.get(path).content.decode()

    assert title_of(html).startswith("(2) ")
    assert "2 waiting" in html
    assert 'class="waiting-link" href="/inbox/"' in html  # more than one: the inbox, which has them all
    assert 'id="favicon" rel="icon" href="data:image/svg+xml,' in html


def test_the_page_keeps_its_own_title_after_the_count(client, two_waiting):
    assert title_of(client.get("/settings/").content.decode()) == "(2) Settings · askuser"


def test_with_nothing_waiting_the_title_has_no_count_and_the_icon_is_the_plain_one(client, agent):
    services.post_agent_message(agent, "first", "Hello")

    html = client.get("/s/first/").content.decode()

    assert title_of(html) == "first · askuser"
    assert 'class="waiting-link"' not in html
    assert 'rel="icon" href="/static/askuser/icon.svg"' in html


def test_the_oldest_link_opens_its_session_with_the_panel(client, two_waiting):
    response = client.get(f"/p/{two_waiting[0].pk}/")

    assert response.status_code == 302 and response["Location"] == "/s/first/#prompt-panel"


def test_another_users_prompts_are_never_counted(owner, other_user, two_waiting):
    theirs = Client()
    theirs.force_login(other_user)

    html = theirs.get("/").content.decode()

    assert not title_of(html).startswith("(")
    assert ui.waiting(other_user).count == 0 and ui.waiting(owner).count == 2


def test_a_prompt_past_its_deadline_is_not_counted_as_waiting(owner, two_waiting):
    Prompt.objects.filter(pk=two_waiting[0].pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    waiting = ui.waiting(owner)

    assert (waiting.count, waiting.oldest) == (1, two_waiting[1].pk)


def test_the_icon_badge_shows_the_count_and_nine_plus_past_nine():
    assert "%3E3%3C" in ui.Waiting(3, None).icon  # ">3<": the badge's text
    assert "%3E9%2B%3C" in ui.Waiting(12, None).icon


# --- live -----------------------------------------------------------------------------


async def test_a_session_page_hears_a_prompt_asked_in_another_session(agent, owner):
    await database_call(services.post_agent_message)(agent, "first", "Hello")
    tab = await opened("/ws/sessions/first/", owner)

    prompt = await ask_async(agent, session="second")

    html = await tab.receive_from(timeout=DEADLINE)
    assert 'id="waiting"' in html and 'data-count="1"' in html and f"/p/{prompt.pk}/" in html
    assert f'data-arrived="{prompt.pk}"' in html and 'data-arrived-title="helper asks: Deploy"' in html
    assert 'data-arrived-body="Where should this release go first?"' in html
    assert "prompt-panel" not in html  # its own panel has not changed
    await tab.disconnect()


async def test_an_answer_in_another_session_lowers_the_count_on_every_kind_of_page(agent, owner):
    await database_call(services.post_agent_message)(agent, "first", "Hello")
    prompt = await ask_async(agent, session="second")
    tabs = [await opened(path, owner) for path in ("/ws/sessions/first/", ONLY_WAITING)]

    await database_call(services.answer)(prompt, {"deploy_target": "Production"}, by=owner, surface="web")

    for tab in tabs:
        html = await tab.receive_from(timeout=DEADLINE)
        assert 'id="waiting"' in html and 'data-count="0"' in html and "waiting-link" not in html
        assert "data-arrived" not in html  # an answer notifies nobody
        await tab.disconnect()


async def test_the_sessions_list_gets_the_count_with_the_list(agent, owner):
    tab = await opened("/ws/sessions/", owner)

    await ask_async(agent, session="second")

    html = await tab.receive_from(timeout=DEADLINE)
    assert 'id="waiting"' in html and 'data-count="1"' in html and 'id="sessions-list"' in html
    await tab.disconnect()


async def test_a_prompt_asked_in_the_pages_own_session_comes_with_its_panel_in_one_push(agent, owner):
    await database_call(services.post_agent_message)(agent, "first", "Hello")
    tab = await opened("/ws/sessions/first/", owner)

    prompt = await ask_async(agent, session="first")

    html = await tab.receive_from(timeout=DEADLINE)
    assert html.index('id="waiting"') < html.index('id="prompt-panel"')
    assert f'data-arrived="{prompt.pk}"' in html
    assert await tab.receive_nothing(timeout=0.3)  # not a second time through the person's group
    await tab.disconnect()


async def test_a_deadline_moved_updates_the_count_without_notifying_again(agent, owner):
    prompt = await ask_async(agent, session="second")
    tab = await opened(ONLY_WAITING, owner)

    await database_call(services.extend)(prompt, by=owner, surface="web")

    html = await tab.receive_from(timeout=DEADLINE)
    assert 'data-count="1"' in html and "data-arrived" not in html
    await tab.disconnect()


async def test_a_page_on_other_settings_hears_only_the_count(agent, owner):
    tab = await opened(ONLY_WAITING, owner)

    await ask_async(agent, session="second")
    await database_call(services.post_agent_message)(agent, "second", "More news")

    html = await tab.receive_from(timeout=DEADLINE)
    assert 'id="waiting"' in html and "sessions-list" not in html
    assert await tab.receive_nothing(timeout=0.3)  # a message changes no count
    await tab.disconnect()


async def test_another_user_hears_no_count_of_mine(agent, owner, other_user):
    their_tab = await opened(ONLY_WAITING, other_user)

    prompt = await ask_async(agent, session="second")
    await database_call(services.cancel)(prompt, agent=agent)

    assert await their_tab.receive_nothing(timeout=0.3)
    await their_tab.disconnect()


@pytest.mark.parametrize("path", ["/ws/sessions/?only=waiting&", "/ws/sessions/first/?", "/ws/sessions/?"])
async def test_a_connecting_page_gets_the_count_only_if_what_it_shows_is_out_of_date(agent, owner, path):
    await database_call(services.post_agent_message)(agent, "first", "Hello")
    prompt = await ask_async(agent, session="second")
    await make_it_all_old()
    shown = (await database_call(ui.waiting)(owner)).state
    cursor = await database_call(ui.timeline_cursor)()

    stale = await connect(f"{path}since={cursor}&waiting=0:", owner)
    assert (await stale.connect(timeout=DEADLINE))[0]
    html = await stale.receive_from(timeout=DEADLINE)
    assert 'data-count="1"' in html and f"/p/{prompt.pk}/" in html
    await stale.disconnect()

    current = await connect(f"{path}since={cursor}&waiting={shown}", owner)
    assert (await current.connect(timeout=DEADLINE))[0]
    assert await current.receive_nothing(timeout=0.3)
    await current.disconnect()
