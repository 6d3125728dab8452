"""Background work starts with the process, as production starts it (``manage.py serve``,
``manage.py worker``), with no request at all: a deadline expires, a webhook leaves and a
Telegram tap fetched by polling is answered. Before, the loops waited for a first request."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from askuser_app.delivery.channels.chats import core
from askuser_app.models import Prompt
from tests.chatfake import CHAT, TOKEN, FakeAPI, FakeTelegram, embedded
from tests.conftest import EXTRAS, QUESTION, ask, until_sync
from tests.servers import STARTS_WITHIN, DaphneServer, Worker, free_port
from tests.webhookfake import WEBHOOK_ENV, Receiver

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


class World:
    """Work left in the database for a process that has just started, and the ends it goes to."""

    def __init__(self, agent: Any, telegram: FakeTelegram, receiver: Receiver) -> None:
        self.telegram, self.receiver = telegram, receiver
        # Overdue already: nobody in the new process was told of it.
        self.overdue = ask(agent, EXTRAS, session="overdue")  # its card, if it goes, has no "Production"
        past = timezone.now() - timedelta(seconds=1)
        Prompt.objects.filter(pk=self.overdue.pk).update(expires_at=past, callback_url=receiver.url)
        self.tapped = ask(agent, QUESTION, session="tapped")  # its card waits to go to Telegram

    def check(self, output: Callable[[], str]) -> None:
        """The deadline fired, its webhook left, and the tap on the card was fetched and answered."""
        expired = lambda: Prompt.objects.filter(pk=self.overdue.pk, reason="expired").exists()  # noqa: E731
        until_sync(expired, within=STARTS_WITHIN)  # the first step is also the process's start
        assert self.receiver.arrived.wait(10), output()
        # At least once (a slow answer under load is retried, as webhooks promise): each is the expiry.
        assert {json.loads(body)["id"] for _headers, body in self.receiver.requests} == {str(self.overdue.pk)}

        # The tapped prompt's card: the only one with "Production" (the overdue one's may have gone
        # out before it expired).
        def production() -> str | None:
            cards = self.telegram.calls("sendMessage")
            rows = [row for card in cards for row in (card.field("reply_markup") or {}).get("inline_keyboard", [])]
            return next((str(b["callback_data"]) for row in rows for b in row if b["text"] == "Production"), None)

        until_sync(lambda: production() is not None)
        data = production()
        self.telegram.deliver(tap(data))
        answered = Prompt.objects.filter(pk=self.tapped.pk, status="answered", surface="telegram")
        until_sync(answered.exists)


def tap(data: str) -> dict[str, Any]:
    alice = {"id": CHAT, "is_bot": False, "first_name": "Alice", "username": "alice"}
    message = {"message_id": 500, "date": 1_700_000_000, "chat": {"id": CHAT, "type": "private"}, "text": "…"}
    query = {"id": "cb-1", "from": alice, "chat_instance": "ci", "message": message, "data": data}
    return {"update_id": 1, "callback_query": query}


@pytest.fixture
def world(agent, owner, fake_api: FakeAPI, settings) -> Iterator[World]:
    # Configured here too: asked here, the card's delivery is recorded for the process to send.
    settings.TELEGRAM_BOT_TOKEN, settings.TELEGRAM_WEBHOOK_SECRET = TOKEN, ""
    settings.TELEGRAM_API_URL = fake_api.url
    core.link_by_hand(owner, "telegram", str(CHAT), chat_id=str(CHAT), handle="@alice")
    telegram, receiver = FakeTelegram(fake_api, TOKEN), Receiver()
    try:
        yield World(agent, telegram, receiver)
    finally:
        receiver.close()
        telegram.close()


@pytest.fixture
def env(server_env, fake_api: FakeAPI) -> dict[str, str]:
    """``make run``'s one process, with a Telegram bot that has no public URL, and loopback webhooks."""
    env = {**embedded(server_env), **WEBHOOK_ENV, "TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_URL": fake_api.url}
    env.pop("TELEGRAM_WEBHOOK_SECRET", None)
    env.pop("ASKUSER_SERVE_WORKER", None)
    return env | {"ASKUSER_PUBLIC_URL": f"http://127.0.0.1:{free_port()}", "PYTHONUNBUFFERED": "1"}


def test_a_server_nobody_asks_expires_delivers_and_fetches(world: World, env):
    server = DaphneServer(env)
    try:
        server.start(asked=False)
        world.check(server.output)
    finally:
        server.stop()


def test_the_worker_alone_expires_delivers_and_fetches_and_stops_on_sigterm(world: World, env):
    worker = Worker(env).start()
    try:
        world.check(worker.output)
    finally:
        stopped = worker.stop()
    assert stopped == 0, worker.output()
