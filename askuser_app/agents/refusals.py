"""The one place an agent-facing refusal becomes a response.

``refusal(exc)`` turns any error an agent can meet (a bad token, a broken
rule, a domain error, a body too large, too many waits, a bad host) into its
status, JSON body and headers; the ninja handlers (``api``), the create
(``create``), the long-polls (``waits``), ``/mcp`` (``mcp_server``) and the
front door all answer with it, so the same refusal reads the same on every
route.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.http import JsonResponse
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError

from askuser_app.domain import agentauth, contract, services
from askuser_app.runtime.http import Scope, Send, respond


class Rejected(Exception):
    """A request refused at the edge, before any service runs."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


@dataclass(frozen=True)
class Refusal:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


MISSING_TOKEN = "Send your agent token as 'Authorization: Bearer <token>'."

# What ``refusal`` knows how to answer; anything else is a server error.
REFUSED: tuple[type[Exception], ...] = (
    agentauth.Unauthorized,
    AuthenticationError,
    contract.ContractError,
    NinjaValidationError,
    services.DomainError,
    Rejected,
    HttpError,
)


def refusal(exc: Exception) -> Refusal:
    """The status, JSON body and headers that answer ``exc`` (one of ``REFUSED``)."""
    if isinstance(exc, agentauth.Unauthorized | AuthenticationError):
        detail = str(exc) if isinstance(exc, agentauth.Unauthorized) else MISSING_TOKEN
        return Refusal(401, contract.error_body("unauthorized", detail), {"WWW-Authenticate": "Bearer"})
    if isinstance(exc, NinjaValidationError):
        # ninja names where a parameter came from ("path", "query"); the contract names the field only.
        exc = contract.ContractError(contract.describe_errors([{**e, "loc": tuple(e["loc"][1:])} for e in exc.errors]))
    if isinstance(exc, contract.ContractError):
        return Refusal(422, contract.error_body("invalid_request", exc.sentence, errors=exc.errors))
    if isinstance(exc, services.DomainError):
        retry = {"Retry-After": str(exc.extra["retry_after"])} if "retry_after" in exc.extra else {}
        return Refusal(exc.status, contract.error_body(exc.code, exc.message, **exc.extra), retry)
    if isinstance(exc, Rejected):
        return Refusal(exc.status, contract.error_body(exc.code, exc.detail))
    if isinstance(exc, HttpError):
        return Refusal(exc.status_code, contract.error_body("error", str(exc)))
    raise TypeError(f"{type(exc).__name__} is not an agent-facing refusal") from exc


def json_response(answer: Refusal) -> JsonResponse:
    """``answer`` as Django's response (the ninja views)."""
    response = JsonResponse(answer.body, status=answer.status, json_dumps_params={"ensure_ascii": False})
    for name, value in answer.headers.items():
        response[name] = value
    return response


async def refuse(send: Send, exc: Exception, scope: Scope) -> None:
    answer = refusal(exc)
    await respond(send, answer.status, answer.body, answer.headers, scope=scope)
