"""Live updates for open pages: the consumer joins the user's own groups and
pushes the same partials the views render."""

from __future__ import annotations

import asyncio
import functools
import json
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.utils import translation

from askuser_app.domain import contract
from askuser_app.runtime import i18n, metrics, presence, proxies
from askuser_app.runtime.asyncdb import database_call
from askuser_app.runtime.realtime import session_group, user_group
from askuser_app.web import socketauth, ui

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
# Past a cap; the handshake is accepted first so that the page can read the
# code (a refused handshake looks like a dropped line, which pages retry).
CLOSE_TOO_MANY = 4429
MAX_SAYING = 64  # bytes of what a page sends: {"visible": false}

Holder = tuple[str, Any]


class Holdings:
    """The sockets open in this process, counted per user and per client address."""

    def __init__(self) -> None:
        self.open: Counter[Holder] = Counter()

    def take(self, holders: list[tuple[Holder, int]]) -> bool:
        """One more socket for every holder, unless one already holds its limit (0: none)."""
        if any(limit and self.open[holder] >= limit for holder, limit in holders):
            return False
        self.open.update(holder for holder, _ in holders)
        return True

    def release(self, holders: list[Holder]) -> None:
        self.open.subtract(holders)
        for holder in holders:
            if self.open[holder] <= 0:
                del self.open[holder]


holdings = Holdings()


class SharedRenders:
    """What an announcement changes, rendered once per process for all the
    open pages that show the same of it, instead of once per page.

    A person's pages all hear the person's group: with 5,000 of them open, each
    prompt asked was 5,000 reads of the same count on the one database thread
    (docs/PERFORMANCE.md, "Reconnect storm"). A page asks for a render by the
    announcement's id (``realtime.new_event_id``) and everything the render
    depends on; the first page's read serves the rest, and pages that ask while
    it runs wait for it. The last ``keep`` renders are kept: a page hears an
    announcement within moments of the others, never after hundreds more."""

    def __init__(self, keep: int = 512) -> None:
        self.keep = keep
        self.renders: OrderedDict[Hashable, asyncio.Future[str]] = OrderedDict()

    async def get(self, key: Hashable | None, render: Callable[[], Awaitable[str]]) -> str:
        if key is None:  # an event without an id (sent by hand): rendered for this page alone
            return await render()
        shared = self.renders.get(key)
        if shared is None:
            shared = self.renders[key] = asyncio.ensure_future(render())
            if len(self.renders) > self.keep:
                self.renders.popitem(last=False)
        # Shielded: a page that closes while it waits does not cancel the others' render.
        return await asyncio.shield(shared)


shared_renders = SharedRenders()


class LiveConsumer(AsyncWebsocketConsumer):
    """``/ws/sessions/`` follows the sessions list; ``/ws/sessions/<key>/`` one session;
    ``/ws/sessions/?only=inbox`` the inbox (every prompt waiting, and those just answered);
    ``/ws/sessions/?only=waiting`` (every other page) only what waits for the person.

    Every page follows the person's group for the header's count of prompts
    waiting (``ui.render_waiting``), sent again only when it changes. Every page
    says whether it is visible: on connecting (``?visible=1``) and then in a
    message, ``{"visible": true|false}``, each time that changes; the person's
    tabs in sight make a push needless (``presence``)."""

    groups: list[str] = []
    held: list[Holder] = []
    opened = False
    sighting: presence.Sighting | None = None

    async def connect(self) -> None:
        key = self.scope["url_route"]["kwargs"].get("key")
        if key is not None and not contract.is_session_key(key):
            # No session has such a key; PostgreSQL would refuse to even look (a NUL byte).
            await self.close(code=CLOSE_NOT_FOUND)
            return
        if key is not None:
            # Joined before anything is read: nothing that happens after the read is missed.
            await self.join(session_group(key))
        # One database call for the login, the user, the session followed and its state.
        reading = asyncio.ensure_future(database_call(self.open_page)(key))
        done, _ = await asyncio.wait({reading}, timeout=settings.ASKUSER_SOCKET_HOLD_AFTER)
        if not done:
            # In line behind other pages' reads (a restart brings thousands back at
            # once): the handshake is completed now, so that neither the server's
            # handshake timeout nor the browser gives the place up and the read
            # already queued is not wasted. A refusal then comes as a close code.
            await self.open()
        opened, state = await reading
        if opened.user is None:
            await self.refuse(CLOSE_UNAUTHENTICATED)
            return
        # Kept where Channels' auth middleware would put it, for what reads it later.
        self.scope["user"] = user = opened.user
        self.session = opened.session
        if key is not None and self.session is None:
            await self.refuse(CLOSE_NOT_FOUND)
            return
        if not self.hold(user):
            await self.open()
            await self.refuse(CLOSE_TOO_MANY)
            return
        # The user's group is known only now; what waits is read after joining it.
        await self.join(user_group(user.pk))
        self.sighting = presence.Sighting(user.pk)
        await self.sighting.says(self.query.get("visible") == ["1"])
        if self.session is None:
            state = await self.render(self.render_state)
        elif self.shown_waiting is not None:
            state += await self.render(self.render_waiting)
        await self.open()
        # A page that is up to date gets nothing.
        if state:
            await self.send(text_data=state)

    async def open(self) -> None:
        """Completes the handshake, once."""
        if not self.opened:
            self.opened = True
            await self.accept()

    def open_page(self, key: str | None) -> tuple[socketauth.Opened, str]:
        """The socket's login and session, and for a session page what it needs to catch up."""
        opened = socketauth.open_socket(self.cookies, key, self.since)
        if opened.session is None or opened.user is None:
            return opened, ""
        self.session = opened.session
        return opened, self.in_language(self.render_state)()

    async def join(self, group: str) -> None:
        self.groups = [*self.groups, group]
        await self.channel_layer.group_add(group, self.channel_name)

    async def refuse(self, code: int) -> None:
        await self.leave()
        await self.close(code=code)

    async def leave(self) -> None:
        groups, self.groups = self.groups, []
        for group in groups:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels' dispatch first closes old connections, on a thread hop of its
        # own before every message (a connect's second hop); the consumer's reads
        # close them themselves (``database_call``, ``database_sync_to_async``).
        await getattr(self, get_handler_name(message))(message)

    def hold(self, user: Any) -> bool:
        """Count this socket against its user's and its address's caps, if both have room."""
        holders = [(("user", user.pk), settings.ASKUSER_MAX_SOCKETS_PER_USER)]
        address = proxies.client_address(self.scope)
        if address is not None:
            holders.append((("address", address), settings.ASKUSER_MAX_SOCKETS_PER_ADDRESS))
        if not holdings.take(holders):
            return False
        self.held = [holder for holder, _ in holders]
        metrics.SOCKETS_OPEN.inc()
        return True

    async def disconnect(self, code: int) -> None:
        if self.sighting is not None:  # a closed tab is no longer in sight, at once
            await self.sighting.closed()
        if self.held:
            metrics.SOCKETS_OPEN.dec()
        holdings.release(self.held)
        self.held = []
        await self.leave()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """A page says only whether it is visible; answers go through the HTTP forms, and
        anything else is ignored."""
        if self.sighting is None or text_data is None or len(text_data) > MAX_SAYING:
            return
        try:
            said = json.loads(text_data)
        except ValueError:
            return
        if isinstance(said, dict) and isinstance(said.get("visible"), bool):
            await self.sighting.says(said["visible"])

    def heard(self, event: dict[str, Any]) -> str | None:
        """What an event is to this page: "session" for its own session's, "user"
        for another of the person's sessions, None for nothing it shows."""
        if self.session is None:  # in the user's group only
            return "user"
        own = event.get("session_id") == self.session.pk
        if event.get("group") == user_group(self.scope["user"].pk):
            # The page's own session: its session group brings the same event.
            return None if own else "user"
        # The session's group is the key's: another owner's session may share it.
        return "session" if own else None

    @property
    def lists(self) -> bool:
        return self.session is None and self.query.get("only") is None

    @property
    def inbox(self) -> bool:
        return self.session is None and self.query.get("only") == ["inbox"]

    async def prompt_closed(self, event: dict[str, Any]) -> None:
        """A resolved prompt's panel closed at once, as the answering page's response closes
        it: it reads nothing, so it is rendered here, ahead of the change's render
        (``prompt_changed``, which reads the session)."""
        if self.heard(event) == "session":
            await self.send(text_data=await self.shared(event, "session", self.render_closed_panel, event))

    async def prompt_changed(self, event: dict[str, Any]) -> None:
        heard = self.heard(event)
        if heard is None:
            return
        await self.send(text_data=await self.shared(event, heard, self.render_change, event, heard))

    async def message_created(self, event: dict[str, Any]) -> None:
        heard = self.heard(event)
        if heard == "user" and self.lists:
            await self.send(text_data=await self.shared(event, heard, self.render_sessions))
        elif heard == "session":
            await self.send(text_data=await self.shared(event, heard, ui.render_message, event["message_id"]))

    async def render_closed_panel(self, event: dict[str, Any]) -> str:
        """The panel of the prompt the event resolved, closed where the page still shows it
        (``ui.render_closed_panel``), rendered on the event loop: it reads nothing."""
        with translation.override(self.language):
            return ui.render_closed_panel(event["prompt_id"])

    async def shared(self, event: dict[str, Any], heard: str, function: Any, *args: Any) -> str:
        """``render(function, *args)``, once for every page of this process that
        shows the same: what a render reads depends on the person, the page's
        language and kind, and for a session page its session and collapsed panel."""
        if asyncio.iscoroutinefunction(function):  # renders on the loop, reading nothing
            render: Callable[[], Awaitable[str]] = lambda: function(*args)  # noqa: E731
        else:
            render = lambda: self.render(function, *args)  # noqa: E731
        event_id = event.get("event")
        if event_id is None:
            return await render()
        if heard == "user":
            shows: tuple[Any, ...] = (self.scope["user"].pk, self.lists, self.inbox, self.query.get("all") == ["1"])
        else:
            assert self.session is not None  # heard as "session": the page's own
            shows = (self.session.pk, self.cookies.get(ui.PANEL_COOKIE) == "collapsed")
        key = (event_id, function.__name__, heard, self.language, *shows)
        return await shared_renders.get(key, render)

    @property
    def cookies(self) -> dict[str, str]:
        cookies: dict[str, str] = self.scope.get("cookies", {})
        return cookies

    @functools.cached_property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(self.scope.get("query_string", b"").decode("latin-1"))

    @functools.cached_property
    def since(self) -> datetime | None:
        """Since when the page may have missed something: None for everything."""
        return ui.catch_up_since(self.query.get("since", [None])[0])

    @functools.cached_property
    def shown_waiting(self) -> str | None:
        """What the page's count of waiting prompts shows (``Waiting.state``); None if it did not say."""
        shown = self.query.get("waiting")
        return shown[0] if shown else None

    def render_waiting(self) -> str:
        """The count of waiting prompts, unless the page shows it already."""
        return ui.render_waiting(self.scope["user"], oob=True, unless=self.shown_waiting)

    def render_change(self, event: dict[str, Any], heard: str) -> str:
        """A prompt asked, resolved or given more time: the count, and what else the page shows of it."""
        # The prompt just asked, for the desktop notification (not a deadline moved).
        arrived = event["prompt_id"] if event.get("asked") else None
        if heard == "session" and arrived is not None:  # the page's own session asks
            assert self.session is not None
            return ui.render_asked(self.scope["user"], self.session, arrived, self.cookies)
        # First: the title counts it as the panel appears.
        html = ui.render_waiting(self.scope["user"], oob=True, arrived=arrived)
        if heard == "user" and self.inbox:
            if event.get("status") == "extended":
                return html + ui.render_inbox_deadline(self.scope["user"], event["prompt_id"])
            return html + ui.render_inbox(self.scope["user"], oob=True)
        if heard == "user":
            return html + self.render_sessions() if self.lists else html
        assert self.session is not None  # heard as "session": the page's own
        if event.get("status") == "extended":  # the deadline moved: the countdown and its button
            return html + ui.render_deadline_change(self.session, event["prompt_id"], self.cookies)
        # A prompt that just appeared has no summary to look up yet.
        appeared = event.get("status") == "pending"
        return html + ui.render_prompt_change(self.session, event["prompt_id"], self.cookies, appeared=appeared)

    def render_state(self) -> str:
        """The state as of joining; a session page says since when it needs the timeline."""
        if self.session is None:
            waiting = self.render_waiting() if self.shown_waiting is not None else ""
            if self.inbox:
                return waiting + ui.render_inbox_since(self.scope["user"], self.since)
            if not self.lists:
                return waiting
            everything = self.query.get("all") == ["1"]
            return waiting + ui.render_sessions_since(self.scope["user"], self.since, everything=everything)
        shown = self.query.get("shown", [""])[0]
        extended = self.query.get("extended", [""])[0]
        return ui.render_catch_up(self.session, self.cookies, self.since, shown, extended)

    def render_sessions(self) -> str:
        # A list opened with ?all=1 keeps showing the idle sessions as it updates.
        return ui.render_sessions(self.scope["user"], oob=True, everything=self.query.get("all") == ["1"])

    @functools.cached_property
    def language(self) -> str:
        """The page's language (its ``lang``): what it pushes is swapped into that page."""
        return i18n.supported(self.query.get("lang", [""])[0]) or settings.LANGUAGE_CODE

    def in_language(self, function: Any) -> Any:
        @functools.wraps(function)
        def rendered(*args: Any) -> str:
            with translation.override(self.language):
                html: str = function(*args)
            return html

        return rendered

    async def render(self, function: Any, *args: Any) -> str:
        html: str = await database_sync_to_async(self.in_language(function))(*args)
        return html
