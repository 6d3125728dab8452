"""A chat app without a public URL, as ``make run`` serves it: the server process fetches the
app's events itself (Telegram's getUpdates, Slack's Socket Mode), so a tap or a reply fetched
so wakes the agent's parked wait at once. The scaled mode leaves the fetching to one
process (``manage.py worker``, or ``chat_poll``), whose answers Redis carries to every server process."""

from __future__ import annotations

import asyncio
import concurrent.futures
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from askuser_app.delivery import channels
from askuser_app.delivery.channels.chats import core, polling
from askuser_app.server import loops
from tests.chatfake import (
    CHAT,
    DEADLINE,
    SLACK_DM,
    SLACK_SIGNING_SECRET,
    SLACK_USER,
    TOKEN,
    FakeAPI,
    FakeSlack,
    FakeTelegram,
    WithoutURL,
    embedded,
    slack_dm,
)
from tests.conftest import EXTRAS, QUESTION, SCALED, SCALED_REASON, payload
from tests.servers import ROOT, STARTS_WITHIN, DaphneServer, free_port

AT_ONCE = 1.0  # seconds from the event reaching the server to the agent's wait returning

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def on_telegram(owner):
    return core.link_by_hand(owner, "telegram", str(CHAT), chat_id=str(CHAT), handle="@alice")


@pytest.fixture
def on_slack(owner):
    return core.link_by_hand(owner, "slack", SLACK_USER, chat_id=SLACK_DM, handle="alice")


@pytest.fixture
def agent_pool() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        yield pool


class AgentAtServer:
    """The agent, over HTTP, against one server process."""

    def __init__(self, server: DaphneServer, token: str, pool: concurrent.futures.ThreadPoolExecutor) -> None:
        self.server, self.pool = server, pool
        self.headers = {"Authorization": f"Bearer {token}"}

    def ask(self, *questions: dict[str, Any]) -> str:
        response = httpx.post(f"{self.server.url}/api/v1/prompts", json=payload(*questions), headers=self.headers)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    def wait(self, prompt_id: str) -> concurrent.futures.Future[dict[str, Any]]:
        """``GET /prompts/{id}?wait=15``, parked on the server before this returns."""
        url = f"{self.server.url}/api/v1/prompts/{prompt_id}?wait=15"
        future = self.pool.submit(lambda: httpx.get(url, headers=self.headers, timeout=30).json())
        end = time.monotonic() + DEADLINE
        while httpx.get(f"{self.server.url}/healthz").json()["waiting"] < 1:
            assert not future.done(), future.result()
            assert time.monotonic() < end, "the wait never parked"
            time.sleep(0.02)
        return future


def woken(waiting: concurrent.futures.Future[dict[str, Any]], since: float) -> tuple[dict[str, Any], float]:
    result = waiting.result(timeout=DEADLINE)
    return result, time.monotonic() - since


# --- what the apps send -----------------------------------------------------------------------


def telegram_tap(update_id: int, data: str) -> dict[str, Any]:
    alice = {"id": CHAT, "is_bot": False, "first_name": "Alice", "username": "alice"}
    message = {"message_id": 500, "date": 1_700_000_000, "chat": {"id": CHAT, "type": "private"}, "text": "…"}
    query = {"id": f"cb-{update_id}", "from": alice, "chat_instance": "ci", "message": message, "data": data}
    return {"update_id": update_id, "callback_query": query}


def telegram_message(update_id: int, text: str) -> dict[str, Any]:
    alice = {"id": CHAT, "is_bot": False, "first_name": "Alice", "username": "alice"}
    chat = {"id": CHAT, "type": "private"}
    message = {"message_id": 9000 + update_id, "date": 1_700_000_000, "chat": chat, "from": alice, "text": text}
    return {"update_id": update_id, "message": message}


def telegram_button(card: Any, label: str) -> str:
    """The ``callback_data`` of the card's button ``label``."""
    rows = card.field("reply_markup")["inline_keyboard"]
    return next(str(b["callback_data"]) for row in rows for b in row if b["text"] == label)


def slack_tap(envelope_id: str, value: str) -> dict[str, Any]:
    tapped = {
        "type": "block_actions",
        "trigger_id": f"trig-{envelope_id}",
        "user": {"id": SLACK_USER, "username": "alice"},
        "channel": {"id": SLACK_DM},
        "actions": [{"action_id": value, "type": "button", "value": value}],
    }
    return {"envelope_id": envelope_id, "type": "interactive", "accepts_response_payload": False, "payload": tapped}


def slack_message(envelope_id: str, text: str) -> dict[str, Any]:
    event = slack_dm(text)
    callback = {"type": "event_callback", "event_id": f"Ev-{envelope_id}", "event": event}
    return {"envelope_id": envelope_id, "type": "events_api", "accepts_response_payload": False, "payload": callback}


def slack_button(card: Any, label: str) -> str:
    [actions] = [block for block in card.field("blocks") if block["type"] == "actions"]
    return next(str(b["value"]) for b in actions["elements"] if b["text"]["text"] == label)


REPLY = "Production\nDocs, Blog post"  # a reply answering QUESTION and EXTRAS, one line each
REPLIED = {"deploy_target": ["Production"], "extras": ["Docs", "Blog post"]}


# --- the embedded mode: the server fetches ----------------------------------------------------


@pytest.mark.parametrize("how", ["tap", "reply"])
def test_a_telegram_answer_the_server_fetched_wakes_the_parked_wait_within_a_second(
    telegram_without_url: WithoutURL,
    on_telegram,
    token,
    agent_pool,
    how,
):
    telegram: FakeTelegram = telegram_without_url.app
    agent = AgentAtServer(telegram_without_url.server, token, agent_pool)
    prompt_id = agent.ask(QUESTION) if how == "tap" else agent.ask(QUESTION, EXTRAS)
    [card] = telegram.wait_for("sendMessage")
    telegram.wait_for("getUpdates")  # the server polls by itself: nothing runs beside it
    waiting = agent.wait(prompt_id)

    since = time.monotonic()
    if how == "tap":
        telegram.deliver(telegram_tap(1, telegram_button(card, "Production")))
    else:
        telegram.deliver(telegram_message(1, REPLY))
    result, took = woken(waiting, since)

    assert (result["status"], result["surface"], result["resolved_by"]) == ("answered", "telegram", "alice")
    expected = {"deploy_target": ["Production"]} if how == "tap" else REPLIED
    assert result["answers"]["answers"] == expected
    assert took < AT_ONCE, f"the wait returned {took:.2f} s after the update was fetched"
    [edited] = telegram.wait_for("editMessageText")  # and the card lost its buttons
    assert "by alice on Telegram" in edited.body["text"] and "reply_markup" not in edited.body


def test_no_log_line_at_debug_holds_the_bot_token(server_env, fake_api: FakeAPI, on_telegram, token, agent_pool):
    telegram = FakeTelegram(fake_api, TOKEN)
    env = {**embedded(server_env), "TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_URL": fake_api.url}
    env |= {"LOG_LEVEL": "DEBUG", "TELEGRAM_WEBHOOK_SECRET": ""}
    server = DaphneServer(env)
    server.env["ASKUSER_PUBLIC_URL"] = server.url
    try:
        agent = AgentAtServer(server.start(), token, agent_pool)
        prompt_id = agent.ask(QUESTION)
        [card] = telegram.wait_for("sendMessage")
        waiting = agent.wait(prompt_id)
        telegram.deliver(telegram_tap(1, telegram_button(card, "Production")))
        result, _took = woken(waiting, time.monotonic())
        telegram.wait_for("editMessageText")
    finally:
        server.stop()
        telegram.close()

    assert result["status"] == "answered"
    lines = server.output().splitlines()
    assert any("getUpdates" in line for line in lines)  # the libraries' debug lines were written
    secret = TOKEN.partition(":")[2]
    assert [line for line in lines if secret in line] == []


@pytest.mark.parametrize("how", ["tap", "reply"])
def test_a_slack_answer_over_socket_mode_wakes_the_parked_wait_within_a_second(
    slack_without_url: WithoutURL,
    on_slack,
    token,
    agent_pool,
    how,
):
    slack: FakeSlack = slack_without_url.app
    agent = AgentAtServer(slack_without_url.server, token, agent_pool)
    prompt_id = agent.ask(QUESTION) if how == "tap" else agent.ask(QUESTION, EXTRAS)
    [card] = slack.wait_for("chat.postMessage")
    waiting = agent.wait(prompt_id)

    since = time.monotonic()
    if how == "tap":
        slack.socket.push(slack_tap("env-1", slack_button(card, "Production")))
    else:
        slack.socket.push(slack_message("env-1", REPLY))
    result, took = woken(waiting, since)

    assert slack.socket.ack("env-1") == {"envelope_id": "env-1"}
    assert (result["status"], result["surface"], result["resolved_by"]) == ("answered", "slack", "alice")
    expected = {"deploy_target": ["Production"]} if how == "tap" else REPLIED
    assert result["answers"]["answers"] == expected
    assert took < AT_ONCE, f"the wait returned {took:.2f} s after the event arrived"
    [edited] = slack.wait_for("chat.update")
    assert "by alice on Slack" in str(edited.field("blocks"))


@pytest.mark.parametrize("name", ["telegram", "slack"])
def test_chat_poll_refuses_in_the_embedded_mode_and_says_the_server_fetches_by_itself(
    server_env,
    fake_api: FakeAPI,
    name,
):
    # As a person runs it beside `make run`; at an API that would answer, were it asked.
    FakeTelegram(fake_api, TOKEN)
    slack = FakeSlack(fake_api)
    env = {**embedded(server_env), "TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_URL": fake_api.url}
    env |= {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SLACK_SIGNING_SECRET}
    env |= {"SLACK_APP_TOKEN": "xapp-test", "SLACK_API_URL": slack.api_url}
    command = [sys.executable, "manage.py", "chat_poll", name]
    try:
        ran = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=STARTS_WITHIN)
    finally:
        slack.close()

    label = {"telegram": "Telegram", "slack": "Slack"}[name]
    assert ran.returncode == 1
    assert f"Not needed without REDIS_URL: the server process fetches {label}'s events itself" in ran.stderr
    assert "'make run' with the app's variables set is all it takes" in ran.stderr
    assert fake_api.calls == []  # nothing fetched, nothing answered


# --- the fetching loops -----------------------------------------------------------------------


@pytest.fixture
def telegram_polls(settings, embedded_layer, fake_api: FakeAPI) -> Iterator[FakeTelegram]:
    settings.TELEGRAM_BOT_TOKEN, settings.TELEGRAM_WEBHOOK_SECRET = TOKEN, ""
    settings.TELEGRAM_API_URL = fake_api.url
    telegram = FakeTelegram(fake_api, TOKEN)
    yield telegram
    telegram.close()


@pytest.fixture
def slack_polls(settings, embedded_layer, fake_api: FakeAPI) -> Iterator[FakeSlack]:
    slack = FakeSlack(fake_api)
    settings.SLACK_BOT_TOKEN, settings.SLACK_SIGNING_SECRET = "xoxb-test", SLACK_SIGNING_SECRET
    settings.SLACK_APP_TOKEN, settings.SLACK_API_URL = "xapp-test", slack.api_url
    yield slack
    slack.close()


async def stopped_within(name: str, seconds: float) -> bool:
    task = polling.loops()[name].task
    assert task is not None
    task.cancel()
    done, _pending = await asyncio.wait([task], timeout=seconds)
    return bool(done)


async def test_the_telegram_loop_ends_at_once_when_its_server_stops(telegram_polls: FakeTelegram):
    polling.ensure_running()
    await asyncio.to_thread(telegram_polls.wait_for, "getUpdates")  # held: Telegram has nothing new

    assert await stopped_within("telegram", 2), "the loop outlived its cancellation"


async def test_the_slack_loop_ends_at_once_and_closes_its_socket(slack_polls: FakeSlack):
    polling.ensure_running()
    await asyncio.to_thread(slack_polls.wait_for, "apps.connections.open")
    socket = slack_polls.socket
    assert await asyncio.to_thread(socket.connected)

    assert await stopped_within("slack", 5), "the loop outlived its cancellation"
    assert socket.ended.wait(DEADLINE), "the socket was left open"


async def test_a_server_that_leaves_the_worker_its_loops_fetches_nothing_and_says_so(
    settings, scaled_layer, fake_api: FakeAPI, caplog
):
    settings.TELEGRAM_BOT_TOKEN, settings.TELEGRAM_WEBHOOK_SECRET = TOKEN, ""
    settings.TELEGRAM_API_URL = fake_api.url

    loops.start(worker=False)  # `serve --no-worker`, the scaled mode's default
    await loops.stop()

    assert fake_api.calls == []
    assert "Telegram has no public URL set up; its events are fetched by the worker" in caplog.text
    assert "run one manage.py worker beside the server processes" in caplog.text


async def test_an_app_with_a_public_url_is_not_fetched(settings, embedded_layer, fake_api: FakeAPI):
    settings.TELEGRAM_BOT_TOKEN, settings.TELEGRAM_WEBHOOK_SECRET = TOKEN, "s3cret"
    settings.TELEGRAM_API_URL = fake_api.url
    settings.SLACK_BOT_TOKEN, settings.SLACK_SIGNING_SECRET = "xoxb-test", SLACK_SIGNING_SECRET
    settings.SLACK_APP_TOKEN, settings.SLACK_API_URL = "", f"{fake_api.url}/api/"

    for name in ("telegram", "slack"):
        await polling.fetch(channels.installed_chat_apps()[name])

    assert fake_api.calls == []


async def test_a_slack_out_of_reach_is_said_in_a_sentence_and_tried_again_later(settings, embedded_layer, caplog):
    settings.SLACK_BOT_TOKEN, settings.SLACK_SIGNING_SECRET = "xoxb-test", SLACK_SIGNING_SECRET
    settings.SLACK_APP_TOKEN, settings.SLACK_API_URL = "xapp-test", f"http://127.0.0.1:{free_port()}/api/"

    await polling.fetch(channels.installed_chat_apps()["slack"])  # returns: its loop tries again after RECHECK

    [said] = [r for r in caplog.records if "Socket Mode" in r.getMessage()]
    assert said.levelname == "WARNING" and said.exc_info is None
    assert said.getMessage().startswith("Slack could not be reached for a Socket Mode connection: ")
    assert said.getMessage().endswith(f"; trying again in {polling.RECHECK:.0f} s.")


# --- the scaled mode: one chat_poll process ---------------------------------------------------


@pytest.mark.scaled
@pytest.mark.skipif(not SCALED, reason=SCALED_REASON)
def test_in_the_scaled_mode_chat_poll_fetches_and_its_tap_wakes_a_wait_on_a_server_process(
    server_env,
    fake_api: FakeAPI,
    on_telegram,
    token,
    agent_pool,
):
    telegram = FakeTelegram(fake_api, TOKEN)
    env = {**server_env, "TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_URL": fake_api.url}
    env |= {"ASKUSER_CHAT_RETRY_BASE": "0.05"}
    server = DaphneServer(env).start()
    poller: subprocess.Popen[bytes] | None = None
    try:
        agent = AgentAtServer(server, token, agent_pool)
        prompt_id = agent.ask(QUESTION)
        [card] = telegram.wait_for("sendMessage")  # the server's loops run…
        assert telegram.calls("getUpdates") == []  # …and none of them polls

        command = [sys.executable, "manage.py", "chat_poll", "telegram"]
        poller = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        telegram.wait_for("getUpdates")
        waiting = agent.wait(prompt_id)
        since = time.monotonic()
        telegram.deliver(telegram_tap(1, telegram_button(card, "Production")))
        result, took = woken(waiting, since)
    finally:
        if poller is not None:
            poller.terminate()
            poller.wait(DEADLINE)
        server.stop()
        telegram.close()

    assert (result["status"], result["surface"]) == ("answered", "telegram")
    assert took < AT_ONCE, f"the wait returned {took:.2f} s after chat_poll fetched the tap"
