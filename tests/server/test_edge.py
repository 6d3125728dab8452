"""The agent API's front door: one host check, one refusal shape, capped waits, one GET."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from django.test import Client

from askuser_app.agents import waits
from askuser_app.domain import services
from askuser_app.models import Prompt
from askuser_app.runtime import realtime
from askuser_app.runtime.asyncdb import database_call
from tests.conftest import asgi_request, auth, make_user, payload, until

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 10  # seconds any single step may take before the test fails
MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


async def request_from(address: str, method: str, url: str, **kwargs) -> httpx.Response:
    """One request through the whole ASGI application, from a client at ``address``."""
    from controlui.asgi import application

    transport = httpx.ASGITransport(app=application, client=(address, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.request(method, url, timeout=30, **kwargs)


def refusal_of(response: httpx.Response) -> tuple:
    """What an agent reads in a refusal: status, JSON body and the headers it acts on."""
    assert response.headers["Content-Type"].startswith("application/json")
    headers = {name: response.headers.get(name) for name in ("WWW-Authenticate", "Retry-After")}
    return response.status_code, response.json(), headers


def agent_routes(prompt_id: str) -> list[tuple[str, str, dict]]:
    """A ninja route, both long-polls and MCP."""
    return [
        ("POST", "/api/v1/prompts", {"json": payload()}),
        ("GET", f"/api/v1/prompts/{prompt_id}?wait=1", {}),
        ("GET", "/api/v1/sessions/support-42/messages?wait=1", {}),
        ("POST", "/mcp", {"json": MCP_LIST}),
    ]


# --- one host check, one refusal -------------------------------------------------------------


@pytest.mark.parametrize("route", [0, 1, 2, 3], ids=["api", "prompt wait", "message wait", "mcp"])
async def test_every_agent_route_refuses_an_unknown_host_the_same_way(asked, token, route):
    method, url, extra = agent_routes(str(asked.pk))[route]

    response = await asgi_request(method, url, headers={**auth(token), "Host": "evil.example"}, **extra)

    assert refusal_of(response) == (
        400,
        {"error": "bad_host", "detail": "This host name is not served here."},
        {"WWW-Authenticate": None, "Retry-After": None},
    )
    assert await database_call(Prompt.objects.count)() == 1  # the create was not run


async def test_health_refuses_an_unknown_host(db):
    response = await asgi_request("GET", "/healthz", headers={"Host": "evil.example"})

    assert (response.status_code, response.json()["error"]) == (400, "bad_host")


@pytest.mark.parametrize(
    ("kind", "words"),
    [("missing", "Send your agent token"), ("unknown", "Unknown agent token."), ("revoked", "was revoked on")],
)
async def test_a_bad_token_is_refused_alike_by_the_api_the_long_polls_and_mcp(asked, agent, token, kind, words):
    if kind == "revoked":
        await database_call(services.revoke_agent)(agent)
    headers = {"missing": {}, "unknown": auth("au_unknown"), "revoked": auth(token)}[kind]

    refusals = [refusal_of(await asgi_request(m, u, headers=headers, **x)) for m, u, x in agent_routes(str(asked.pk))]

    status, body, seen = refusals[0]
    assert (status, body["error"], seen["WWW-Authenticate"]) == (401, "unauthorized", "Bearer")
    assert words in body["detail"]
    assert refusals == [refusals[0]] * 4


# --- /healthz ----------------------------------------------------------------------------------


async def test_health_tells_a_remote_caller_only_that_the_process_is_up(db):
    response = await request_from("203.0.113.7", "GET", "/healthz")

    assert (response.status_code, response.json()) == (200, {"status": "ok"})


async def test_health_tells_a_caller_on_this_machine_what_the_process_holds(db):
    body = (await request_from("127.0.0.1", "GET", "/healthz")).json()

    assert body["status"] == "ok" and {"pid", "waiting", "threads"} <= set(body)


async def test_health_relayed_by_a_local_proxy_counts_as_remote(db):
    response = await request_from("127.0.0.1", "GET", "/healthz", headers={"X-Forwarded-For": "203.0.113.7"})

    assert response.json() == {"status": "ok"}


async def test_health_through_a_trusted_local_proxy_tells_only_a_client_on_this_machine(db, settings):
    settings.ASKUSER_TRUSTED_PROXIES = ["127.0.0.1"]

    local = (await request_from("127.0.0.1", "GET", "/healthz", headers={"X-Forwarded-For": "127.0.0.1"})).json()
    spoofed = await request_from("127.0.0.1", "GET", "/healthz", headers={"X-Forwarded-For": "127.0.0.1, 203.0.113.7"})
    forwarded = await request_from("127.0.0.1", "GET", "/healthz", headers={"Forwarded": "for=203.0.113.7"})

    assert {"pid", "waiting", "threads"} <= set(local)
    assert spoofed.json() == forwarded.json() == {"status": "ok"}


async def test_health_through_a_trusted_remote_proxy_counts_as_remote_whoever_it_names(db, settings):
    settings.ASKUSER_TRUSTED_PROXIES = ["10.0.0.1"]

    response = await request_from("10.0.0.1", "GET", "/healthz", headers={"X-Forwarded-For": "127.0.0.1"})

    assert response.json() == {"status": "ok"}  # that proxy's machine is not this one


# --- one implementation of each waiting read ---------------------------------------------------


def test_django_serves_neither_waiting_read_but_the_document_describes_both(api, asked):
    direct = Client()  # Django alone, without the ASGI router in front of it

    prompt = direct.get(f"/api/v1/prompts/{asked.pk}", headers=auth(api.token))
    messages = direct.get("/api/v1/sessions/support-42/messages", headers=auth(api.token))
    document = api.get("/openapi.json").json()

    assert (prompt.status_code, messages.status_code) == (404, 405)
    assert api.get(f"/prompts/{asked.pk}").json()["status"] == "pending"  # served in front of Django
    for route, model in [
        ("/api/v1/prompts/{prompt_id}", "ResultOut"),
        ("/api/v1/sessions/{key}/messages", "MessagesOut"),
    ]:
        operation = document["paths"][route]["get"]
        assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(model)
        assert "wait" in {parameter["name"] for parameter in operation["parameters"]}
        assert "429" in operation["responses"]


# --- caps on parked waits ----------------------------------------------------------------------


def parked_count() -> int:
    """The waits the caps count: parked once their read is done, each under its agent.

    Not the hub's listeners: a wait listens before its read (so it misses no answer)
    and takes its place under the caps after it. With several agent threads, a second
    wait's read may end first, and it would take the place the test means for the first."""
    return sum(count for (kind, _), count in waits.parked.counts.items() if kind == "agent")


def start(token: str, url: str, address: str = "198.51.100.1") -> asyncio.Task:
    return asyncio.ensure_future(request_from(address, "GET", url, headers=auth(token)))


def prompt_wait(prompt: Prompt) -> str:
    return f"/api/v1/prompts/{prompt.pk}?wait=30"


MESSAGE_WAIT = "/api/v1/sessions/support-42/messages?wait=30"


async def ask(token: str, session: str) -> Prompt:
    response = await asgi_request("POST", "/api/v1/prompts", json=payload(session=session), headers=auth(token))
    assert response.status_code == 201, response.content
    return await database_call(Prompt.objects.get)(pk=response.json()["id"])


async def test_an_agent_past_its_cap_of_parked_waits_gets_429_with_retry_after(asked, token, owner, settings):
    settings.ASKUSER_MAX_WAITS_PER_AGENT = 2
    held = [start(token, prompt_wait(asked)) for _ in range(2)]
    await until(lambda: parked_count() == 2)

    refused = await asyncio.wait_for(start(token, prompt_wait(asked)), DEADLINE)

    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.json()["error"] == "too_many_waits"
    assert "This agent already holds 2 waits" in refused.json()["detail"]
    assert parked_count() == 2
    await database_call(services.answer)(asked, {"deploy_target": "Production"}, by=owner)
    answered = await asyncio.wait_for(asyncio.gather(*held), DEADLINE)
    assert [r.json()["status"] for r in answered] == ["answered", "answered"]


async def test_waits_that_ended_free_their_place_under_the_cap(asked, token, settings):
    settings.ASKUSER_MAX_WAITS_PER_AGENT = 1
    for _ in range(3):  # each ends pending, then the next may park
        response = await asyncio.wait_for(start(token, f"/api/v1/prompts/{asked.pk}?wait=0.05"), DEADLINE)
        assert response.json()["status"] == "pending"

    assert parked_count() == 0
    assert realtime.hub().waiting == 0


async def test_message_waits_count_against_the_same_cap(asked, token, settings):
    settings.ASKUSER_MAX_WAITS_PER_AGENT = 1
    held = start(token, prompt_wait(asked))
    await until(lambda: parked_count() == 1)

    refused = await asyncio.wait_for(start(token, MESSAGE_WAIT), DEADLINE)

    assert (refused.status_code, refused.json()["error"]) == (429, "too_many_waits")
    assert "Retry-After" in refused.headers
    held.cancel()


async def test_a_message_wait_past_the_cap_is_refused(asked, token, settings):
    settings.ASKUSER_MAX_WAITS_PER_AGENT = 1
    held = start(token, MESSAGE_WAIT)
    await until(lambda: parked_count() == 1)

    refused = await asyncio.wait_for(start(token, MESSAGE_WAIT), DEADLINE)

    assert (refused.status_code, refused.json()["error"]) == (429, "too_many_waits")
    held.cancel()


async def test_an_owner_is_capped_across_their_agents_and_others_are_not(asked, token, owner, settings):
    settings.ASKUSER_MAX_WAITS_PER_AGENT, settings.ASKUSER_MAX_WAITS_PER_USER = 0, 1
    second_token = (await database_call(services.create_agent)("second", owner))[1]
    stranger = await database_call(make_user)("carol")
    stranger_token = (await database_call(services.create_agent)("theirs", stranger))[1]
    held = start(token, prompt_wait(asked))
    await until(lambda: parked_count() == 1)
    theirs = await ask(stranger_token, "their-session")

    refused = await asyncio.wait_for(start(second_token, prompt_wait(await ask(second_token, "s2"))), DEADLINE)
    admitted = start(stranger_token, prompt_wait(theirs))

    assert refused.status_code == 429
    assert "owner" in refused.json()["detail"]
    await until(lambda: parked_count() == 2)
    held.cancel()
    admitted.cancel()


async def test_one_client_address_is_capped_across_owners(asked, token, other_token, settings):
    settings.ASKUSER_MAX_WAITS_PER_ADDRESS = 1
    theirs = await ask(other_token, "their-session")
    held = start(token, prompt_wait(asked), address="198.51.100.1")
    await until(lambda: parked_count() == 1)

    refused = await asyncio.wait_for(start(other_token, prompt_wait(theirs), address="198.51.100.1"), DEADLINE)
    elsewhere = start(other_token, prompt_wait(theirs), address="198.51.100.2")

    assert refused.status_code == 429
    assert "client address" in refused.json()["detail"]
    await until(lambda: parked_count() == 2)
    held.cancel()
    elsewhere.cancel()


def start_through(token: str, url: str, proxy: str, forwarded: str) -> asyncio.Task:
    headers = {**auth(token), "X-Forwarded-For": forwarded}
    return asyncio.ensure_future(request_from(proxy, "GET", url, headers=headers))


async def test_behind_a_trusted_proxy_waits_are_capped_by_the_real_client(asked, token, other_token, settings):
    settings.ASKUSER_MAX_WAITS_PER_ADDRESS, settings.ASKUSER_TRUSTED_PROXIES = 1, ["10.0.0.1"]
    theirs = await ask(other_token, "their-session")
    held = start_through(token, prompt_wait(asked), "10.0.0.1", "192.0.2.1, 203.0.113.7")
    await until(lambda: parked_count() == 1)

    spoofed = start_through(other_token, prompt_wait(theirs), "10.0.0.1", "192.0.2.2, 203.0.113.7")
    refused = await asyncio.wait_for(spoofed, DEADLINE)
    neighbour = start_through(other_token, prompt_wait(theirs), "10.0.0.1", "203.0.113.8")

    assert refused.status_code == 429
    assert "client address" in refused.json()["detail"]
    await until(lambda: parked_count() == 2)  # another client behind the same proxy parks
    held.cancel()
    neighbour.cancel()


async def test_an_untrusted_peer_is_capped_by_its_own_address_whatever_it_forwards(asked, token, other_token, settings):
    settings.ASKUSER_MAX_WAITS_PER_ADDRESS = 1
    theirs = await ask(other_token, "their-session")
    held = start_through(token, prompt_wait(asked), "198.51.100.9", "192.0.2.1")
    await until(lambda: parked_count() == 1)

    refused = await asyncio.wait_for(
        start_through(other_token, prompt_wait(theirs), "198.51.100.9", "192.0.2.2"), DEADLINE
    )

    assert (refused.status_code, refused.json()["error"]) == (429, "too_many_waits")
    held.cancel()


async def test_a_refused_wait_is_answered_alike_by_the_long_poll_and_the_api(asked, token, settings):
    settings.ASKUSER_MAX_WAITS_PER_AGENT, settings.ASKUSER_RATE_LIMIT = 1, 1
    held = start(token, prompt_wait(asked))
    await until(lambda: parked_count() == 1)

    wait = await asyncio.wait_for(start(token, prompt_wait(asked)), DEADLINE)
    create = await asgi_request("POST", "/api/v1/prompts", json=payload(session="s2"), headers=auth(token))

    (wait_status, wait_body, wait_headers), (create_status, create_body, create_headers) = map(
        refusal_of, (wait, create)
    )
    assert wait_status == create_status == 429
    assert wait_headers["Retry-After"] == str(wait_body["retry_after"])
    assert create_headers["Retry-After"] == str(create_body["retry_after"])
    assert set(wait_body) == set(create_body) == {"error", "detail", "retry_after"}
    held.cancel()
