"""Live pushes to open pages: what each tab hears, and that nobody else hears it."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from askuser_app.domain import services
from askuser_app.models import Message, Prompt, Session
from askuser_app.runtime import realtime
from askuser_app.runtime.asyncdb import database_call
from askuser_app.web import socketauth, ui
from askuser_app.web.consumers import CLOSE_TOO_MANY, LiveConsumer
from tests.conftest import ask_async, connect, cookie_for, empty_the_cache, opened

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 10


@pytest.fixture
def session(agent):
    return services.post_agent_message(agent, "support-42", "Hello").session


async def test_a_socket_without_a_login_is_refused(session):
    socket = await connect("/ws/sessions/support-42/")

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert not connected


async def test_another_users_session_socket_is_refused(session, other_user):
    socket = await connect("/ws/sessions/support-42/", other_user)

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert not connected


async def test_a_socket_from_a_foreign_origin_is_refused(session, owner):
    socket = await connect("/ws/sessions/support-42/", owner, origin="https://evil.example")

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert not connected


async def test_a_socket_whose_login_a_password_change_ended_is_refused(session, owner):
    socket = await connect("/ws/sessions/support-42/", owner)
    owner.set_password("a-new-password-entirely")
    await database_call(owner.save)()

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert not connected


async def test_a_deactivated_users_socket_is_refused(session, owner):
    socket = await connect("/ws/sessions/support-42/", owner)
    owner.is_active = False
    await database_call(owner.save)()

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert not connected


@pytest.mark.parametrize("cached", [True, False], ids=["login cached", "login not cached"])
def test_opening_a_session_pages_socket_reads_login_user_session_and_state_in_one_query(
    session, owner, django_assert_num_queries, cached
):
    cookies = {"sessionid": cookie_for(owner).split("=", 1)[1]}
    Message.objects.update(created_at=timezone.now() - timedelta(hours=1))
    if not cached:  # as in another process, or after a restart
        empty_the_cache()

    # The session with its owner and what the page must catch up on; the login
    # by its key, from the cache unless the cache lacks it.
    with django_assert_num_queries(1 if cached else 2):
        opened = socketauth.open_socket(cookies, "support-42", timezone.now() - timedelta(minutes=1))
        html = ui.render_catch_up(opened.session, cookies, timezone.now() - timedelta(minutes=1))

    assert opened.user == owner and opened.session == session
    assert html == ""  # nothing pending, nothing new: the page is up to date


async def open_from(address: str, user, forwarded: str | None = None) -> WebsocketCommunicator:
    extra = [(b"x-forwarded-for", forwarded.encode())] if forwarded else []
    socket = await connect("/ws/sessions/", user, extra=extra)
    socket.scope["client"] = (address, 50000)  # as the server fills it in
    return socket


async def test_a_user_past_the_socket_cap_is_closed_with_4429_until_a_tab_closes(socket_caps, owner, other_user):
    tabs = [await open_from(f"10.0.0.{n}", owner) for n in range(3)]
    for tab in tabs[:2]:
        assert (await tab.connect(timeout=DEADLINE))[0]

    assert (await tabs[2].connect(timeout=DEADLINE))[0]  # accepted, so that the page can read the code…
    assert await tabs[2].receive_output(timeout=DEADLINE) == {"type": "websocket.close", "code": CLOSE_TOO_MANY}
    other = await open_from("10.0.0.9", other_user)
    assert (await other.connect(timeout=DEADLINE))[0]  # another user is not counted against alice
    await other.receive_from(timeout=DEADLINE)
    assert await other.receive_nothing()

    await tabs[0].disconnect()
    again = await open_from("10.0.0.1", owner)
    assert (await again.connect(timeout=DEADLINE))[0]
    assert "sessions" in await again.receive_from(timeout=DEADLINE)  # a live socket, not a close
    for socket in (tabs[1], other, again):
        await socket.disconnect()


async def test_one_address_past_the_socket_cap_is_closed_with_4429(socket_caps, owner, other_user, staff):
    first, second = await open_from("10.0.0.5", owner), await open_from("10.0.0.5", other_user)
    assert (await first.connect(timeout=DEADLINE))[0] and (await second.connect(timeout=DEADLINE))[0]

    third = await open_from("10.0.0.5", staff)
    elsewhere = await open_from("10.0.0.6", staff)

    assert (await third.connect(timeout=DEADLINE))[0]
    assert await third.receive_output(timeout=DEADLINE) == {"type": "websocket.close", "code": CLOSE_TOO_MANY}
    assert (await elsewhere.connect(timeout=DEADLINE))[0]
    for socket in (first, second, elsewhere):
        await socket.disconnect()


async def test_behind_a_trusted_proxy_sockets_are_capped_by_the_real_client(socket_caps, owner, other_user, staff):
    socket_caps.ASKUSER_MAX_SOCKETS_PER_USER = 0
    socket_caps.ASKUSER_TRUSTED_PROXIES = ["10.0.0.1"]
    spoofing = [await open_from("10.0.0.1", user, f"192.0.2.{n}, 203.0.113.7") for n, user in enumerate([owner] * 3)]
    for socket in spoofing[:2]:
        assert (await socket.connect(timeout=DEADLINE))[0]

    assert (await spoofing[2].connect(timeout=DEADLINE))[0]
    assert await spoofing[2].receive_output(timeout=DEADLINE) == {"type": "websocket.close", "code": CLOSE_TOO_MANY}
    neighbour = await open_from("10.0.0.1", staff, "203.0.113.8")  # another client behind the same proxy
    assert (await neighbour.connect(timeout=DEADLINE))[0]
    assert "sessions" in await neighbour.receive_from(timeout=DEADLINE)  # a live socket, not a close
    for socket in (*spoofing[:2], neighbour):
        await socket.disconnect()


async def test_an_untrusted_peer_is_capped_by_its_own_address_whatever_it_forwards(socket_caps, owner):
    socket_caps.ASKUSER_MAX_SOCKETS_PER_USER = 0
    tabs = [await open_from("198.51.100.9", owner, f"192.0.2.{n}") for n in range(3)]
    for tab in tabs[:2]:
        assert (await tab.connect(timeout=DEADLINE))[0]

    assert (await tabs[2].connect(timeout=DEADLINE))[0]
    assert await tabs[2].receive_output(timeout=DEADLINE) == {"type": "websocket.close", "code": CLOSE_TOO_MANY}
    for tab in tabs[:2]:
        await tab.disconnect()


@pytest.mark.parametrize(
    "origin,host",
    [
        ("http://127.0.0.1:9999", "127.0.0.1:8765"),  # another port on the same machine
        ("http://127.0.0.1", "127.0.0.1:8765"),
        ("https://127.0.0.1:8765", "127.0.0.1:8765"),  # another scheme
        ("http://localhost:8765", "127.0.0.1:8765"),  # another host, though allowed
        ("http://evil.example:8765", "evil.example:8765"),  # same, but not an allowed host
        ("null", "127.0.0.1:8765"),
        ("http://127.0.0.1:8765/path", "127.0.0.1:8765"),
    ],
)
async def test_a_socket_from_a_page_of_another_origin_is_refused(session, owner, origin, host):
    socket = await connect("/ws/sessions/support-42/", owner, origin=origin, host=host)

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert not connected


@pytest.mark.parametrize(
    "origin,host,extra",
    [
        ("http://127.0.0.1:8765", "127.0.0.1:8765", []),
        ("http://LOCALHOST:80", "localhost", []),  # the default port, spelt out or not
        ("http://[::1]:8765", "[::1]:8765", []),
    ],
)
async def test_a_socket_from_the_servers_own_origin_is_accepted(session, owner, origin, host, extra):
    socket = await connect("/ws/sessions/support-42/", owner, origin=origin, host=host, extra=extra)

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert connected
    await socket.disconnect()


async def test_behind_a_tls_proxy_the_https_origin_is_the_servers_own(session, owner, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ASKUSER_TRUSTED_PROXIES = ["10.0.0.1"]
    host = "127.0.0.1:8443"
    proxied = [(b"x-forwarded-proto", b"https")]

    plain = await connect("/ws/sessions/support-42/", owner, origin=f"http://{host}", host=host, extra=proxied)
    secure = await connect("/ws/sessions/support-42/", owner, origin=f"https://{host}", host=host, extra=proxied)
    for socket in (plain, secure):
        socket.scope["client"] = ("10.0.0.1", 50000)  # the proxy, as the server fills it in

    assert (await plain.connect(timeout=DEADLINE))[0] is False
    assert (await secure.connect(timeout=DEADLINE))[0] is True
    await secure.disconnect()


async def test_a_peer_that_is_no_trusted_proxy_is_not_believed_to_be_behind_tls(session, owner, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ASKUSER_TRUSTED_PROXIES = ["10.0.0.1"]
    host = "127.0.0.1:8443"
    claimed = [(b"x-forwarded-proto", b"https")]

    secure = await connect("/ws/sessions/support-42/", owner, origin=f"https://{host}", host=host, extra=claimed)
    secure.scope["client"] = ("203.0.113.7", 50000)

    assert (await secure.connect(timeout=DEADLINE))[0] is False


async def test_an_origin_in_csrf_trusted_origins_is_accepted(session, owner, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://askuser.example.com"]
    socket = await connect(
        "/ws/sessions/support-42/", owner, origin="https://askuser.example.com", host="10.0.0.5:8001"
    )

    connected, _ = await socket.connect(timeout=DEADLINE)

    assert connected
    await socket.disconnect()


async def test_on_connect_a_tab_gets_the_current_panel_and_timeline(agent, owner, session):
    prompt = await ask_async(agent)
    socket = await connect("/ws/sessions/support-42/", owner)
    await socket.connect(timeout=DEADLINE)

    html = await socket.receive_from(timeout=DEADLINE)

    assert f'data-prompt-id="{prompt.pk}"' in html and 'id="timeline-items"' in html and "Hello" in html
    await socket.disconnect()


async def test_a_tab_whose_page_is_up_to_date_is_sent_nothing_until_something_changes(agent, owner, session):
    await database_call(Message.objects.update)(created_at=timezone.now() - timedelta(hours=1))
    socket = await connect(f"/ws/sessions/support-42/?since={ui.timeline_cursor()}&shown=", owner)
    await socket.connect(timeout=DEADLINE)

    await database_call(services.post_agent_message)(agent, "support-42", "Deploying now")

    html = await socket.receive_from(timeout=DEADLINE)  # the first frame is the change
    assert "Deploying now" in html and "prompt-panel" not in html
    await socket.disconnect()


async def test_the_panel_the_page_shows_is_not_sent_again_so_a_begun_answer_stays(agent, owner, session):
    await database_call(Message.objects.update)(created_at=timezone.now() - timedelta(hours=1))
    shown = await ask_async(agent)
    socket = await connect(f"/ws/sessions/support-42/?since={ui.timeline_cursor()}&shown={shown.pk}", owner)
    await socket.connect(timeout=DEADLINE)

    await database_call(services.post_agent_message)(agent, "support-42", "Deploying now")

    html = await socket.receive_from(timeout=DEADLINE)
    assert "Deploying now" in html and "prompt-panel" not in html
    await socket.disconnect()


async def test_a_page_showing_a_prompt_resolved_meanwhile_gets_the_panel_closed(agent, owner, session):
    shown = await ask_async(agent)
    cursor = await database_call(ui.timeline_cursor)()
    await database_call(services.cancel)(shown, agent=agent)
    socket = await connect(f"/ws/sessions/support-42/?since={cursor}&shown={shown.pk}", owner)
    await socket.connect(timeout=DEADLINE)

    html = await socket.receive_from(timeout=DEADLINE)

    assert '<section id="prompt-panel" class="panel" hidden hx-swap-oob="true"></section>' in html
    assert f'id="item-prompt-{shown.pk}"' in html  # and its summary
    await socket.disconnect()


async def test_a_reconnecting_tab_catches_up_on_what_it_missed(agent, owner, session):
    await database_call(Message.objects.update)(created_at=timezone.now() - timedelta(hours=1))
    cursor = await database_call(ui.timeline_cursor)()  # the page is rendered, then the tab goes away
    resolved = await ask_async(agent)
    await database_call(services.answer)(resolved, {"deploy_target": "Production"}, by=owner, surface="web")
    await database_call(services.post_agent_message)(agent, "support-42", "Deploying now")
    pending = await ask_async(agent)
    socket = await connect(f"/ws/sessions/support-42/?since={cursor}", owner)
    await socket.connect(timeout=DEADLINE)

    html = await socket.receive_from(timeout=DEADLINE)

    assert f'data-prompt-id="{pending.pk}"' in html and 'hx-swap-oob="beforeend:#timeline-items"' in html
    assert f'id="item-prompt-{resolved.pk}"' in html and "Production" in html and "Deploying now" in html
    assert "Hello" not in html  # shown by the page already
    await socket.disconnect()


async def test_an_item_committed_while_the_page_was_read_is_not_missed(agent, owner, session):
    cursor = await database_call(ui.timeline_cursor)()
    # Stamped just before the page's read, committed after it.
    await database_call(Message.objects.update)(created_at=timezone.now() - timedelta(seconds=5))
    socket = await connect(f"/ws/sessions/support-42/?since={cursor}", owner)
    await socket.connect(timeout=DEADLINE)

    html = await socket.receive_from(timeout=DEADLINE)

    assert "Hello" in html
    await socket.disconnect()


@pytest.mark.parametrize(
    "query",
    ["since=99999999999999999999999999", "since=%C2%B2", "since=-5&shown=%00", "since=1e9", "since=" + "9" * 5000],
)
async def test_a_cursor_that_is_no_time_gets_the_whole_state_instead_of_an_error(agent, owner, session, query):
    prompt = await ask_async(agent)
    socket = await connect(f"/ws/sessions/support-42/?{query}", owner)
    connected, _ = await socket.connect(timeout=DEADLINE)

    html = await socket.receive_from(timeout=DEADLINE)

    assert connected and f'data-prompt-id="{prompt.pk}"' in html and "Hello" in html
    await socket.disconnect()


@pytest.mark.parametrize("key", ["a%00b", "-starts-with-a-dash", "x" * 129])
async def test_a_socket_for_a_key_no_session_can_have_is_refused_as_not_found(owner, session, key):
    socket = await connect(f"/ws/sessions/{key}/", owner)

    connected, code = await socket.connect(timeout=DEADLINE)

    assert (connected, code) == (False, 4404)


async def test_a_new_prompt_is_pushed_to_every_open_tab(agent, owner, session):
    tabs = [await opened("/ws/sessions/support-42/", owner) for _ in range(2)]

    prompt = await ask_async(agent)

    for tab in tabs:
        html = await tab.receive_from(timeout=DEADLINE)
        assert f'data-prompt-id="{prompt.pk}"' in html and 'hx-swap-oob="true"' in html
        assert "Where should this release go first?" in html
        await tab.disconnect()


async def test_a_new_prompts_push_to_its_sessions_tab_reads_five_statements(agent, owner, session):
    """The count, the session's pending prompt with its agent, its questions, their options,
    its undelivered messages; the notification is taken from the panel's prompt, not read
    again (docs/PERFORMANCE.md, "The push of a new question"). The tab's first push also
    reads the session's agent, which its session keeps."""
    layer = get_channel_layer()
    listener = await layer.new_channel()
    await layer.group_add(realtime.session_group("support-42"), listener)
    cookies = {"sessionid": (await database_call(cookie_for)(owner)).split("=", 1)[1]}
    tab = LiveConsumer()
    tab.scope = {"user": owner, "cookies": cookies, "query_string": b"", "url_route": {"kwargs": {}}}
    tab.session = (await database_call(socketauth.open_socket)(cookies, "support-42", None)).session

    async def push_of_a_new_prompt() -> tuple[Prompt, str, int]:
        prompt = await ask_async(agent)
        asked = await layer.receive(listener)
        assert asked.get("asked") and asked["prompt_id"] == str(prompt.pk)

        def pushed() -> tuple[str, int]:
            with CaptureQueriesContext(connection) as statements:
                html = tab.in_language(tab.render_change)(asked, tab.heard(asked))
            return html, len(statements.captured_queries)

        return prompt, *await database_call(pushed)()

    first, _, _ = await push_of_a_new_prompt()
    await database_call(services.cancel)(first, agent=agent)
    while (await layer.receive(listener))["type"] != "prompt.changed":  # the cancel's, closed then changed
        pass
    prompt, html, statements = await push_of_a_new_prompt()

    assert statements == 5
    # What the tab shows: the count with the notification, then the panel.
    count, panel = html.split('<section id="prompt-panel"')
    assert 'data-count="1"' in count and f'data-arrived="{prompt.pk}"' in count
    assert f'data-arrived-title="{agent.name} asks: Deploy"' in count
    assert f'data-prompt-id="{prompt.pk}"' in panel and "Where should this release go first?" in panel


@pytest.mark.parametrize(
    "resolve,words",
    [
        (
            lambda p, agent, user: services.answer(p, {"deploy_target": "Production"}, by=user, surface="web"),
            "Production",
        ),
        (lambda p, agent, user: services.skip_all(p, by=user, surface="web"), "Skipped"),
        (lambda p, agent, user: services.cancel(p, agent=agent), "Cancelled by the agent"),
        (lambda p, agent, user: services.abort_run(agent, p.run.run_id), "run was aborted"),
        (
            lambda p, agent, user: services.answer(p, {"deploy_target": "Production"}, by=user, surface="slack"),
            "Answered on Slack",
        ),
        (
            lambda p, agent, user: services.answer(p, {"deploy_target": "Production"}, by=user, surface="matrix"),
            "Answered elsewhere (matrix)",
        ),
    ],
)
async def test_each_kind_of_resolution_closes_the_panel_and_adds_the_summary(agent, owner, session, resolve, words):
    prompt = await ask_async(agent, run_id="run-1")
    tab = await opened("/ws/sessions/support-42/", owner)

    await database_call(resolve)(prompt, agent, owner)

    closed = await tab.receive_from(timeout=DEADLINE)
    assert f'hidden data-closes="{prompt.pk}" hx-swap-oob="true">' in closed
    html = await tab.receive_from(timeout=DEADLINE)
    assert '<section id="prompt-panel" class="panel" hidden hx-swap-oob="true">' in html
    assert f'id="item-prompt-{prompt.pk}"' in html and words in html
    await tab.disconnect()


async def test_a_resolved_prompts_panel_closes_in_every_tab_while_the_database_thread_is_busy(agent, owner, session):
    """The closing reads nothing: it is not queued behind the reads of other pages (a
    reconnect storm's) on the one database thread, and the summary follows once they are done."""
    prompt = await ask_async(agent, run_id="run-1")
    tabs = [await opened("/ws/sessions/support-42/", owner) for _ in range(2)]
    release = threading.Event()
    answering = asyncio.ensure_future(
        database_call(services.answer)(prompt, {"deploy_target": "Production"}, by=owner, surface="web")
    )
    # Queued on the database thread right behind the answer: ahead of any read its announcement causes.
    busy = asyncio.ensure_future(database_call(release.wait)(DEADLINE))

    try:
        await answering
        for tab in tabs:
            closed = await tab.receive_from(timeout=DEADLINE)
            assert f'<section id="prompt-panel" class="panel" hidden data-closes="{prompt.pk}"' in closed
            assert await tab.receive_nothing(timeout=0.2)
    finally:
        release.set()
        await busy
    for tab in tabs:
        summary = await tab.receive_from(timeout=DEADLINE)
        assert f'id="item-prompt-{prompt.pk}"' in summary and "Production" in summary
        await tab.disconnect()


async def test_a_change_is_announced_with_the_prompts_new_status(agent, owner, session):
    layer = get_channel_layer()
    listener = await layer.new_channel()
    await layer.group_add(realtime.user_group(owner.pk), listener)

    prompt = await ask_async(agent)
    created = await layer.receive(listener)
    await database_call(services.answer)(prompt, {"deploy_target": "Production"}, by=owner, surface="web")
    resolved = await layer.receive(listener)

    assert (created["type"], created["status"]) == ("prompt.changed", "pending")
    assert (resolved["type"], resolved["status"]) == ("prompt.changed", "answered")


async def test_an_expiry_closes_the_panel_live(agent, owner, session):
    prompt = await ask_async(agent)
    tab = await opened("/ws/sessions/support-42/", owner)
    await database_call(Prompt.objects.filter(pk=prompt.pk).update)(expires_at=timezone.now() - timedelta(seconds=1))

    await database_call(services.expire_due)()

    closed = await tab.receive_from(timeout=DEADLINE)
    assert f'hidden data-closes="{prompt.pk}"' in closed
    html = await tab.receive_from(timeout=DEADLINE)
    assert "hidden" in html and "Expired" in html
    await tab.disconnect()


async def test_a_message_is_pushed_to_the_sessions_tabs(agent, owner, session):
    tab = await opened("/ws/sessions/support-42/", owner)

    await database_call(services.post_agent_message)(agent, "support-42", "Deploying now")

    html = await tab.receive_from(timeout=DEADLINE)
    assert "Deploying now" in html and 'hx-swap-oob="beforeend:#timeline-items"' in html
    await tab.disconnect()


async def test_the_sessions_list_updates_live(agent, owner, session):
    tab = await opened("/ws/sessions/", owner)

    await ask_async(agent, session="fresh-session")

    html = await tab.receive_from(timeout=DEADLINE)
    assert 'id="sessions-list"' in html and "fresh-session" in html
    await tab.disconnect()


async def test_a_sessions_list_that_is_up_to_date_is_sent_nothing_until_something_changes(agent, owner, session):
    await database_call(Session.objects.update)(created_at=timezone.now() - timedelta(hours=1))
    await database_call(Message.objects.update)(created_at=timezone.now() - timedelta(hours=1))
    tab = await connect(f"/ws/sessions/?since={ui.timeline_cursor()}", owner)
    await tab.connect(timeout=DEADLINE)

    await ask_async(agent, session="fresh-session")

    html = await tab.receive_from(timeout=DEADLINE)  # the first frame is the change
    assert "fresh-session" in html
    await tab.disconnect()


async def test_a_sessions_list_reconnecting_after_a_change_gets_the_list_again(agent, owner, session):
    cursor = await database_call(ui.timeline_cursor)()
    await ask_async(agent)
    tab = await connect(f"/ws/sessions/?since={cursor}", owner)
    await tab.connect(timeout=DEADLINE)

    html = await tab.receive_from(timeout=DEADLINE)

    assert 'id="sessions-list"' in html and "support-42" in html
    await tab.disconnect()


async def test_a_tab_of_another_users_session_with_the_same_key_hears_only_its_own(agent, owner, other_user):
    await database_call(services.post_agent_message)(agent, "support-42", "Hello")
    their_agent = await database_call(lambda: services.create_agent("theirs", other_user)[0])()
    await database_call(services.post_agent_message)(their_agent, "support-42", "Hi Bob")
    their_tab = await opened("/ws/sessions/support-42/", other_user)

    prompt = await ask_async(agent)
    await database_call(services.post_agent_message)(agent, "support-42", "Deploying now")
    await database_call(services.cancel)(prompt, agent=agent)
    assert await their_tab.receive_nothing(timeout=0.3)

    await database_call(services.post_agent_message)(their_agent, "support-42", "Bob's news")
    assert "Bob&#x27;s news" in await their_tab.receive_from(timeout=DEADLINE)
    await their_tab.disconnect()


async def test_other_users_hear_nothing(agent, owner, other_user, session, other_token):
    theirs = await database_call(services.post_agent_message)(
        await database_call(lambda: services.Agent.objects.get(owner=other_user))(), "theirs", "hi"
    )
    their_session_tab = await opened(f"/ws/sessions/{theirs.session.key}/", other_user)
    their_list_tab = await opened("/ws/sessions/", other_user)

    prompt = await ask_async(agent)
    await database_call(services.cancel)(prompt, agent=agent)

    assert await their_session_tab.receive_nothing(timeout=0.3)
    assert await their_list_tab.receive_nothing(timeout=0.3)
    await their_session_tab.disconnect()
    await their_list_tab.disconnect()


# --- the inbox -----------------------------------------------------------------------------------------


async def test_a_new_question_reaches_an_open_inbox(agent, owner, session):
    tab = await opened("/ws/sessions/?only=inbox", owner)

    prompt = await ask_async(agent, session="fresh-session")

    html = await tab.receive_from(timeout=DEADLINE)
    assert '<ol id="inbox-prompts" class="inbox-prompts"' in html and 'hx-swap-oob="true"' in html
    assert f'id="prompt-{prompt.pk}"' in html and 'href="/s/fresh-session/"' in html
    assert 'name="from" value="inbox"' in html  # its forms come back to the inbox
    await tab.disconnect()


async def test_an_answered_question_moves_to_just_answered_in_an_open_inbox(agent, owner, session):
    prompt = await ask_async(agent)
    tab = await opened("/ws/sessions/?only=inbox", owner)

    await database_call(services.answer)(prompt, {"deploy_target": "Production"}, by=owner, surface="telegram")

    html = await tab.receive_from(timeout=DEADLINE)
    waiting, answered = html.split('id="inbox-answered"')
    assert f'id="prompt-{prompt.pk}"' not in waiting and 'id="inbox-empty"' in waiting
    assert f'id="answered-{prompt.pk}"' in answered and "Production" in answered and "Telegram" in answered
    await tab.disconnect()


async def test_an_expired_question_leaves_an_open_inbox(agent, owner, session):
    prompt = await ask_async(agent)
    tab = await opened("/ws/sessions/?only=inbox", owner)
    await database_call(Prompt.objects.filter(pk=prompt.pk).update)(expires_at=timezone.now() - timedelta(seconds=1))

    await database_call(services.expire_due)()

    html = await tab.receive_from(timeout=DEADLINE)
    assert f'id="prompt-{prompt.pk}"' not in html.split('id="inbox-answered"')[0]
    assert f'id="answered-{prompt.pk}"' in html and "Expired" in html
    await tab.disconnect()


async def test_more_time_moves_only_the_countdown_in_an_open_inbox(agent, owner, session):
    prompt = await ask_async(agent)
    tab = await opened("/ws/sessions/?only=inbox", owner)

    await database_call(services.extend)(prompt, by=owner, surface="web")

    html = await tab.receive_from(timeout=DEADLINE)
    assert f'id="countdown-{prompt.pk}"' in html and f'id="more-time-{prompt.pk}"' in html
    assert 'id="inbox-prompts"' not in html  # what the person has chosen in the card stays
    assert 'name="from" value="inbox"' in html
    await tab.disconnect()


async def test_an_inbox_hears_nothing_of_another_persons_questions(agent, owner, other_user, session):
    tab = await opened("/ws/sessions/?only=inbox", owner)
    intruder = await database_call(lambda: services.create_agent("intruder", other_user)[0])()

    await ask_async(intruder, session="theirs")

    assert await tab.receive_nothing(timeout=0.3)
    await tab.disconnect()


async def test_an_inbox_that_is_up_to_date_is_sent_nothing_on_connecting(agent, owner, session):
    await ask_async(agent)
    await database_call(Prompt.objects.update)(created_at=timezone.now() - timedelta(hours=1))
    await database_call(Session.objects.update)(created_at=timezone.now() - timedelta(hours=1))
    await database_call(Message.objects.update)(created_at=timezone.now() - timedelta(hours=1))
    tab = await connect(f"/ws/sessions/?only=inbox&since={ui.timeline_cursor()}", owner)
    await tab.connect(timeout=DEADLINE)

    assert await tab.receive_nothing(timeout=0.3)
    await tab.disconnect()


async def test_a_pushed_question_names_the_agent_that_asked_it_not_the_one_the_tab_opened_with(agent, owner, session):
    # Two agents of one person may take turns in a session; the tab's session names the first.
    await database_call(Message.objects.update)(created_at=timezone.now() - timedelta(hours=1))
    socket = await connect(f"/ws/sessions/support-42/?since={ui.timeline_cursor()}&shown=", owner)
    await socket.connect(timeout=DEADLINE)
    other = await database_call(lambda: services.create_agent("reviewer", owner)[0])()

    asked = await ask_async(other)

    html = await socket.receive_from(timeout=DEADLINE)
    while f'data-prompt-id="{asked.pk}"' not in html:
        html = await socket.receive_from(timeout=DEADLINE)
    assert "reviewer asks" in html and "helper asks" not in html
    await socket.disconnect()
