"""The ask_user MCP tool, driven by the SDK's own client over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator

import httpx
import httpx2
import pytest
from asgiref.sync import sync_to_async
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from askuser_app.agents import mcp_server
from askuser_app.domain import contract, services
from askuser_app.models import Prompt
from tests.conftest import DEADLINE, QUESTION, asgi_request, auth, log_in, pending_prompt, until, until_async
from tests.servers import ROOT, DaphneServer

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

TRANSPORTS = ["stdio", "http", "http-legacy"]
CSRF = "mcpcsrftokenmcpcsrftokenmcpcsrf1"  # an unmasked 32-character secret


@pytest.fixture(scope="module")
def server(server_env):
    """One Daphne for the module, with quick progress notifications."""
    daphne = DaphneServer({**server_env, "ASKUSER_MCP_PROGRESS_EVERY": "0.2"}).start()
    yield daphne
    daphne.stop()


@contextlib.asynccontextmanager
async def mcp_client(
    transport: str,
    server: DaphneServer,
    token: str,
    tmp_path,
    session: str | None = "support-42",
    client_info: Implementation | None = None,
) -> AsyncIterator:
    """An MCP client; ``session=None`` configures none, as the README's snippets do."""
    if transport == "stdio":
        # --wait 1: an answer given in this test process wakes no wait in the server's.
        args = ["manage.py", "mcp_stdio", "--token", token, "--url", server.url]
        params = StdioServerParameters(
            command=sys.executable,
            args=[*args, *(["--session", session] if session else []), "--progress-every", "0.2", "--wait", "1"],
            cwd=ROOT,
            env={"ASKUSER_DATA_DIR": str(tmp_path)},
        )
        async with Client(params, client_info=client_info) as client:
            yield client
        return
    http = httpx2.AsyncClient(headers=auth(token), timeout=httpx2.Timeout(30, read=300))
    query = f"?session={session}" if session else ""
    endpoint = streamable_http_client(f"{server.url}/mcp{query}", http_client=http)
    mode = "legacy" if transport == "http-legacy" else "auto"
    async with http, Client(endpoint, mode=mode, client_info=client_info) as client:
        yield client


class Progress(list):
    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.append((progress, message))


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_ask_user_is_listed_exactly_as_the_api_defines_it(transport, server, token, tmp_path):
    async with mcp_client(transport, server, token, tmp_path) as client:
        tools = (await client.list_tools()).tools

    definition = contract.tool_definition()
    assert [(t.name, t.description, t.input_schema) for t in tools] == [
        (definition["name"], definition["description"], definition["input_schema"])
    ]


async def test_a_stdio_call_blocks_until_the_answer_and_reports_progress_meanwhile(server, token, owner, tmp_path):
    progress = Progress()
    async with mcp_client("stdio", server, token, tmp_path) as client:
        call = asyncio.ensure_future(
            client.call_tool("ask_user", {"questions": [QUESTION]}, progress_callback=progress)
        )
        prompt = await until_async(pending_prompt)
        await until(lambda: len(progress) >= 2, within=DEADLINE)
        assert not call.done()
        await sync_to_async(services.answer)(prompt, {"deploy_target": "Production"}, by=owner, surface="web")
        result = await asyncio.wait_for(call, DEADLINE)

    await sync_to_async(prompt.refresh_from_db)()
    assert not result.is_error
    assert result.structured_content == prompt.result == json.loads(result.content[0].text)
    assert result.structured_content["answers"] == {"answers": {"deploy_target": ["Production"]}}
    assert [p for p, _ in progress] == sorted(p for p, _ in progress)
    assert "Waiting for the user's answer" in progress[0][1]


async def test_when_the_person_asks_for_more_time_the_tool_says_so_in_its_progress(server, token, owner, tmp_path):
    progress = Progress()
    async with mcp_client("stdio", server, token, tmp_path) as client:
        call = asyncio.ensure_future(
            client.call_tool("ask_user", {"questions": [QUESTION]}, progress_callback=progress)
        )
        prompt = await until_async(pending_prompt)
        await until(lambda: len(progress) >= 1, within=DEADLINE)
        await sync_to_async(services.extend)(prompt, by=owner, surface="web")
        told = "the user asked for more time: 15 more minutes"
        await until(lambda: any(message == told for _, message in progress), within=DEADLINE)
        assert not call.done()
        await sync_to_async(services.answer)(prompt, {"deploy_target": "Production"}, by=owner, surface="web")
        result = await asyncio.wait_for(call, DEADLINE)

    assert result.structured_content["answers"] == {"answers": {"deploy_target": ["Production"]}}
    assert [message for _, message in progress].count(told) == 1
    assert [p for p, _ in progress] == sorted(p for p, _ in progress)


@pytest.mark.parametrize("transport", ["http", "http-legacy"])
async def test_an_http_call_blocks_until_resolved_and_reports_progress_meanwhile(transport, server, token, tmp_path):
    progress = Progress()
    async with mcp_client(transport, server, token, tmp_path, session="support-9") as client:
        call = asyncio.ensure_future(
            client.call_tool("ask_user", {"questions": [QUESTION], "timeoutSeconds": 60}, progress_callback=progress)
        )
        prompt = await until_async(lambda: pending_prompt("support-9"))
        await until(lambda: len(progress) >= 2, within=DEADLINE)
        assert not call.done()
        async with httpx.AsyncClient(headers=auth(token)) as http:
            cancelled = await http.post(f"{server.url}/api/v1/prompts/{prompt.pk}/cancel")
        result = await asyncio.wait_for(call, DEADLINE)

    assert not result.is_error
    assert result.structured_content == cancelled.json() == json.loads(result.content[0].text)
    assert prompt.timeout_seconds == 60


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_cancelling_the_tool_call_cancels_the_prompt(transport, server, token, tmp_path):
    async with mcp_client(transport, server, token, tmp_path) as client:
        call = asyncio.ensure_future(client.call_tool("ask_user", {"questions": [QUESTION]}))
        prompt = await until_async(pending_prompt)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

        async def still_pending() -> bool:
            await sync_to_async(prompt.refresh_from_db)()
            return prompt.is_pending

        end = asyncio.get_running_loop().time() + DEADLINE
        while await still_pending():
            assert asyncio.get_running_loop().time() < end, "the prompt was left pending"
            await asyncio.sleep(0.05)

    assert (prompt.status, prompt.reason) == ("no_answer", "cancelled")


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_bad_arguments_come_back_as_a_tool_error_naming_each_field(transport, server, token, tmp_path):
    one_option = {**QUESTION, "options": QUESTION["options"][:1]}
    async with mcp_client(transport, server, token, tmp_path) as client:
        invalid = await client.call_tool("ask_user", {"questions": [one_option], "timeoutSeconds": "soon"})
        smuggled = await client.call_tool("ask_user", {"questions": [QUESTION], "session": "someone-else"})

    assert invalid.is_error and smuggled.is_error
    assert invalid.content[0].text.splitlines()[1:] == [
        "- questions[0].options: must have 2 to 4 options (got 1)",
        "- timeoutSeconds: must be an integer",
    ]
    assert "session: is not a known field" in smuggled.content[0].text
    assert not await sync_to_async(Prompt.objects.exists)()


async def test_the_http_endpoint_refuses_requests_without_a_valid_token(server, token):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx.AsyncClient() as http:
        missing = await http.post(f"{server.url}/mcp", json=body)
        unknown = await http.post(f"{server.url}/mcp", json=body, headers=auth("au_unknown"))

    assert (missing.status_code, missing.json()["error"]) == (401, "unauthorized")
    assert (unknown.status_code, unknown.json()["detail"]) == (401, "Unknown agent token.")
    assert missing.headers["WWW-Authenticate"] == "Bearer"


# --- pages of other origins ------------------------------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


async def initialize(token: str, origin: str | None) -> httpx.Response:
    """An MCP ``initialize`` through the whole ASGI application, as a browser's page (or a program) sends it."""
    headers = {**auth(token), "Accept": "application/json, text/event-stream"}
    return await asgi_request("POST", "/mcp", headers=headers | ({"Origin": origin} if origin else {}), json=INITIALIZE)


@pytest.mark.parametrize("origin", ["http://evil.example", "http://testserver:8080", "https://testserver", "null"])
async def test_a_page_of_another_origin_is_refused(token, origin):
    response = await initialize(token, origin)

    assert response.status_code == 403
    assert response.json() == {
        "error": "forbidden_origin",
        "detail": "/mcp takes requests from programs and from this server's own pages only: this Origin is "
        "neither (CSRF_TRUSTED_ORIGINS lists others to accept).",
    }


@pytest.mark.parametrize("origin", [None, "http://testserver", "https://agents.example"])
async def test_a_program_this_servers_pages_and_trusted_origins_may_call_it(token, settings, origin, served_loops):
    settings.CSRF_TRUSTED_ORIGINS = ["https://agents.example"]

    response = await initialize(token, origin)

    assert response.status_code == 200 and '"serverInfo"' in response.text


async def test_the_session_manager_runs_once_the_loops_start_before_any_mcp_request(served_loops):
    # manage.py serve starts it with the loops once it listens (loops.start_serving): the first
    # /mcp request finds it running instead of starting it, so no request pays for the start.
    running = mcp_server.endpoint().managers.get(asyncio.get_running_loop())

    assert running is not None, "no session manager runs in this event loop before a request"
    await asyncio.wait_for(running.ready.wait(), DEADLINE)  # inside the SDK's run()
    assert not running.task.done()


# --- a session per conversation --------------------------------------------------------------

CLAUDE = Implementation(name="claude-code", version="1.2")
CURSOR = Implementation(name="cursor", version="0.9")


@contextlib.asynccontextmanager
async def person(server: DaphneServer, user) -> AsyncIterator[httpx.AsyncClient]:
    """The user, logged in to the server's Control UI, answering through its form."""

    cookies = {"sessionid": await sync_to_async(log_in)(user), "csrftoken": CSRF}
    async with httpx.AsyncClient(base_url=server.url, cookies=cookies, headers={"X-CSRFToken": CSRF}) as http:
        yield http


async def answer(http: httpx.AsyncClient, prompt: Prompt, option: int) -> None:
    key = await sync_to_async(lambda: prompt.session.key)()
    response = await http.post(f"/s/{key}/prompts/{prompt.pk}/answer", data={"q-deploy_target": str(option)})
    assert response.status_code in (200, 302), response.text


def pending_prompts(count: int) -> list[Prompt] | None:
    prompts = list(Prompt.objects.filter(status="pending").select_related("session").order_by("created_at"))
    return prompts if len(prompts) == count else None


async def ask_twice_at_once(one, two) -> tuple[list, dict[str, Prompt]]:
    """Both clients call ask_user at once; their pending prompts by session title."""
    calls = [asyncio.ensure_future(c.call_tool("ask_user", {"questions": [QUESTION]})) for c in (one, two)]
    prompts = await until_async(lambda: pending_prompts(2))
    assert not any(call.done() for call in calls), [call.result() for call in calls if call.done()]
    return calls, {p.session.title: p for p in prompts}


def chosen(result) -> list[str]:
    assert not result.is_error, result.content[0].text
    return result.structured_content["answers"]["answers"]["deploy_target"]


@pytest.mark.parametrize("transport", ["stdio", "http-legacy"])
async def test_two_mcp_connections_on_one_token_ask_at_once_and_each_gets_its_own_answer(
    transport, server, token, owner, tmp_path
):
    folder = f" · {ROOT.name}" if transport == "stdio" else ""
    claude, cursor = f"claude-code 1.2{folder}", f"cursor 0.9{folder}"
    async with (
        mcp_client(transport, server, token, tmp_path, session=None, client_info=CLAUDE) as one,
        mcp_client(transport, server, token, tmp_path, session=None, client_info=CURSOR) as two,
        person(server, owner) as http,
    ):
        calls, prompts = await ask_twice_at_once(one, two)
        listing = (await http.get("/")).text
        await answer(http, prompts[cursor], 1)
        await answer(http, prompts[claude], 0)
        results = [await asyncio.wait_for(call, DEADLINE) for call in calls]
        # The same connection asks again in the same session.
        again = asyncio.ensure_future(one.call_tool("ask_user", {"questions": [QUESTION]}))
        [later] = await until_async(lambda: pending_prompts(1))
        await answer(http, later, 1)
        await asyncio.wait_for(again, DEADLINE)

    assert [chosen(r) for r in results] == [["Staging (Recommended)"], ["Production"]]
    keys = [prompts[claude].session.key, prompts[cursor].session.key]
    assert all(re.fullmatch(r"mcp-[0-9a-f]{12}", key) for key in keys) and keys[0] != keys[1]
    assert claude in listing and cursor in listing
    assert later.session.key == keys[0]


async def test_two_calls_of_the_2026_protocol_without_a_session_never_collide(server, token, owner, tmp_path):
    async with (
        mcp_client("http", server, token, tmp_path, session=None, client_info=CLAUDE) as one,
        mcp_client("http", server, token, tmp_path, session=None, client_info=CURSOR) as two,
        person(server, owner) as http,
    ):
        calls, prompts = await ask_twice_at_once(one, two)
        await answer(http, prompts["claude-code 1.2"], 0)
        await answer(http, prompts["cursor 0.9"], 1)
        results = [await asyncio.wait_for(call, DEADLINE) for call in calls]

    assert [chosen(r) for r in results] == [["Staging (Recommended)"], ["Production"]]
    assert prompts["claude-code 1.2"].session != prompts["cursor 0.9"].session


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_fixed_session_still_takes_one_pending_question_at_a_time(transport, server, token, tmp_path):
    async with (
        mcp_client(transport, server, token, tmp_path, session="fixed", client_info=CLAUDE) as one,
        mcp_client(transport, server, token, tmp_path, session="fixed", client_info=CURSOR) as two,
    ):
        first = asyncio.ensure_future(one.call_tool("ask_user", {"questions": [QUESTION]}))
        [prompt] = await until_async(lambda: pending_prompts(1))
        second = await two.call_tool("ask_user", {"questions": [QUESTION]})
        first.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await first
        # The cancelled call cancels its prompt in the server: waited for, so
        # that the server writes nothing while this test's rows are flushed.
        await until_async(lambda: pending_prompts(0))

    assert second.is_error
    assert f"Session fixed already has a pending prompt ({prompt.pk})" in second.content[0].text
    assert prompt.session.title == ""
