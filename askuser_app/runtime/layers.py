"""The embedded mode's channel layer: in memory, one process, at a constant
cost per call however many sockets are open.

Channels' ``InMemoryChannelLayer`` sweeps every channel and group for
expired messages on each ``receive`` and ``group_send``: with 10,000 open
sockets a ``group_send`` took 18.5 ms (41 ms in a busier minute; 0.01 ms with
none), paid by every socket connect and every announcement
(docs/PERFORMANCE.md, askuser_app/server/README.md). This layer is
written to the channel layer specification on ``BaseChannelLayer``, the
documented base for layers, and looks only at the channel or group a call
names: a receiver skips a message past its expiry, a full channel drops its
expired messages (and, as a channel nobody reads, leaves its groups), and a
group's send drops members past the group expiry.

Each channel's messages wait in a ``Mailbox`` rather than an ``asyncio.Queue``:
every open socket has a channel, and a queue's four deques and event cost
3.3 KiB each, a mailbox's list and its reader's future a tenth of that
(docs/PERFORMANCE.md, "Idle connections").
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import random
import string
import time
from typing import Any, Generic, TypeVar

from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer

T = TypeVar("T")


class Mailbox(Generic[T]):
    """Messages waiting for their readers: ``asyncio.Queue``'s ``put_nowait``,
    ``get``, ``get_nowait``, ``empty`` and ``full``, in a list and a future per
    reader waiting, made only while one waits. Many are held at once (a
    channel per open socket, an inbox per parked wait), each for long and
    mostly empty: the queue's deques and event are most of its memory."""

    __slots__ = ("capacity", "items", "readers")

    def __init__(self, capacity: int = 0) -> None:
        self.capacity = capacity  # 0: no bound
        self.items: list[T] = []
        self.readers: list[asyncio.Future[None]] | None = None

    def empty(self) -> bool:
        return not self.items

    def full(self) -> bool:
        return 0 < self.capacity <= len(self.items)

    def put_nowait(self, item: T) -> None:
        if self.full():
            raise asyncio.QueueFull
        self.items.append(item)
        if self.readers:
            reader = self.readers.pop(0)
            if not reader.done():
                reader.set_result(None)

    def get_nowait(self) -> T:
        if not self.items:
            raise asyncio.QueueEmpty
        return self.items.pop(0)

    async def get(self) -> T:
        while not self.items:
            reader = self._reader(asyncio.get_running_loop())
            try:
                await reader
            except asyncio.CancelledError:
                self._gave_up(reader)
                raise
            finally:
                if not self.readers:
                    self.readers = None
        return self.items.pop(0)

    async def get_within(self, timeout: float) -> T | None:
        """The next item, or None when none comes within ``timeout`` seconds: ``get`` under
        ``asyncio.timeout``, with one timer and no frame of its own around it (a parked wait
        holds this for up to a minute)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0)
        while not self.items:
            if loop.time() >= deadline:
                return None
            reader = self._reader(loop)
            timer = loop.call_at(deadline, self._time_out, reader)
            try:
                await reader
            except asyncio.CancelledError:
                self._gave_up(reader)
                raise
            finally:
                timer.cancel()
                if not self.readers:
                    self.readers = None
        return self.items.pop(0)

    # What ``get`` and ``get_within`` do around their wait: called, not awaited, so a parked
    # reader holds no frame of them.
    def _reader(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        reader: asyncio.Future[None] = loop.create_future()
        if self.readers is None:
            self.readers = []
        self.readers.append(reader)
        return reader

    def _gave_up(self, reader: asyncio.Future[None]) -> None:
        """A reader cancelled: it waits no more, and an item it was woken for goes to the next."""
        if self.readers is not None:
            with contextlib.suppress(ValueError):
                self.readers.remove(reader)
        if reader.done() and not reader.cancelled() and self.items and self.readers:
            self.readers.pop(0).set_result(None)

    def _time_out(self, reader: asyncio.Future[None]) -> None:
        if self.readers is not None:
            with contextlib.suppress(ValueError):
                self.readers.remove(reader)
        if not reader.done():
            reader.set_result(None)


class InMemoryChannelLayer(BaseChannelLayer):
    extensions = ["groups", "flush"]

    def __init__(
        self,
        expiry: int = 60,
        group_expiry: int = 86400,
        capacity: int = 100,
        channel_capacity: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(expiry=expiry, capacity=capacity, channel_capacity=channel_capacity, **kwargs)
        self.group_expiry = group_expiry
        self.channels: dict[str, Mailbox[tuple[float, dict[str, Any]]]] = {}
        self.groups: dict[str, dict[str, float]] = {}  # group -> channel -> when it joined
        self.memberships: dict[str, set[str]] = {}  # channel -> its groups

    # --- channels ----------------------------------------------------------------

    async def new_channel(self, prefix: str = "specific.") -> str:
        return f"{prefix}.inmemory!{''.join(random.choices(string.ascii_letters, k=12))}"

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        queue = self._queue(channel)
        item = (time.time() + self.expiry, copy.deepcopy(message))
        try:
            queue.put_nowait(item)
        except asyncio.QueueFull:
            if not self._drop_expired(channel, queue):
                raise ChannelFull(channel) from None
            queue.put_nowait(item)

    async def receive(self, channel: str) -> dict[str, Any]:
        self.require_valid_channel_name(channel)
        queue = self._queue(channel)
        try:
            while True:
                expires, message = await queue.get()
                if expires >= time.time():
                    return message
        finally:
            if queue.empty():
                self.channels.pop(channel, None)

    def _queue(self, channel: str) -> Mailbox[tuple[float, dict[str, Any]]]:
        if channel not in self.channels:
            self.channels[channel] = Mailbox(self.get_capacity(channel))
        return self.channels[channel]

    def _drop_expired(self, channel: str, queue: Mailbox[tuple[float, dict[str, Any]]]) -> bool:
        """Drop the full queue's expired messages; True when that made room.

        A channel whose messages expired unread has nobody reading it: it
        leaves its groups, as with Channels' own layer."""
        now, kept = time.time(), []
        while not queue.empty():
            item = queue.get_nowait()
            if item[0] >= now:
                kept.append(item)
        for item in kept:
            queue.put_nowait(item)
        if queue.full():
            return False
        for group in self.memberships.pop(channel, set()):
            self.groups.get(group, {}).pop(channel, None)
        return True

    # --- groups ------------------------------------------------------------------

    async def group_add(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        self.groups.setdefault(group, {})[channel] = time.time()
        self.memberships.setdefault(channel, set()).add(group)

    async def group_discard(self, group: str, channel: str) -> None:
        self.require_valid_channel_name(channel)
        self.require_valid_group_name(group)
        members = self.groups.get(group)
        if members is not None:
            members.pop(channel, None)
            if not members:
                self.groups.pop(group, None)
        groups = self.memberships.get(channel)
        if groups is not None:
            groups.discard(group)
            if not groups:
                self.memberships.pop(channel, None)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        joined_after = time.time() - self.group_expiry
        for channel, joined in list(self.groups.get(group, {}).items()):
            if joined < joined_after:
                await self.group_discard(group, channel)
                continue
            # As Channels' layers do: a full channel misses the message.
            with contextlib.suppress(ChannelFull):
                await self.send(channel, message)

    # --- flush -------------------------------------------------------------------

    async def flush(self) -> None:
        self.channels, self.groups, self.memberships = {}, {}, {}

    async def close(self) -> None:
        pass
