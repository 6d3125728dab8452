"""More time: the person moves a pending prompt's deadline, and everyone follows it.

The deadline moves in ``services.extend`` (a compare-and-set with its trail
row); the panel's form and its htmx response, every open tab, the agent's
read and long-poll, the Python client, the admin and the webhook owner all
see the new deadline. The races with the expiry are in tests/domain/test_races.py.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from askuser_app.domain import contract, services
from askuser_app.models import Message, Prompt, PromptEvent, WebhookDelivery
from askuser_app.runtime.asyncdb import database_call
from askuser_app.web import ui
from askuser_client.client import AskUserClient, extension_between
from tests.conftest import QUESTION, connect, parked, payload, start_wait, until_sync, wait_until_parked
from tests.servers import DaphneServer
from tests.webhookfake import WEBHOOK_ENV, Receiver, finished

DEADLINE = 20
STEP = timedelta(seconds=900)


def ask(agent, **fields) -> Prompt:
    return services.ask(agent, contract.parse_create(payload(**fields))).prompt


def stored(prompt: Prompt) -> Prompt:
    return Prompt.objects.get(pk=prompt.pk)


def deadline_in(prompt: Prompt, seconds: float) -> datetime:
    """Set the prompt's deadline ``seconds`` from now (a short question, for the test's sake)."""
    at = timezone.now() + timedelta(seconds=seconds)
    Prompt.objects.filter(pk=prompt.pk).update(expires_at=at)
    prompt.expires_at = at
    return at


def passed(moment: datetime):
    return lambda: timezone.now() > moment


@pytest.fixture
def browser(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def extend_url(prompt: Prompt) -> str:
    return f"/s/{prompt.session.key}/prompts/{prompt.pk}/extend"


# --- the state change ------------------------------------------------------------------------


@pytest.mark.django_db
def test_more_time_moves_the_deadline_and_the_trail_says_who_where_and_from_when_to_when(agent, owner):
    prompt = ask(agent)
    old = prompt.expires_at

    extended = services.extend(prompt, by=owner, surface="web")

    now = stored(prompt)
    assert (now.expires_at, now.extended, now.status) == (old + STEP, 1, "pending")
    assert (extended.previous, extended.added_seconds) == (old, 900)
    event = now.events.get(kind=PromptEvent.Kind.EXTENDED)
    assert (event.actor, event.surface) == ("alice", "web")
    assert event.detail["previous"] == contract.iso(old)
    assert event.detail["deadline"] == contract.iso(old + STEP)


@pytest.mark.django_db
def test_three_extensions_are_the_most_and_a_fourth_changes_nothing(agent, owner):
    prompt = ask(agent)
    for _ in range(3):
        assert services.can_extend(stored(prompt))
        services.extend(stored(prompt), by=owner, surface="web")
    before = stored(prompt)

    with pytest.raises(services.Refused) as refused:
        services.extend(before, by=owner, surface="web")

    assert refused.value.code == "extend_limit" and "No more time" in refused.value.message
    after = stored(prompt)
    assert (after.expires_at, after.extended) == (before.expires_at, 3) and not services.can_extend(after)
    assert after.events.filter(kind=PromptEvent.Kind.EXTENDED).count() == 3


@pytest.mark.django_db
def test_no_extension_reaches_past_two_hours_after_the_question_was_asked(agent, owner, settings):
    settings.ASKUSER_EXTEND_SECONDS = 50 * 60
    prompt = ask(agent, timeoutSeconds=3600)  # due an hour after it was asked
    cap = prompt.created_at + timedelta(hours=2)

    services.extend(prompt, by=owner, surface="web")  # 1 h 50 min
    assert services.extension_seconds(stored(prompt)) == 600  # the last ten minutes are all that is left
    last = services.extend(stored(prompt), by=owner, surface="web")

    assert (stored(prompt).expires_at, last.added_seconds) == (cap, 600)
    assert not services.can_extend(stored(prompt))
    with pytest.raises(services.Refused):
        services.extend(stored(prompt), by=owner, surface="web")


@pytest.mark.django_db
def test_a_resolved_prompt_is_not_extended_and_the_refusal_says_what_happened(agent, owner):
    prompt = ask(agent)
    services.answer(prompt, {"deploy_target": "Production"}, by=owner, surface="web")

    with pytest.raises(services.AlreadyResolved) as lost:
        services.extend(Prompt.objects.get(pk=prompt.pk), by=owner, surface="web")

    assert "answered" in lost.value.for_person.lower()
    assert not stored(prompt).events.filter(kind=PromptEvent.Kind.EXTENDED).exists()


@pytest.mark.django_db
def test_more_time_asked_after_the_deadline_finds_the_prompt_expired(agent, owner):
    prompt = ask(agent)
    deadline_in(prompt, -1)

    with pytest.raises(services.AlreadyResolved) as lost:
        services.extend(prompt, by=owner, surface="web")

    assert (stored(prompt).status, stored(prompt).reason, stored(prompt).extended) == ("no_answer", "expired", 0)
    assert "expired" in lost.value.for_person.lower()


@pytest.mark.django_db
def test_after_an_extension_the_old_deadline_expires_nothing(agent, owner):
    prompt = ask(agent)
    old = deadline_in(prompt, 0.3)
    seen_before = Prompt.objects.get(pk=prompt.pk)  # a reader that still holds the old deadline
    services.extend(prompt, by=owner, surface="web")

    until_sync(passed(old))

    assert services.expire_due() == 0
    with pytest.raises(services.Conflict) as refused:
        services.expire(seen_before)  # its stale deadline says overdue; the stored one does not
    assert not isinstance(refused.value, services.AlreadyResolved)
    assert services.result_expiring_if_overdue(seen_before)["status"] == "pending"
    assert stored(prompt).status == "pending"


# --- the agent's view --------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_agent_reads_the_new_deadline_and_the_count(api, owner):
    created = api.ask().json()
    assert created["extended"] == 0
    prompt = Prompt.objects.get(pk=created["id"])

    services.extend(prompt, by=owner, surface="web")

    body = api.get(f"/prompts/{prompt.pk}").json()
    assert body == {
        "status": "pending",
        "id": str(prompt.pk),
        "expires_at": contract.iso(stored(prompt).expires_at),
        "extended": 1,
    }
    assert datetime.fromisoformat(body["expires_at"]) - datetime.fromisoformat(created["expires_at"]) == STEP


@pytest.mark.django_db
def test_the_openapi_document_describes_expires_at_and_extended(client):
    schemas = client.get("/api/v1/openapi.json").json()["components"]["schemas"]

    for name in ("ResultOut", "CreatedOut"):
        properties = schemas[name]["properties"]
        assert "more time" in properties["extended"]["description"]
    assert "more time" in schemas["ResultOut"]["properties"]["expires_at"]["description"]


@pytest.mark.django_db(transaction=True)
async def test_a_wait_bounded_by_the_old_deadline_waits_on_to_the_answer(asked, token, owner):
    old = await database_call(deadline_in)(asked, 1.5)
    waiting = start_wait(token, asked, wait=30)
    await until_async_true(parked(asked))

    await database_call(services.extend)(asked, by=owner, surface="web")
    await until_async_true(passed(old + timedelta(seconds=0.5)))
    assert not waiting.done()  # the old deadline passed: no expired came back
    await database_call(services.answer)(asked, {"deploy_target": "Production"}, by=owner, surface="web")

    body = (await asyncio.wait_for(waiting, DEADLINE)).json()
    assert (body["status"], body["answers"]) == ("answered", {"answers": {"deploy_target": ["Production"]}})


@pytest.mark.django_db(transaction=True)
async def test_a_wait_that_ends_after_an_extension_returns_the_new_deadline(asked, token, owner):
    waiting = start_wait(token, asked, wait=0.5)
    await until_async_true(parked(asked))

    await database_call(services.extend)(asked, by=owner, surface="web")

    body = (await asyncio.wait_for(waiting, DEADLINE)).json()
    now = await database_call(stored)(asked)
    assert body == {"status": "pending", "id": str(asked.pk), "expires_at": contract.iso(now.expires_at), "extended": 1}


async def until_async_true(condition, within: float = DEADLINE) -> None:
    end = time.monotonic() + within
    while not condition():
        assert time.monotonic() < end, "condition not reached in time"
        await asyncio.sleep(0.02)


def test_an_extension_between_two_pending_states_says_how_much_later():
    seen = {"id": "p", "expires_at": "2030-01-01T10:00:00.000Z", "extended": 0}
    later = {"id": "p", "expires_at": "2030-01-01T10:15:00.000Z", "extended": 1}

    extension = extension_between(seen, later)

    assert (extension.added_seconds, extension.added_minutes, extension.extended) == (900, 15, 1)
    assert extension_between(later, later) is None


# --- the panel -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_panel_offers_more_time_until_none_is_left(agent, browser):
    prompt = ask(agent)
    assert "More time (+15 min)" in browser.get("/s/support-42/").content.decode()

    for _ in range(3):
        assert browser.post(extend_url(prompt)).status_code == 302

    html = browser.get("/s/support-42/").content.decode()
    assert stored(prompt).extended == 3
    assert "More time" not in html and "Deadline moved 3 times" in html
    assert f'data-expires-at="{stored(prompt).expires_at.isoformat()}"' in html


@pytest.mark.django_db
def test_without_javascript_a_refused_extension_is_told_on_the_page_and_changes_nothing(agent, owner, browser):
    prompt = ask(agent)
    for _ in range(3):
        services.extend(stored(prompt), by=owner, surface="web")
    before = stored(prompt)

    response = browser.post(extend_url(prompt), follow=True)

    assert "No more time can be added" in response.content.decode()
    assert (stored(prompt).expires_at, stored(prompt).extended) == (before.expires_at, 3)


@pytest.mark.django_db
def test_an_htmx_extension_swaps_in_the_new_countdown_and_leaves_the_form_as_it_is(agent, browser):
    prompt = ask(agent)

    response = browser.post(extend_url(prompt), headers={"HX-Request": "true"})

    html = response.content.decode()
    new = stored(prompt).expires_at
    assert response.status_code == 200
    assert f'id="countdown-{prompt.pk}"' in html and f'data-expires-at="{new.isoformat()}"' in html
    assert f'id="more-time-{prompt.pk}"' in html and "Deadline moved once" in html
    assert 'id="prompt-panel"' not in html  # the choices begun in the form stay
    assert 'id="panel-error"' in html  # and an earlier refusal's notice is cleared


@pytest.mark.django_db
def test_an_htmx_extension_past_the_limit_says_so_in_the_panel(agent, owner, browser):
    prompt = ask(agent)
    for _ in range(3):
        services.extend(stored(prompt), by=owner, surface="web")

    html = browser.post(extend_url(prompt), headers={"HX-Request": "true"}).content.decode()

    assert 'id="panel-error"' in html and "No more time can be added" in html
    assert "More time (+" not in html


@pytest.mark.django_db
def test_more_time_on_a_prompt_answered_elsewhere_closes_the_panel_and_says_so(agent, owner, browser):
    prompt = ask(agent)
    services.answer(stored(prompt), {"deploy_target": "Production"}, by=owner, surface="text")

    html = browser.post(extend_url(prompt), headers={"HX-Request": "true"}).content.decode()

    assert '<section id="prompt-panel" class="panel" hidden' in html
    assert 'id="notice"' in html and "answered" in html.lower()
    assert stored(prompt).extended == 0


@pytest.mark.django_db(transaction=True)
async def test_every_open_tab_hears_the_new_deadline_without_losing_its_form(agent, owner):
    await database_call(services.post_agent_message)(agent, "support-42", "Hello")
    await database_call(Message.objects.update)(created_at=timezone.now() - timedelta(hours=1))
    prompt = await database_call(ask)(agent)
    tabs = []
    for _ in range(2):
        tab = await connect(f"/ws/sessions/support-42/?since={ui.timeline_cursor()}&shown={prompt.pk}", owner)
        await tab.connect(timeout=DEADLINE)
        tabs.append(tab)

    await database_call(services.extend)(prompt, by=owner, surface="web")

    new = (await database_call(stored)(prompt)).expires_at
    for tab in tabs:
        html = await tab.receive_from(timeout=DEADLINE)
        assert f'id="countdown-{prompt.pk}"' in html and f'data-expires-at="{new.isoformat()}"' in html
        assert 'id="prompt-panel"' not in html
        await tab.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_tab_that_reconnects_after_missing_more_time_gets_the_new_countdown(agent, owner):
    await database_call(services.post_agent_message)(agent, "support-42", "Hello")
    await database_call(Message.objects.update)(created_at=timezone.now() - timedelta(hours=1))
    prompt = await database_call(ask)(agent)
    cursor = await database_call(ui.timeline_cursor)()
    await database_call(services.extend)(prompt, by=owner, surface="web")  # while the tab was away
    path = f"/ws/sessions/support-42/?since={cursor}&shown={prompt.pk}&extended="

    behind = await connect(path + "0", owner)
    await behind.connect(timeout=DEADLINE)
    html = await behind.receive_from(timeout=DEADLINE)
    new = (await database_call(stored)(prompt)).expires_at
    assert f'data-expires-at="{new.isoformat()}"' in html and 'id="prompt-panel"' not in html
    await behind.disconnect()

    current = await connect(path + "1", owner)  # a tab that heard it is sent nothing
    await current.connect(timeout=DEADLINE)
    assert await current.receive_nothing(timeout=0.3)
    await current.disconnect()


# --- the admin -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_staff_see_the_extension_in_the_list_and_the_trail(agent, owner, staff):
    prompt = ask(agent)
    old = prompt.expires_at
    services.extend(prompt, by=owner, surface="web")
    client = Client()
    client.force_login(staff)

    listing = client.get("/admin/askuser_app/prompt/").content.decode()
    detail = client.get(f"/admin/askuser_app/prompt/{prompt.pk}/change/").content.decode()

    assert "1×" in listing and "1×" in detail
    trail = detail[detail.index("Event trail") :]
    assert "askuser-event-extended" in trail and "alice" in trail and "web" in trail
    assert f"deadline {contract.iso(old)} → {contract.iso(old + STEP)}" in trail


# --- the webhook owner and the Python client, against a real server -------------------------------


@pytest.fixture
def webhook_server(server_env):
    daphne = DaphneServer({**server_env, **WEBHOOK_ENV}).start()
    yield daphne
    daphne.stop()


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_the_webhook_owner_gets_the_real_outcome_not_an_expiry_at_the_old_deadline(webhook_server, token, owner):
    receiver = Receiver()
    try:
        with AskUserClient(webhook_server.url, token) as client:
            prompt_id = client.create([QUESTION], session="support-42", callback_url=receiver.url)["id"]
        prompt = Prompt.objects.get(pk=prompt_id)
        old = deadline_in(prompt, 2)
        services.extend(prompt, by=owner, surface="web")

        # The server's deadline loop reads the deadlines at least every five seconds:
        # it has had a turn after the old one.
        until_sync(passed(old + timedelta(seconds=6)), within=DEADLINE)
        assert stored(prompt).status == "pending" and not WebhookDelivery.objects.filter(prompt_id=prompt_id).exists()
        answered = services.answer(stored(prompt), {"deploy_target": "Production"}, by=owner, surface="web")
        until_sync(finished(prompt_id))
    finally:
        receiver.close()

    [(_, body)] = receiver.requests
    assert json.loads(body) == answered.result and json.loads(body)["status"] == "answered"


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_the_client_keeps_retrying_past_the_old_deadline_when_the_person_asked_for_more_time(
    start_server, token, owner
):
    first = start_server()
    client = AskUserClient(first.url, token, wait=2, grace=1)
    extensions = []
    with client, concurrent.futures.ThreadPoolExecutor() as pool:
        asking = pool.submit(
            client.ask, [QUESTION], session="support-42", timeout_seconds=30, on_extended=extensions.append
        )
        wait_until_parked(first)
        prompt = Prompt.objects.get(session__key="support-42", status="pending")
        services.extend(prompt, by=owner, surface="web")
        until_sync(lambda: len(extensions) == 1)
        first.kill()
        # Down past the old deadline and its grace: a client bound to it would give up now.
        until_sync(passed(prompt.created_at + timedelta(seconds=33)), within=60)
        assert not asking.done()
        services.answer(stored(prompt), {"deploy_target": "Production"}, by=owner, surface="web")
        start_server(port=first.port)
        result = asking.result(timeout=60)

    assert result["answers"] == {"answers": {"deploy_target": ["Production"]}}
    assert (extensions[0].extended, extensions[0].added_minutes) == (1, 15)
