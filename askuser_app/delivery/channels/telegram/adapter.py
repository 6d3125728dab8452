"""Telegram, through python-telegram-bot's ``Bot`` (its HTTP client and types, none of its framework).

Outbound: one plain-text message per prompt (no parse mode, so nothing the
agent wrote is read as markup), an inline keyboard whose ``callback_data`` is
the ``base.Action`` of each button, and on resolution ``editMessageText``
with the keyboard removed. Inbound: ``POST /chat/telegram/webhook``, checked
against ``X-Telegram-Bot-Api-Secret-Token`` before its body is read, or, where
the server has no public URL (no ``TELEGRAM_WEBHOOK_SECRET``), ``poll``
long-polling ``getUpdates``: in the server process itself in the embedded mode
(``askuser_app/delivery/channels/chats/polling.py``), in ``manage.py chat_poll telegram`` in the scaled mode.
The webhook hands its update to ``handle``; ``poll`` reads a batch's updates
at once (``read``) and sends their replies beside the fetching.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any, ClassVar, TypeVar

import telegram
from asgiref.sync import async_to_sync
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from telegram import error as tg_error
from telegram.constants import ChatType
from telegram.request import HTTPXRequest
from telegram.warnings import PTBUserWarning

from askuser_app.delivery import egress
from askuser_app.delivery.channels.base import Card, Closed, News, Permanent, Ref, Reply, Sender, Temporary
from askuser_app.delivery.channels.chats import core
from askuser_app.domain.chars import ascii_int
from askuser_app.runtime.asyncdb import database_call

log = logging.getLogger("askuser")

T = TypeVar("T")
Say = Callable[[telegram.Bot], Awaitable[None]]  # what an update tells its person, sent after it is recorded

MAX_TEXT = 4096  # a Telegram message's characters
MAX_NOTICE = 200  # answerCallbackQuery's text
MAX_UPDATE = 256 * 1024  # an update is a few KiB; anything far larger is not one
POLL_SECONDS = 25
ALLOWED_UPDATES = ["message", "callback_query"]
HANDLING = 16  # updates of a batch read at once (one chat's one after another)
REPLYING = 8  # replies sent at once, for taps and for messages each
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _seconds(value: int | float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


async def _call(call: Awaitable[T]) -> T:
    """One Bot API call, its failure as the delivery engine understands it."""
    try:
        return await call
    except tg_error.RetryAfter as slow:
        raise Temporary(f"Telegram asks to wait: {slow}", retry_after=_seconds(slow.retry_after)) from slow
    except tg_error.BadRequest as refused:  # before NetworkError, which it extends
        raise Permanent(f"Telegram refused the request: {refused}") from refused
    except tg_error.NetworkError as failed:  # timeouts, 5xx, connection errors
        raise Temporary(f"Telegram could not be reached: {failed}") from failed
    except tg_error.TelegramError as refused:  # blocked bot, bad token, moved chat
        raise Permanent(f"{type(refused).__name__}: {refused}") from refused


def message_text(card: Card) -> str:
    link = _("Open in askuser: %(url)s") % {"url": card.url}
    how = "" if card.by_buttons else "\n" + _("Reply here to answer.")
    return _clip(f"{card.header}\n\n{card.text}{how}\n\n{link}", MAX_TEXT)


def closed_text(closed: Closed) -> str:
    link = _("Open in askuser: %(url)s") % {"url": closed.url}
    return _clip(f"{closed.header}\n\n{closed.text}\n\n{closed.outcome}\n{link}", MAX_TEXT)


def keyboard(card: Card) -> telegram.InlineKeyboardMarkup:
    """One row per option (labels may be long), then Other… and Skip side by side."""
    buttons = [telegram.InlineKeyboardButton(b.label, callback_data=b.data) for b in card.buttons]
    rows = [[b] for b in buttons[:-2]] + [buttons[-2:]] if card.by_buttons else [buttons]
    return telegram.InlineKeyboardMarkup(rows)


def _chat(chat_id: str | int) -> int | str:
    """A numeric chat id as Telegram's int (groups' are negative); a ``@channel`` name as it is."""
    text = str(chat_id)
    number = ascii_int(text.removeprefix("-"))
    if number is None:
        return text
    return -number if text.startswith("-") else number


def _handle(user: telegram.User) -> str:
    return f"@{user.username}" if user.username else user.full_name


class TelegramAdapter:
    name: ClassVar[str] = "telegram"
    label: ClassVar[str] = "Telegram"

    _usernames: ClassVar[dict[tuple[str, str], str]] = {}

    def configured(self) -> bool:
        return bool(settings.TELEGRAM_BOT_TOKEN)

    def polls(self) -> bool:
        # Without the secret the webhook refuses everything: updates can only be fetched.
        return not settings.TELEGRAM_WEBHOOK_SECRET

    @contextlib.asynccontextmanager
    async def bot(self, *, polling: bool = False) -> AsyncIterator[telegram.Bot]:
        """A Bot on the configured API, its HTTP clients closed afterwards (a second one,
        with a longer read timeout, for ``getUpdates`` when ``polling``)."""
        # Polling, the replies of fetched updates go out on two lanes of REPLYING at once (_Replies).
        # The process's one TLS context (egress.trusted): each client loading the authorities
        # anew took 30 ms of the event loop per message, the loop that answers every request.
        tls = {"verify": egress.trusted()}
        requests = HTTPXRequest(
            connection_pool_size=2 * REPLYING if polling else 4, read_timeout=20.0, httpx_kwargs=tls
        )
        updates = (
            HTTPXRequest(connection_pool_size=1, read_timeout=POLL_SECONDS + 10.0, httpx_kwargs=tls)
            if polling
            else requests
        )
        bot = telegram.Bot(
            settings.TELEGRAM_BOT_TOKEN,
            base_url=f"{settings.TELEGRAM_API_URL}/bot",
            request=requests,
            get_updates_request=updates,
        )
        try:
            yield bot
        finally:
            await requests.shutdown()
            await updates.shutdown()  # the same client again unless polling: a no-op

    # --- outbound ---------------------------------------------------------------------

    async def send(self, address: str, card: Card) -> Ref:
        async with self.bot() as bot:
            sent = await _call(
                bot.send_message(
                    chat_id=_chat(address),
                    text=message_text(card),
                    reply_markup=keyboard(card),
                    link_preview_options=telegram.LinkPreviewOptions(is_disabled=True),
                )
            )
        return {"chat_id": sent.chat_id, "message_id": sent.message_id}

    async def tell(self, address: str, news: News) -> None:
        # Plain text, no parse mode: the agent's words are shown as they are.
        text = _clip(f"{news.title}\n{news.text}", 4096 - len(news.url) - 2) + f"\n\n{news.url}"
        async with self.bot() as bot:
            await _call(
                bot.send_message(
                    chat_id=_chat(address),
                    text=text,
                    link_preview_options=telegram.LinkPreviewOptions(is_disabled=True),
                )
            )

    async def edit(self, ref: Ref, closed: Closed) -> None:
        # Without reply_markup, editMessageText removes the inline keyboard.
        async with self.bot() as bot:
            try:
                await _call(
                    bot.edit_message_text(
                        text=closed_text(closed),
                        chat_id=ref["chat_id"],
                        message_id=ref["message_id"],
                        link_preview_options=telegram.LinkPreviewOptions(is_disabled=True),
                    )
                )
            except Permanent as refused:
                if "message is not modified" not in str(refused).lower():  # edited already: done
                    raise

    def how_to_link(self, code: str) -> str:
        username = self._username()
        if username:
            return _("Open t.me/%(bot)s?start=%(code)s, or send /start %(code)s to the bot.") % {
                "bot": username,
                "code": code,
            }
        return _("Send /start %(code)s to the bot.") % {"code": code}

    def _username(self) -> str:
        """The bot's @name (getMe), asked once per token; empty when Telegram cannot say."""
        key = (settings.TELEGRAM_BOT_TOKEN, settings.TELEGRAM_API_URL)
        if key not in self._usernames:
            try:
                me = async_to_sync(self._get_me)()
            except (tg_error.TelegramError, TimeoutError) as failed:
                log.warning("Telegram getMe failed: %s", failed)
                return ""
            self._usernames[key] = me.username or ""
        return self._usernames[key]

    async def _get_me(self) -> telegram.User:
        async with self.bot() as bot:
            return await asyncio.wait_for(bot.get_me(), 10)

    def urlpatterns(self) -> list[URLPattern]:
        return [path("webhook", webhook, name="telegram_webhook")]

    # --- inbound ----------------------------------------------------------------------

    async def handle(self, bot: telegram.Bot, update: telegram.Update) -> None:
        """One update (the webhook's): what it changes, then what the person is told."""
        say = await self.read(update)
        if say is not None:
            await say(bot)

    async def read(self, update: telegram.Update) -> Say | None:
        """One update, once: a button tap, or a message in the private chat (or a reply to a
        prompt), recorded; what to tell the person is returned, to be sent after."""
        if await database_call(core.seen)(self.name, str(update.update_id)):
            return None
        if update.callback_query is not None:
            return await self._tap(update.callback_query)
        if update.message is not None and update.message.text is not None and update.message.from_user:
            return await self._message(update.message, update.message.from_user)
        log.info("Ignored a Telegram update of a kind askuser does not read (%s).", update.update_id)
        return None

    async def _tap(self, query: telegram.CallbackQuery) -> Say:
        chat = query.message.chat.id if query.message is not None else ""
        sender = Sender(self.name, str(query.from_user.id), chat_id=str(chat), handle=_handle(query.from_user))
        reply = await database_call(core.tap)(sender, query.data or "")

        async def say(bot: telegram.Bot) -> None:
            await _quietly(bot.answer_callback_query(query.id, text=_clip(reply.text, MAX_NOTICE)))
            if reply.ask_own_words is None or reply.prompt_id is None or not chat:
                return
            placeholder = _clip(_("Your answer to %(header)s") % {"header": reply.ask_own_words.header}, 64)
            asked = await _quietly(
                bot.send_message(
                    chat_id=chat,
                    text=reply.text,
                    reply_markup=telegram.ForceReply(input_field_placeholder=placeholder),
                )
            )
            if asked is not None:
                await database_call(core.remember)(sender, reply.prompt_id, ask_message_id=asked.message_id)

        return say

    async def _message(self, message: telegram.Message, user: telegram.User) -> Say | None:
        sender = Sender(self.name, str(user.id), chat_id=str(message.chat.id), handle=_handle(user))
        reply = await database_call(self._read)(sender, message)
        if reply is None or not reply.text:
            return None

        async def say(bot: telegram.Bot) -> None:
            await _quietly(bot.send_message(chat_id=message.chat.id, text=_clip(reply.text, MAX_TEXT)))

        return say

    def _read(self, sender: Sender, message: telegram.Message) -> Reply | None:
        """What a message says: a command, an own answer after Other…, or a reply; None to stay silent."""
        text = message.text or ""
        command, _space, rest = text.strip().partition(" ")
        command = command.split("@")[0].lower()
        if command == "/start":
            if rest.strip():
                return core.link(sender, rest)
            return Reply(_("Send /start followed by the link code askuser shows you under Chat apps."))
        if command == "/stop":
            return core.unlink(sender)
        private = message.chat.type == ChatType.PRIVATE
        replied = message.reply_to_message
        if replied is not None:
            asked = core.prompt_of(self.name, chat_id=message.chat.id, ask_message_id=replied.message_id)
            if asked is not None:
                return core.own_words(sender, asked, text)
            prompt_id = core.prompt_of(self.name, chat_id=message.chat.id, message_id=replied.message_id)
            if prompt_id is not None or private:
                return core.reply(sender, text, prompt_id=prompt_id)
            return None
        if not private:
            return None  # a group's chatter is nobody's answer
        if command.startswith("/"):
            return Reply(_("Reply to a question with your answer; /stop unlinks this chat."))
        return core.reply(sender, text)

    async def poll(self) -> None:
        """Long-poll getUpdates until cancelled (``chats/polling.py``, ``manage.py chat_poll telegram``).

        Each batch is read as JSON and each update parsed alone: one python-telegram-bot
        cannot read is logged and skipped, never the batch. The next batch is asked for once
        every update of this one is recorded (asking with the new offset confirms them to
        Telegram, which then forgets them), and that offset is stored, so a restart goes on
        where the last process stopped. Replies are sent beside the fetching (``_Replies``):
        a flood of messages is never waited on by the next batch."""
        # getUpdates is asked for as JSON (``do_api_request``) rather than through ``Bot.get_updates``,
        # which parses a batch whole and fails it all on one update it cannot read; python-telegram-bot
        # warns that a method of its own exists. (Set here, not at import: test runners reset filters.)
        warnings.filterwarnings("ignore", message=r"Please use 'Bot\.getUpdates'", category=PTBUserWarning)
        account = settings.TELEGRAM_BOT_TOKEN.partition(":")[0]  # the bot's id; the rest is the secret
        offset = await database_call(core.poll_offset)(self.name, account)
        pause = 1.0
        async with self.bot(polling=True) as bot:
            replies = _Replies(bot)
            try:
                while True:
                    try:
                        found = await self._fetch(bot, offset)
                    except tg_error.RetryAfter as slow:
                        await asyncio.sleep(_seconds(slow.retry_after))
                        continue
                    except tg_error.NetworkError as failed:
                        log.warning("Telegram getUpdates failed (%s); trying again in %.0f s.", failed, pause)
                        await asyncio.sleep(pause)
                        pause = min(pause * 2, 60.0)
                        continue
                    pause = 1.0
                    if not found:
                        continue
                    offset = max([offset or 0, *(_next_id(data) for data in found)])
                    updates = [update for data in found if (update := _update_of(data, bot)) is not None]
                    await self._read_batch(updates, replies)
                    await database_call(core.keep_poll_offset)(self.name, account, offset)
            finally:
                replies.cancel()

    async def _fetch(self, bot: telegram.Bot, offset: int | None) -> list[Any]:
        """One getUpdates, as JSON; a refusal that waiting does not cure as a RuntimeError."""
        try:
            found = await bot.do_api_request(
                "getUpdates",
                api_kwargs={"offset": offset, "timeout": POLL_SECONDS, "allowed_updates": ALLOWED_UPDATES},
            )
        except tg_error.Conflict as conflict:
            raise RuntimeError(
                f"Telegram refuses getUpdates ({conflict}): a webhook is set (deleteWebhook removes it, "
                "or set TELEGRAM_WEBHOOK_SECRET and serve POST /chat/telegram/webhook), or another "
                "process polls this bot (one getUpdates at a time)."
            ) from conflict
        except tg_error.InvalidToken as refused:
            raise RuntimeError(f"Telegram refuses the bot token ({refused}); check TELEGRAM_BOT_TOKEN.") from refused
        return found if isinstance(found, list) else []

    async def _read_batch(self, updates: list[telegram.Update], replies: _Replies) -> None:
        """Every update of a batch read, up to HANDLING at once, each chat's in order; chats with a
        tap first (someone watches its button spin), and each reply handed to ``replies``."""
        by_chat: dict[object, list[telegram.Update]] = {}
        for update in updates:
            by_chat.setdefault(_chat_of(update), []).append(update)
        ordered = sorted(by_chat.items(), key=lambda chat: not any(u.callback_query for u in chat[1]))
        bound = asyncio.Semaphore(HANDLING)

        async def in_order(chat: object, its: list[telegram.Update]) -> None:
            async with bound:
                for update in its:
                    try:
                        say = await self.read(update)
                    except Exception:
                        log.exception("Handling Telegram update %s failed.", update.update_id)
                        continue
                    if say is not None:
                        replies.send(chat, say, tap=update.callback_query is not None)

        await asyncio.gather(*(in_order(chat, its) for chat, its in ordered))


class _Replies:
    """What fetched updates tell their people, sent beside the fetching: taps' answers and
    messages' replies each on a lane of REPLYING at a time (a tap never queues behind a flood
    of messages), one chat's replies in the order of its updates."""

    def __init__(self, bot: telegram.Bot) -> None:
        self.bot = bot
        self.lanes = {True: asyncio.Semaphore(REPLYING), False: asyncio.Semaphore(REPLYING)}
        self.last: dict[object, asyncio.Task[None]] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    def send(self, chat: object, say: Say, *, tap: bool) -> None:
        task = asyncio.create_task(self._send(self.last.get(chat), say, self.lanes[tap]))
        self.last[chat] = task
        self.tasks.add(task)
        task.add_done_callback(functools.partial(self._done, chat))

    def _done(self, chat: object, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if self.last.get(chat) is task:
            del self.last[chat]

    async def _send(self, before: asyncio.Task[None] | None, say: Say, lane: asyncio.Semaphore) -> None:
        if before is not None:
            await asyncio.wait([before])
        async with lane:
            try:
                await say(self.bot)
            except Exception:
                log.exception("A Telegram reply failed.")

    def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()


def _next_id(data: Any) -> int:
    """The offset that confirms ``data``: its update_id + 1 (0 when it has none to read)."""
    update_id = data.get("update_id") if isinstance(data, dict) else None
    return update_id + 1 if isinstance(update_id, int) and not isinstance(update_id, bool) else 0


def _update_of(data: Any, bot: telegram.Bot) -> telegram.Update | None:
    try:
        return telegram.Update.de_json(data, bot)
    except Exception:  # python-telegram-bot raises whatever the data provokes (KeyError, TypeError, …)
        log.warning("Skipped a Telegram update askuser cannot read (%s).", _next_id(data) - 1, exc_info=True)
        return None


def _chat_of(update: telegram.Update) -> object:
    """The chat whose updates are read in order: a tap's, a message's; else the update alone."""
    if update.callback_query is not None:
        query = update.callback_query
        return query.message.chat.id if query.message is not None else f"user:{query.from_user.id}"
    if update.message is not None:
        return update.message.chat.id
    return f"update:{update.update_id}"


async def _quietly(call: Awaitable[T]) -> T | None:
    """A reply to the person: its failure is logged, the answer already stands."""
    try:
        return await call
    except tg_error.TelegramError as failed:
        log.warning("A Telegram reply could not be sent: %s", failed)
        return None


adapter = TelegramAdapter()


@csrf_exempt
async def webhook(request: HttpRequest) -> HttpResponse:
    """``POST /chat/telegram/webhook``: the secret header first, then the body, then the update."""
    if request.method != "POST":
        return JsonResponse({"error": "method_not_allowed"}, status=405, headers={"Allow": "POST"})
    secret = settings.TELEGRAM_WEBHOOK_SECRET
    given = request.headers.get(SECRET_HEADER, "")
    if not secret or not hmac.compare_digest(given.encode(), secret.encode()):
        log.warning("Refused a Telegram webhook request without the right secret token.")
        return JsonResponse({"error": "unauthorized", "detail": f"{SECRET_HEADER} is missing or wrong."}, status=401)
    declared = ascii_int(request.headers.get("Content-Length")) or 0
    if declared > MAX_UPDATE or len(request.body) > MAX_UPDATE:
        return JsonResponse({"error": "body_too_large", "detail": "This is larger than any update."}, status=413)
    data = _parsed(request.body)
    if data is None:
        log.warning("Refused a malformed Telegram update.")
        return JsonResponse({"error": "bad_request", "detail": "The body is not a Telegram update."}, status=400)
    async with adapter.bot() as bot:
        try:
            update = telegram.Update.de_json(data, bot)
        except (KeyError, TypeError, ValueError, AttributeError):
            log.warning("Refused a Telegram update that does not read as one.")
            return JsonResponse({"error": "bad_request", "detail": "The body is not a Telegram update."}, status=400)
        await adapter.handle(bot, update)
    return HttpResponse(status=200)


def _parsed(body: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("update_id"), int):
        return None
    return data
