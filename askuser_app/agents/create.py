"""``POST /api/v1/prompts``, an agent's create, served in front of Django.

Django's ASGI handler gives every request a thread and a database connection
of its own, and crosses from the event loop to that thread and back for each
synchronous middleware and the view. On the create path, the agent API's
most frequent write, that cost about as much CPU as the create itself
(docs/PERFORMANCE.md). Here a create is served by a plain ASGI app, as the
long-poll is (a Channels ``AsyncHttpConsumer`` would add a channel-layer
channel and, before every message, a hop to close old connections: 10 % of
a create's CPU in the profile). Its token check and ``api.create`` run in
one ``calls.agent_call``, the shape the long-polls' and the hooks' database
work shares: a kept agent thread and its connection, announcements after
commit. It is the create's one door: ``api.create_prompt`` only describes
the route in the OpenAPI document.

It sits behind the front door (``edge.FrontDoor``: the host check and the
body bound) like every route, and answers refusals with ``refusals.refusal``. A
request this app would answer differently from Django, a plain-HTTP one under
``SECURE_SSL_REDIRECT``, goes on to Django.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from askuser_app.agents import api, refusals
from askuser_app.agents.calls import agent_call
from askuser_app.domain import agentauth, contract
from askuser_app.runtime import http

log = logging.getLogger("askuser")

CREATE_PATH = "/api/v1/prompts"
Outcome = tuple[int, dict[str, Any], dict[str, str]]


class CreateRoute:
    """``POST /api/v1/prompts`` served here; anything else on the path by ``otherwise`` (Django)."""

    def __init__(self, otherwise: http.App) -> None:
        self.otherwise = otherwise

    async def __call__(self, scope: http.Scope, receive: http.Receive, send: http.Send) -> None:
        if serves(scope):
            return await serve_create(scope, receive, send)
        await self.otherwise(scope, receive, send)


def serves(scope: dict[str, Any]) -> bool:
    """Whether the request is a create this app answers as Django would."""
    if scope["method"] != "POST" or scope["path"] != CREATE_PATH:
        return False
    return not settings.SECURE_SSL_REDIRECT or http.is_secure(scope)


async def serve_create(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The create's ASGI app: read the body, create on an agent thread, respond."""
    body = await http.read_body(receive)
    if body is None:  # the client hung up
        return
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
    try:
        outcome = await agent_call(create)(headers, body)
    except Exception:
        log.exception("A create failed")
        outcome = 500, contract.error_body("server_error", "The server failed to store the prompt."), {}
    status, payload, extra = outcome
    await http.respond(send, status, payload, extra, scope=scope)


def create(headers: dict[str, str], body: bytes) -> Outcome:
    """The token check and the create, in one call on an agent thread."""
    try:
        agent = agentauth.agent_for(headers.get("authorization"))
        created, created_headers = api.create(agent, headers.get("idempotency-key"), body)
    except refusals.REFUSED as exc:
        answer = refusals.refusal(exc)
        return answer.status, answer.body, answer.headers
    return 201, created, created_headers
