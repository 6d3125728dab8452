"""What keeps a restart under thousands of open pages from collapsing: a page
that waits in line for its login to be read is let in first (its place is not
lost to a handshake timeout), and what an announcement changes is rendered
once per process for all the pages that show the same."""

from __future__ import annotations

import asyncio

import pytest
from django.test import Client

from askuser_app.web import consumers, socketauth, ui
from tests.conftest import ask_async, connect, empty_the_cache, opened

DEADLINE = 10

pytestmark = pytest.mark.django_db(transaction=True)

ONLY_WAITING = "/ws/sessions/?only=waiting&waiting=stale"


@pytest.fixture
def in_line(settings):
    """Every socket waits longer for its read than it may: each is let in first."""
    settings.ASKUSER_SOCKET_HOLD_AFTER = 0


async def test_a_page_in_line_is_let_in_first_and_then_sent_its_state(in_line, agent, owner):
    prompt = await ask_async(agent)
    socket = await connect("/ws/sessions/support-42/", owner)

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert connected
    assert f"panel-form-{prompt.pk}" in await socket.receive_from(timeout=DEADLINE)
    await socket.disconnect()


async def test_a_page_in_line_without_a_login_is_let_in_and_closed_with_4401(in_line, agent):
    await ask_async(agent)
    socket = await connect("/ws/sessions/support-42/")

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert connected
    assert await socket.receive_output(timeout=DEADLINE) == {"type": "websocket.close", "code": 4401}


async def test_a_page_in_line_for_another_users_session_is_closed_with_4404(in_line, agent, other_user):
    await ask_async(agent)
    socket = await connect("/ws/sessions/support-42/", other_user)

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert connected
    assert await socket.receive_output(timeout=DEADLINE) == {"type": "websocket.close", "code": 4404}


async def test_a_page_whose_read_is_quick_is_still_refused_before_its_handshake(agent):
    await ask_async(agent)
    socket = await connect("/ws/sessions/support-42/")

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert not connected


@pytest.fixture
def counted(monkeypatch) -> list[str]:
    """Each read of a person's count of waiting prompts, by the person's username."""
    reads: list[str] = []
    waiting = ui.waiting

    def counting(user, **kwargs):
        reads.append(user.username)
        return waiting(user, **kwargs)

    monkeypatch.setattr(ui, "waiting", counting)
    return reads


async def test_a_prompt_asked_is_read_once_for_all_of_a_persons_pages(agent, owner, counted):
    pages = [await opened(ONLY_WAITING, owner) for _ in range(5)]
    counted.clear()

    prompt = await ask_async(agent, session="elsewhere")

    heard = [await page.receive_from(timeout=DEADLINE) for page in pages]
    assert all(f"/p/{prompt.pk}/" in html and 'data-count="1"' in html for html in heard)
    assert len(set(heard)) == 1
    assert counted == ["alice"]  # one read for five pages
    for page in pages:
        await page.disconnect()


async def test_each_language_and_each_person_gets_its_own_render(agent, owner, staff, counted):
    english = await opened(ONLY_WAITING + "&lang=en", owner)
    hindi = await opened(ONLY_WAITING + "&lang=hi", owner)
    someone_else = await opened(ONLY_WAITING, staff)
    counted.clear()

    await ask_async(agent, session="elsewhere")

    in_english = await english.receive_from(timeout=DEADLINE)
    in_hindi = await hindi.receive_from(timeout=DEADLINE)
    assert "1 waiting<" in in_english and "1 waiting<" not in in_hindi and in_hindi != in_english
    assert sorted(counted) == ["alice", "alice"]  # the other person's page heard nothing of it
    assert await someone_else.receive_nothing(timeout=0.3)
    for page in (english, hindi, someone_else):
        await page.disconnect()


async def test_later_announcements_are_rendered_anew(agent, owner):
    page = await opened(ONLY_WAITING, owner)

    first = await ask_async(agent, session="elsewhere")
    assert 'data-count="1"' in await page.receive_from(timeout=DEADLINE)
    await ask_async(agent, session="another")

    html = await page.receive_from(timeout=DEADLINE)
    # Two waiting: the count leads to the inbox, and still names the oldest in its state.
    assert 'data-count="2"' in html and 'href="/inbox/"' in html and str(first.pk) in html
    await page.disconnect()


async def test_a_render_shared_by_a_page_that_closes_still_reaches_the_others():
    started, release = asyncio.Event(), asyncio.Event()
    shared = consumers.SharedRenders()

    async def slow() -> str:
        started.set()
        await release.wait()
        return "<p>rendered</p>"

    closing = asyncio.ensure_future(shared.get(("event", 1), slow))
    await started.wait()
    staying = asyncio.ensure_future(shared.get(("event", 1), slow))
    closing.cancel()
    release.set()

    assert await staying == "<p>rendered</p>"
    assert closing.cancelled()


def test_a_login_is_read_from_the_cache_and_from_the_database_when_the_cache_lacks_it(owner, django_assert_num_queries):
    client = Client()
    client.force_login(owner)
    cookies = {"sessionid": client.cookies["sessionid"].value}

    with django_assert_num_queries(0):
        assert socketauth.login_from(cookies) is not None
    empty_the_cache()
    with django_assert_num_queries(1):
        assert socketauth.login_from(cookies) is not None
    client.logout()
    with django_assert_num_queries(1):  # gone from both: the database is asked, and says so
        assert socketauth.login_from(cookies) is None
