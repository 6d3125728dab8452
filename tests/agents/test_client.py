"""The Python client against a real Daphne server: the whole wait, refusals, interruptions, a restart."""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import os
import re
import signal
import sys
import threading

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command

from askuser_app.domain import services
from askuser_app.models import Prompt
from askuser_client.client import (
    AskUserClient,
    AsyncAskUserClient,
    AuthError,
    ConflictError,
    NotFoundError,
    RefusedError,
    ValidationError,
    sign,
    verify_signature,
)
from tests.conftest import DEADLINE, QUESTION, auth, pending_prompt, until_async, until_sync, wait_until_parked
from tests.servers import DaphneServer

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def server(server_env):
    """One Daphne for the tests that do not restart theirs."""
    daphne = DaphneServer(server_env).start()
    yield daphne
    daphne.stop()


def test_ask_blocks_until_the_answer_and_returns_exactly_the_result(server, token, owner):
    # wait=1: in the embedded mode an answer given in this process wakes no wait in the server's.
    with AskUserClient(server.url, token, wait=1) as client, concurrent.futures.ThreadPoolExecutor() as pool:
        asking = pool.submit(client.ask, [QUESTION], session="support-42", timeout_seconds=120)
        until_sync(lambda: pending_prompt() is not None)
        services.answer(pending_prompt(), {"deploy_target": "Production"}, by=owner, surface="web")
        result = asking.result(timeout=DEADLINE)

    prompt = Prompt.objects.get()
    assert result == prompt.result
    assert {k: result[k] for k in ("status", "answers")} == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }
    assert prompt.timeout_seconds == 120


async def test_the_async_client_is_woken_by_a_cancel_on_the_server(server, token):
    async with AsyncAskUserClient(server.url, token, session="support-42") as client:
        asking = asyncio.ensure_future(client.ask({"questions": [QUESTION], "timeoutSeconds": 60}))
        prompt = await until_async(pending_prompt)
        await sync_to_async(wait_until_parked)(server)
        cancelled = await client.cancel(str(prompt.pk))
        result = await asyncio.wait_for(asking, DEADLINE)

    assert result == cancelled
    assert (result["status"], result["reason"]) == ("no_answer", "cancelled")


def test_refusals_raise_typed_errors_with_the_servers_words(server, token):
    one_option = {**QUESTION, "options": QUESTION["options"][:1]}
    with AskUserClient(server.url, token, session="support-42") as client:
        with pytest.raises(ValidationError) as invalid:
            client.ask([one_option, {**QUESTION, "id": "Bad Id"}])
        with pytest.raises(RefusedError) as refused:
            client.ask([QUESTION], run_kind="subagent")
        client.create([QUESTION])
        with pytest.raises(ConflictError) as busy:
            client.ask([QUESTION])
        with pytest.raises(NotFoundError):
            client.result("00000000-0000-0000-0000-000000000000")
    with AskUserClient(server.url, "au_not-a-token") as stranger, pytest.raises(AuthError):
        stranger.ask([QUESTION], session="support-42")

    assert invalid.value.errors == [
        {"path": "questions[0].options", "message": "must have 2 to 4 options (got 1)"},
        {
            "path": "questions[1].id",
            "message": "must be snake_case: a lowercase letter, then lowercase letters, digits or underscores",
        },
    ]
    assert "subagent" in str(refused.value) and not isinstance(refused.value, ConflictError)
    assert busy.value.code == "session_busy"
    assert Prompt.objects.count() == 1  # only the one create above


def test_a_retried_create_never_makes_a_second_prompt(server, token):
    drops = {"left": 2}

    def drop_the_first_responses(response: httpx.Response) -> None:
        if response.request.method == "POST" and drops["left"]:
            drops["left"] -= 1
            raise httpx.ReadError("connection dropped", request=response.request)

    with AskUserClient(server.url, token, event_hooks={"response": [drop_the_first_responses]}) as client:
        created = client.create([QUESTION], session="support-42")

    assert drops["left"] == 0
    assert list(Prompt.objects.values_list("pk", flat=True)) == [Prompt.objects.get(pk=created["id"]).pk]


async def test_cancelling_the_async_ask_cancels_the_prompt(server, token):
    async with AsyncAskUserClient(server.url, token) as client:
        asking = asyncio.ensure_future(client.ask([QUESTION], session="support-42"))
        prompt = await until_async(pending_prompt)
        await sync_to_async(wait_until_parked)(server)
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking

    await sync_to_async(prompt.refresh_from_db)()
    assert (prompt.status, prompt.reason) == ("no_answer", "cancelled")


@pytest.fixture
def ctrl_c_interrupts():
    """Ctrl-C raises KeyboardInterrupt, as in a program started from a terminal. A process started
    in the background by a non-interactive shell (``cmd &``, as a CI job may be) inherits Ctrl-C
    ignored, and Python then installs no handler of its own."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_during_a_wait_cancels_the_prompt(server, token, ctrl_c_interrupts):
    main = threading.get_ident()

    def press_ctrl_c() -> None:
        wait_until_parked(server)
        signal.pthread_kill(main, signal.SIGINT)

    interrupter = threading.Thread(target=press_ctrl_c)
    with AskUserClient(server.url, token) as client, pytest.raises(KeyboardInterrupt):
        interrupter.start()
        client.ask([QUESTION], session="support-42")
    interrupter.join()

    prompt = Prompt.objects.get()
    assert (prompt.status, prompt.reason) == ("no_answer", "cancelled")


def test_an_interruption_before_the_create_returned_still_cancels_the_prompt(server, token):

    def interrupt_once_created(response: httpx.Response) -> None:
        if response.request.method == "POST" and response.status_code == 201 and not seen:
            seen.append(response)
            raise KeyboardInterrupt

    seen: list[httpx.Response] = []
    hooks = {"response": [interrupt_once_created]}
    with AskUserClient(server.url, token, event_hooks=hooks) as client, pytest.raises(KeyboardInterrupt):
        client.ask([QUESTION], session="support-42")

    prompt = Prompt.objects.get()  # the replayed create found it: still only one
    assert (prompt.status, prompt.reason) == ("no_answer", "cancelled")


def test_a_killed_and_restarted_server_during_a_wait_still_yields_the_answer(start_server, token, owner):
    first = start_server()
    with AskUserClient(first.url, token, wait=30) as client, concurrent.futures.ThreadPoolExecutor() as pool:
        asking = pool.submit(client.ask, [QUESTION], session="support-42")
        wait_until_parked(first)
        first.kill()
        services.answer(pending_prompt(), {"deploy_target": "Production"}, by=owner, surface="web")
        start_server(port=first.port)
        result = asking.result(timeout=60)

    assert result["answers"] == {"answers": {"deploy_target": ["Production"]}}
    assert Prompt.objects.count() == 1


def test_a_restarted_server_wakes_the_client_with_an_answer_given_after_the_restart(start_server, token):
    first = start_server()
    with AskUserClient(first.url, token, wait=30) as client, concurrent.futures.ThreadPoolExecutor() as pool:
        asking = pool.submit(client.ask, [QUESTION], session="support-42")
        wait_until_parked(first)
        first.kill()
        second = start_server(port=first.port)
        wait_until_parked(second)  # the client came back and waits on the new process
        prompt_id = str(pending_prompt().pk)
        cancelled = httpx.post(f"{second.url}/api/v1/prompts/{prompt_id}/cancel", headers=auth(token))
        result = asking.result(timeout=DEADLINE)

    assert result == cancelled.json()


def test_ask_uses_the_clients_session_and_the_given_run(server, token):
    with AskUserClient(server.url, token, session="support-7") as client:
        created = client.create({"questions": [QUESTION]}, run_id="run-1", timeout_seconds=45)

    prompt = Prompt.objects.select_related("session", "run").get(pk=created["id"])
    assert (prompt.session.key, prompt.run.run_id, prompt.timeout_seconds) == ("support-7", "run-1", 45)
    assert created["timeoutSeconds"] == 45


def test_each_client_without_a_session_asks_in_one_of_its_own_titled_by_the_program(server, token):
    with AskUserClient(server.url, token) as one, AskUserClient(server.url, token) as two:
        first = one.create([QUESTION])
        second = two.create([QUESTION])  # at the same time: no "session already has a pending prompt"
        with pytest.raises(ConflictError) as busy:  # while a client's own session has a question pending
            one.create([QUESTION])

    sessions = [Prompt.objects.select_related("session").get(pk=c["id"]).session for c in (first, second)]
    assert first["session"] != second["session"]
    assert all(re.fullmatch(r"py-[0-9a-f]{12}", s.key) for s in sessions)
    # The program's name; "python" for one without (``python -c``, as a pytest-xdist worker runs).
    program = os.path.basename(sys.argv[0]) if sys.argv[0] not in ("", "-c", "-m") else "python"
    folder = os.path.basename(os.getcwd())
    assert [s.title for s in sessions] == [f"{program} · {folder}"] * 2
    assert busy.value.code == "session_busy" and first["session"] in busy.value.message


async def test_the_async_client_also_asks_in_a_session_of_its_own(server, token):
    async with AsyncAskUserClient(server.url, token) as one, AsyncAskUserClient(server.url, token) as two:
        created = [await one.create([QUESTION]), await two.create([QUESTION])]

    assert len({c["session"] for c in created}) == 2


def test_demo_agent_asks_in_a_session_of_its_own_titled_demo_agent(server, token, agent):
    out = io.StringIO()
    with concurrent.futures.ThreadPoolExecutor() as pool:
        running = pool.submit(call_command, "demo_agent", url=server.url, token=token, timeout=30, stdout=out)
        pending = Prompt.objects.filter(status="pending").select_related("session")
        for _ in range(3):  # cancel each of its three prompts as it comes
            until_sync(pending.exists)
            prompt = pending.get()
            httpx.post(f"{server.url}/api/v1/prompts/{prompt.pk}/cancel", headers=auth(token))
        running.result(timeout=DEADLINE)

    assert re.fullmatch(r"py-[0-9a-f]{12}", prompt.session.key)
    assert prompt.session.title == f"demo_agent · {os.path.basename(os.getcwd())}"
    assert f"/s/{prompt.session.key}/" in out.getvalue()


def test_a_given_session_keeps_its_title_unless_a_title_is_given(server, token):
    with AskUserClient(server.url, token, session="support-7") as client:
        client.create([QUESTION], run_id="run-1")
        untitled = Prompt.objects.select_related("session").get().session.title
        services.cancel(Prompt.objects.get(), agent=Prompt.objects.get().agent)
        client.create([QUESTION], run_id="run-2", title="nightly-report · ops")

    assert untitled == ""
    assert Prompt.objects.select_related("session").first().session.title == "nightly-report · ops"


def test_a_signature_verifies_only_the_exact_body_with_the_right_secret_in_time():
    body = b'{"status":"no_answer","id":"4f1c"}'
    header = sign("whsec_1", body, timestamp=1_000_000)

    assert verify_signature("whsec_1", body, header, now=1_000_000 + 299)
    assert not verify_signature("whsec_1", body + b" ", header, now=1_000_000)
    assert not verify_signature("whsec_2", body, header, now=1_000_000)
    assert not verify_signature("whsec_1", body, header, now=1_000_000 + 301)  # a replay
    assert not verify_signature("whsec_1", body, "v1=abc", now=1_000_000)
    assert not verify_signature("whsec_1", body, None)


@pytest.mark.parametrize(
    "header",
    ["t=²,v1=00", "t=1000000,v1=é", "t=1000000,v1=\ud800", "t=١٠٠٠٠٠٠,v1=00", "t=9" + "9" * 5000 + ",v1=00", "t=,v1="],
)
def test_a_malformed_signature_header_is_refused_not_raised(header):
    assert verify_signature("whsec_1", b"{}", header, now=1_000_000) is False


def test_a_signature_header_given_as_bytes_verifies():
    body = b'{"status":"no_answer","id":"4f1c"}'

    assert verify_signature("whsec_1", body, sign("whsec_1", body, timestamp=1_000_000).encode(), now=1_000_000)
