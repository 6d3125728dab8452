"""Realtime plumbing: group names, what services announce after commit, and
the per-process hub that waiting requests park on.

Every message sent to a group carries the group's name, so one channel per
process can listen to any number of groups and hand each message to the
requests waiting on that group.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
import uuid
import weakref
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels import layers as channels_layers
from channels.layers import get_channel_layer

from askuser_app.runtime.layers import InMemoryChannelLayer, Mailbox

if TYPE_CHECKING:
    from askuser_app.models import Message, Prompt

log = logging.getLogger("askuser")


def prompt_group(prompt_id: uuid.UUID | str) -> str:
    return f"prompt-{uuid.UUID(str(prompt_id)).hex}"


def session_group(key: str) -> str:
    """Every session with this key, whoever owns it: a socket joins it before it
    reads anything (its login included), so it needs a name known from its
    address alone; listeners drop the events of other owners' sessions by
    ``session_id``. Hashed: a key may hold characters a group name may not."""
    return f"session-{hashlib.blake2b(key.encode(), digest_size=16).hexdigest()}"


def user_group(user_id: int) -> str:
    return f"user-{user_id}"


# --- announcements (sent by services, after commit) -----------------------------


def heard_by_every_process() -> bool:
    """Whether an announcement made in this process reaches the others too (the
    scaled mode's Redis layer). The embedded mode's layer lives in one process's
    memory: what another process changes and announces, no wait parked on the
    server and no page open on it hears of."""
    in_memory = (InMemoryChannelLayer, channels_layers.InMemoryChannelLayer)
    return not isinstance(get_channel_layer(), in_memory)


def new_event_id() -> str:
    """One announcement's name, the same in each group it is sent to and unique
    across processes: the open pages of a process render what it changes once
    for all of them that show the same (``consumers.SharedRenders``)."""
    return uuid.uuid4().hex


def prompt_created(prompt: Prompt) -> None:
    # ``asked``: a new prompt, which open pages notify of (a moved deadline is "pending" too).
    _announce(_browser_messages(prompt, "pending", asked=True))


def prompt_resolved(prompt: Prompt, result: dict[str, Any]) -> None:
    waiters = (prompt_group(prompt.pk), {"type": "prompt.resolved", "result": result})
    # The session's open pages close its panel first, at once: the closing reads nothing
    # and each page renders it on the event loop (``consumers.LiveConsumer.prompt_closed``).
    closed = {
        "type": "prompt.closed",
        "prompt_id": str(prompt.pk),
        "session_id": prompt.session_id,
        "event": new_event_id(),
    }
    # From the result: this runs at commit, before the transition updates ``prompt`` itself.
    _announce(
        [waiters, *_browser_messages(prompt, result["status"])],
        at_once=[(session_group(prompt.session.key), closed)],
    )


def prompt_extended(prompt: Prompt) -> None:
    """A deadline moved (``services.extend``): waiters re-arm, every tab redraws its countdown."""
    deadline = prompt.expires_at.isoformat()
    waiters = (
        prompt_group(prompt.pk),
        {"type": "prompt.extended", "expires_at": deadline, "extended": prompt.extended},
    )
    # "extended", not "pending": a tab redraws the countdown, and nothing takes it for a new prompt.
    _announce([waiters, *_browser_messages(prompt, "extended")])


def message_created(message: Message) -> None:
    event = {
        "type": "message.created",
        "message_id": message.pk,
        "session_id": message.session_id,
        "author": message.author,
        "event": new_event_id(),
    }
    session = message.session
    _announce([(session_group(session.key), event), (user_group(session.owner_id), event)])


def _browser_messages(prompt: Prompt, status: str, *, asked: bool = False) -> list[tuple[str, dict[str, Any]]]:
    change = {
        "type": "prompt.changed",
        "prompt_id": str(prompt.pk),
        "session_id": prompt.session_id,
        "status": status,
        "event": new_event_id(),
    }
    if asked:
        change["asked"] = True
    session = prompt.session
    return [(session_group(session.key), change), (user_group(session.owner_id), change)]


_sending: set[asyncio.Task[None]] = set()
# The event loop a thread's announcements are handed to, set by the async code
# that started the thread's work (``sending_on``).
_server_loop: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "announcing_on", default=None
)


@contextmanager
def sending_on(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Announcements made by work this block starts on a thread (its context
    goes with it, as ``sync_to_async`` copies it) are handed to ``loop``
    without waiting, instead of the thread blocking in ``async_to_sync``
    until the layer has them (4 % of a create's samples on SQLite, and the
    one create thread idle meanwhile; docs/PERFORMANCE.md)."""
    token = _server_loop.set(loop)
    try:
        yield
    finally:
        _server_loop.reset(token)


class Held:
    """Announcements held back until the request that made them has sent its response."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.sends: list[Callable[[], Coroutine[Any, Any, None]]] = []

    def hold(self, send_all: Callable[[], Coroutine[Any, Any, None]]) -> None:
        # From the request's thread: the list is only read on the loop after the thread returned.
        self.sends.append(send_all)

    def send_now(self, send_all: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """From the request's thread: sent by the loop now, while the thread goes on."""
        self.loop.call_soon_threadsafe(_send_soon, self.loop, send_all)

    def release(self) -> None:
        sends, self.sends = self.sends, []
        for send_all in sends:
            _send_soon(self.loop, send_all)


_held: contextvars.ContextVar[Held | None] = contextvars.ContextVar("announcements_held", default=None)


@contextmanager
def sent_after_response() -> Iterator[None]:
    """Announcements made by work this block starts on a thread go out when
    the block ends, on this loop, after the response it sends, however the
    block ends (none is dropped).

    For the panel's answer: the person waits on its response, and every open
    page of the session renders the change it announces (a push render takes
    about as long as the answer itself). Sent at commit, those renders ran
    on the other threads while the answer rendered its own response, and
    the two took turns on the interpreter lock: the answer's response was
    3 to 5 ms later (docs/PERFORMANCE.md, "The answer in the browser"). Sent
    after it, the waits and the other pages hear of the answer a response's
    send later, the answering page at once. What a page renders on the event
    loop, reading nothing (a resolved prompt's panel closed), goes at once
    (``at_once``): the session's other pages close it while the answer still
    renders its response (docs/PERFORMANCE.md, "The click, issue #35")."""
    held = Held(asyncio.get_running_loop())
    token = _held.set(held)
    try:
        yield
    finally:
        _held.reset(token)
        held.release()


Announcements = Sequence[tuple[str, dict[str, Any]]]


def _announce(messages: Announcements, *, at_once: Announcements = ()) -> None:
    """Send ``messages`` to their groups, after ``at_once``; within ``sent_after_response``,
    ``at_once`` goes now and only ``messages`` waits for the response."""
    held = _held.get()
    if held is not None:
        if at_once:
            held.send_now(_sender(at_once))
        held.hold(_sender(messages))
        return
    send_all = _sender([*at_once, *messages])
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:  # called on an event loop's thread: send without blocking it
        _send_soon(loop, send_all)
        return
    server_loop = _server_loop.get()
    if server_loop is not None and not server_loop.is_closed():
        server_loop.call_soon_threadsafe(_send_soon, server_loop, send_all)
    else:
        async_to_sync(send_all)()


def _sender(messages: Announcements) -> Callable[[], Coroutine[Any, Any, None]]:
    layer = get_channel_layer()

    async def send_all() -> None:
        for group, message in messages:
            try:
                await layer.group_send(group, {**message, "group": group})
            except Exception as exc:  # the state is committed; waits re-read it
                log.warning("Could not announce %s to %s: %s", message["type"], group, exc)

    return send_all


def _send_soon(loop: asyncio.AbstractEventLoop, send_all: Callable[[], Coroutine[Any, Any, None]]) -> None:
    task = loop.create_task(send_all())
    _sending.add(task)
    task.add_done_callback(_sending.discard)


# --- the hub ---------------------------------------------------------------------


class Inbox(Mailbox[dict[str, Any]]):
    """Where a waiting request receives its group's messages, while it is
    inside ``async with hub().listen(group) as inbox``.

    ``deaf`` when the channel layer could not be reached to subscribe: no
    message will come, so the request re-reads the database when its bounded
    wait ends instead of trusting silence.

    A ``Mailbox``, not an ``asyncio.Queue``: a process may hold 50,000 waits
    parked, and a queue costs 3.3 KiB each; and its own context manager, not
    an ``asynccontextmanager``'s generator and wrapper, 0.4 KiB more of each
    (docs/PERFORMANCE.md, "Idle connections").
    """

    __slots__ = ("deaf", "group", "hub")

    def __init__(self, hub: Hub, group: str) -> None:
        super().__init__()
        self.deaf = False
        self.hub, self.group = hub, group

    async def __aenter__(self) -> Inbox:
        try:
            await self.hub._join(self.group, self)
            _honour_cancellation()
        except BaseException:
            # A request cancelled while subscribing still leaves.
            await asyncio.shield(self.hub._leave(self.group, self))
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.shield(self.hub._leave(self.group, self))


class Hub:
    """One layer channel per process; requests wait on groups through it.

    A waiting request costs a queue and a set entry, not a layer channel, a
    Redis subscription of its own or a thread. A layer that is unreachable
    (Redis restarting) degrades waits to a re-read at their end; it never
    fails a request.
    """

    def __init__(self) -> None:
        self.layer = get_channel_layer()
        self.channel: str | None = None
        self.inboxes: dict[str, set[Inbox]] = {}
        self.joined: set[str] = set()  # groups this process's channel is in at the layer
        self.lock = asyncio.Lock()
        self.reader: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        """How many requests are parked here."""
        return sum(len(members) for members in self.inboxes.values())

    def listen(self, group: str) -> Inbox:
        """Deliver the group's messages to an inbox while ``async with`` it runs."""
        return Inbox(self, group)

    async def _join(self, group: str, inbox: Inbox) -> None:
        async with self.lock:
            self.inboxes.setdefault(group, set()).add(inbox)
            try:
                if self.channel is None:
                    self.channel = await self.layer.new_channel()
                    self.reader = asyncio.create_task(self._read(self.channel))
                if group not in self.joined:
                    await self.layer.group_add(group, self.channel)
                    self.joined.add(group)
            except Exception as exc:
                log.warning("Channel layer unreachable (%s); this wait re-reads at its end.", exc)
                inbox.deaf = True

    async def _leave(self, group: str, inbox: Inbox) -> None:
        async with self.lock:
            members = self.inboxes.get(group, set())
            members.discard(inbox)
            if members:
                return
            self.inboxes.pop(group, None)
            if group in self.joined:
                self.joined.discard(group)
                try:
                    await self.layer.group_discard(group, self.channel)
                except Exception as exc:
                    log.warning("Channel layer unreachable (%s) while leaving %s.", exc, group)

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


def _honour_cancellation() -> None:
    """Raise the cancellation a layer call swallowed.

    redis-py can absorb a cancellation that arrives mid-command (a client
    hanging up while its wait subscribes); the request must still stop
    instead of waiting out its whole bounded wait."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def hub() -> Hub:
    """This event loop's hub."""
    loop = asyncio.get_running_loop()
    if loop not in _hubs:
        _hubs[loop] = Hub()
    return _hubs[loop]
