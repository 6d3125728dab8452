"""Realtime plumbing: group names, what services announce after commit, and
the per-process hub that waiting requests park on.

Every message sent to a group carries the group's name, so one channel per
process can listen to any number of groups and hand each message to the
requests waiting on that group.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

if TYPE_CHECKING:
    from .models import Message, Prompt

log = logging.getLogger("askuser")


def prompt_group(prompt_id: uuid.UUID | str) -> str:
    return f"prompt-{uuid.UUID(str(prompt_id)).hex}"


def session_group(session_id: int) -> str:
    return f"session-{session_id}"


def user_group(user_id: int) -> str:
    return f"user-{user_id}"


# --- announcements (sent by services, after commit) -----------------------------


def prompt_created(prompt: Prompt) -> None:
    _announce(_browser_messages(prompt, "pending"))


def prompt_resolved(prompt: Prompt, result: dict[str, Any]) -> None:
    waiters = (prompt_group(prompt.pk), {"type": "prompt.resolved", "result": result})
    _announce([waiters, *_browser_messages(prompt, prompt.status)])


def message_created(message: Message) -> None:
    event = {
        "type": "message.created",
        "message_id": message.pk,
        "session_id": message.session_id,
        "author": message.author,
    }
    _announce([(session_group(message.session_id), event), (user_group(message.session.owner_id), event)])


def _browser_messages(prompt: Prompt, status: str) -> list[tuple[str, dict[str, Any]]]:
    change = {"type": "prompt.changed", "prompt_id": str(prompt.pk), "session_id": prompt.session_id, "status": status}
    return [(session_group(prompt.session_id), change), (user_group(prompt.session.owner_id), change)]


_sending: set[asyncio.Task[None]] = set()


def _announce(messages: list[tuple[str, dict[str, Any]]]) -> None:
    layer = get_channel_layer()

    async def send_all() -> None:
        for group, message in messages:
            await layer.group_send(group, {**message, "group": group})

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        async_to_sync(send_all)()
    else:  # called on an event loop's thread: send without blocking it
        task = loop.create_task(send_all())
        _sending.add(task)
        task.add_done_callback(_sending.discard)


# --- the hub ---------------------------------------------------------------------


class Hub:
    """One layer channel per process; requests wait on groups through it.

    A waiting request costs a queue and a set entry, not a layer channel, a
    Redis subscription of its own or a thread.
    """

    def __init__(self) -> None:
        self.layer = get_channel_layer()
        self.channel: str | None = None
        self.inboxes: dict[str, set[asyncio.Queue[dict[str, Any]]]] = {}
        self.lock = asyncio.Lock()
        self.reader: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        """How many requests are parked here."""
        return sum(len(members) for members in self.inboxes.values())

    @asynccontextmanager
    async def listen(self, group: str) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
        """Deliver the group's messages to a queue while the block runs."""
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        await self._join(group, inbox)
        try:
            yield inbox
        finally:
            await asyncio.shield(self._leave(group, inbox))

    async def _join(self, group: str, inbox: asyncio.Queue[dict[str, Any]]) -> None:
        async with self.lock:
            if self.channel is None:
                self.channel = await self.layer.new_channel()
                self.reader = asyncio.create_task(self._read(self.channel))
            members = self.inboxes.get(group)
            if members is None:
                await self.layer.group_add(group, self.channel)
                members = self.inboxes[group] = set()
            members.add(inbox)

    async def _leave(self, group: str, inbox: asyncio.Queue[dict[str, Any]]) -> None:
        async with self.lock:
            members = self.inboxes.get(group)
            if members is None:
                return
            members.discard(inbox)
            if not members:
                del self.inboxes[group]
                await self.layer.group_discard(group, self.channel)

    async def _read(self, channel: str) -> None:
        while True:
            try:
                message = await self.layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("The channel layer failed; listening again shortly.")
                await asyncio.sleep(0.5)
                continue
            for inbox in self.inboxes.get(message.get("group", ""), ()):
                inbox.put_nowait(message)


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def hub() -> Hub:
    """This event loop's hub."""
    loop = asyncio.get_running_loop()
    if loop not in _hubs:
        _hubs[loop] = Hub()
    return _hubs[loop]
