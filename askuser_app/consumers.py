"""Live updates for open pages: the consumer joins the user's own groups and
pushes the same partials the views render."""

from __future__ import annotations

import functools
from collections import Counter
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.utils import translation

from . import contract, i18n, socketauth, ui
from .asyncdb import database_call
from .realtime import session_group, user_group

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
# Past a cap; the handshake is accepted first so that the page can read the
# code (a refused handshake looks like a dropped line, which pages retry).
CLOSE_TOO_MANY = 4429

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


class LiveConsumer(AsyncWebsocketConsumer):
    """``/ws/sessions/`` follows the sessions list; ``/ws/sessions/<key>/`` one session."""

    group: str | None = None
    held: list[Holder] = []

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
        opened, state = await database_call(self.open_page)(key)
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
            await self.accept()
            await self.refuse(CLOSE_TOO_MANY)
            return
        if self.session is None:  # the sessions list: its group is the user's, known only now
            await self.join(user_group(user.pk))
            state = await self.render(self.render_state)
        await self.accept()
        # A page that is up to date gets nothing.
        if state:
            await self.send(text_data=state)

    def open_page(self, key: str | None) -> tuple[socketauth.Opened, str]:
        """The socket's login and session, and for a session page what it needs to catch up."""
        opened = socketauth.open_socket(self.cookies, key, self.since)
        if opened.session is None or opened.user is None:
            return opened, ""
        self.session = opened.session
        return opened, self.in_language(self.render_state)()

    async def join(self, group: str) -> None:
        self.group = group
        await self.channel_layer.group_add(group, self.channel_name)

    async def refuse(self, code: int) -> None:
        await self.leave()
        await self.close(code=code)

    async def leave(self) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels' dispatch first closes old connections, on a thread hop of its
        # own before every message (a connect's second hop); the consumer's reads
        # close them themselves (``database_call``, ``database_sync_to_async``).
        await getattr(self, get_handler_name(message))(message)

    def hold(self, user: Any) -> bool:
        """Count this socket against its user's and its address's caps, if both have room."""
        holders = [(("user", user.pk), settings.ASKUSER_MAX_SOCKETS_PER_USER)]
        address = (self.scope.get("client") or [None])[0]
        if address is not None:
            holders.append((("address", address), settings.ASKUSER_MAX_SOCKETS_PER_ADDRESS))
        if not holdings.take(holders):
            return False
        self.held = [holder for holder, _ in holders]
        return True

    async def disconnect(self, code: int) -> None:
        holdings.release(self.held)
        self.held = []
        await self.leave()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Browsers only listen; answers go through the HTTP forms."""

    def not_mine(self, event: dict[str, Any]) -> bool:
        """An event for another owner's session with this page's key (the group is the key's)."""
        return self.session is not None and event.get("session_id") != self.session.pk

    async def prompt_changed(self, event: dict[str, Any]) -> None:
        if self.not_mine(event):
            return
        if self.session is None:
            await self.send(text_data=await self.render(self.render_sessions))
            return
        # A prompt that just appeared has no summary to look up yet.
        change = functools.partial(ui.render_prompt_change, appeared=event.get("status") == "pending")
        await self.send(text_data=await self.render(change, self.session, event["prompt_id"], self.cookies))

    async def message_created(self, event: dict[str, Any]) -> None:
        if self.not_mine(event):
            return
        if self.session is None:
            await self.send(text_data=await self.render(self.render_sessions))
            return
        await self.send(text_data=await self.render(ui.render_message, event["message_id"]))

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

    def render_state(self) -> str:
        """The state as of joining; a session page says since when it needs the timeline."""
        if self.session is None:
            everything = self.query.get("all") == ["1"]
            return ui.render_sessions_since(self.scope["user"], self.since, everything=everything)
        shown = self.query.get("shown", [""])[0]
        return ui.render_catch_up(self.session, self.cookies, self.since, shown)

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
