"""A chat app without a public URL, in a real browser: ``make run`` with the app's variables, a
session's page open, and the person answers in Telegram or Slack. The server fetched the
answer itself, so the open panel closes without a reload and the agent's wait returns."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from askuser_app.delivery.channels.chats import core
from askuser_app.domain import services
from tests.browsers import MARKS, WAIT_MS, Human, playwright_api
from tests.chatfake import CHAT, SLACK_DM, SLACK_USER, WithoutURL, slack_dm
from tests.conftest import EXTRAS, QUESTION, payload

expect = playwright_api.expect

pytestmark = MARKS

SESSION = "support-42"


@pytest.fixture
def waits() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        yield pool


@dataclass
class Asked:
    """The person's page of the session with the prompt's panel open, and the agent's parked wait."""

    person: Human
    page: Any
    waiting: concurrent.futures.Future[dict[str, Any]]

    def closed_live(self, words: str) -> None:
        """The panel closed and the answer's summary shown, in the page as it was first opened."""
        expect(self.page.locator("#prompt-panel")).to_be_hidden(timeout=WAIT_MS)
        expect(self.page.locator("#timeline-items")).to_contain_text(words, timeout=WAIT_MS)
        assert self.page.evaluate("window.neverReloaded") is True
        self.person.close()
        assert self.person.errors == []

    def result(self) -> dict[str, Any]:
        return self.waiting.result(timeout=WAIT_MS / 1000)


def asked(chromium: Any, chat: WithoutURL, owner, agent, token, pool, *questions) -> Asked:
    services.post_agent_message(agent, SESSION, "Hi! I'm getting release 2.4 ready.")
    person = Human(chromium, chat.server, owner)
    page = person.open(SESSION)
    page.evaluate("window.neverReloaded = true")  # gone with any reload
    headers = {"Authorization": f"Bearer {token}"}
    created = httpx.post(f"{chat.server.url}/api/v1/prompts", json=payload(*questions), headers=headers)
    assert created.status_code == 201, created.text
    url = f"{chat.server.url}/api/v1/prompts/{created.json()['id']}?wait=15"
    waiting = pool.submit(lambda: httpx.get(url, headers=headers, timeout=30).json())
    expect(page.locator("#prompt-panel")).to_be_visible(timeout=WAIT_MS)
    return Asked(person, page, waiting)


def test_a_tap_in_telegram_closes_the_open_panel_without_a_reload(
    chromium,
    telegram_without_url: WithoutURL,
    owner,
    agent,
    token,
    waits,
):
    core.link_by_hand(owner, "telegram", str(CHAT), chat_id=str(CHAT), handle="@alice")
    question = asked(chromium, telegram_without_url, owner, agent, token, waits, QUESTION)
    telegram = telegram_without_url.app
    [card] = telegram.wait_for("sendMessage")
    rows = card.field("reply_markup")["inline_keyboard"]
    production = next(b["callback_data"] for row in rows for b in row if b["text"] == "Production")
    alice = {"id": CHAT, "is_bot": False, "first_name": "Alice", "username": "alice"}
    message = {"message_id": 500, "date": 1_700_000_000, "chat": {"id": CHAT, "type": "private"}, "text": "…"}
    query = {"id": "cb-1", "from": alice, "chat_instance": "ci", "message": message, "data": production}

    telegram.deliver({"update_id": 1, "callback_query": query})

    question.closed_live("on Telegram")
    result = question.result()
    assert (result["status"], result["answers"]["answers"]) == ("answered", {"deploy_target": ["Production"]})


def test_a_reply_in_slack_closes_the_open_panel_without_a_reload(
    chromium,
    slack_without_url: WithoutURL,
    owner,
    agent,
    token,
    waits,
):
    core.link_by_hand(owner, "slack", SLACK_USER, chat_id=SLACK_DM, handle="alice")
    question = asked(chromium, slack_without_url, owner, agent, token, waits, QUESTION, EXTRAS)
    slack = slack_without_url.app
    slack.wait_for("chat.postMessage")
    text = "Production\nDocs, Blog post"
    event = slack_dm(text)
    callback = {"type": "event_callback", "event_id": "Ev-1", "event": event}

    slack.socket.push({"envelope_id": "env-1", "type": "events_api", "payload": callback})

    question.closed_live("on Slack")
    result = question.result()
    assert result["answers"]["answers"] == {"deploy_target": ["Production"], "extras": ["Docs", "Blog post"]}
