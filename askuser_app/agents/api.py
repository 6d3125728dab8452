"""The agent HTTP API under ``/api/v1`` (SPEC 3.5), built with django-ninja.

Views stay thin: they read the request, call the contract to validate and
``services`` to act; ``edge`` turns every refusal into its documented status.
The two waiting reads (``GET /prompts/{id}``, ``GET /sessions/{key}/messages``)
and the hooks' call (``POST /hooks``) are served in front of Django (``waits``,
``hooks``); this document describes them.
"""

from __future__ import annotations

import json
import logging
from http import HTTPStatus
from typing import Any, NoReturn

from django.core.exceptions import ImproperlyConfigured, RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from ninja import NinjaAPI, Path
from ninja.security import HttpBearer
from pydantic import BaseModel

from askuser_app.agents import refusals
from askuser_app.domain import agentauth, contract, services
from askuser_app.models import Agent

log = logging.getLogger("askuser")

ERRORS: dict[int, Any] = {code: contract.ErrorOut for code in (400, 401, 403, 404, 409, 413, 422)}


class AgentRequest(HttpRequest):
    """A request AgentToken let in: ``auth`` is its agent."""

    auth: Agent


class AgentToken(HttpBearer):
    """``Authorization: Bearer <agent token>``; explains every refusal."""

    def __call__(self, request: HttpRequest) -> Agent:
        return agentauth.agent_for(request.headers.get("Authorization"))

    def authenticate(self, request: HttpRequest, token: str) -> Agent:
        return agentauth.agent_for(f"Bearer {token}")


class AgentAPI(NinjaAPI):
    def get_openapi_schema(self, **kwargs: Any) -> Any:
        schema = super().get_openapi_schema(**kwargs)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        model: type[BaseModel]
        for model in (contract.CreatePromptIn, contract.MessageIn):
            body = model.model_json_schema(ref_template="#/components/schemas/{model}")
            components.update(body.pop("$defs", {}))
            components[model.__name__] = body
        for model in (contract.ResultOut, contract.MessagesOut):  # what the long-polls answer
            body = model.model_json_schema(ref_template="#/components/schemas/{model}", mode="serialization")
            for name, definition in {**body.pop("$defs", {}), model.__name__: body}.items():
                components.setdefault(name, definition)
        for route, operation in long_poll_operations().items():
            schema["paths"].setdefault(route, {})["get"] = operation
        schema["paths"].setdefault("/api/v1/hooks", {})["post"] = hook_operation()
        return schema


api = AgentAPI(
    title="askuser agent API",
    version="1",
    description="Ask your human one to three structured questions and wait for the answer.",
    auth=AgentToken(),
    urls_namespace="agent_api",
)


def on_refusal(request: HttpRequest, exc: Exception) -> JsonResponse:
    return refusals.json_response(refusals.refusal(exc))


for refused in refusals.REFUSED:
    # django-ninja types the exception as an instance or a class; it passes the instance.
    api.add_exception_handler(refused, on_refusal)  # type: ignore[arg-type]


def read_json(request: HttpRequest) -> Any:
    return parse_json(request_body(request))


def request_body(request: HttpRequest) -> bytes | None:
    """The body, or None when it is over DATA_UPLOAD_MAX_MEMORY_SIZE."""
    try:
        return request.body
    except RequestDataTooBig:
        return None


def parse_json(body: bytes | None) -> Any:
    """The request body's JSON; ``None`` stands for a body too large to read.

    The front door has refused a body over the agent routes' cap (``server.edge.body_limit``)
    before it was read; Django's own cap (``DATA_UPLOAD_MAX_MEMORY_SIZE``) gives ``None``."""
    if body is None:
        detail = f"The body is over {contract.MAX_BODY_BYTES // 1024} KiB; send less."
        raise refusals.Rejected(413, "body_too_large", detail)
    if not body.strip():
        raise refusals.Rejected(400, "invalid_json", "The body is empty; send a JSON object.")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise refusals.Rejected(400, "invalid_json", f"The body is not valid JSON ({exc}).") from None


def idempotency_key(header: str | None) -> str | None:
    if header is None:
        return None
    key = header.strip()
    if not key or len(key) > 255 or not key.isprintable():
        raise contract.ContractError([{"path": "Idempotency-Key", "message": "must be 1 to 255 printable characters"}])
    return key


def create(agent: Agent, key_header: str | None, body: bytes | None) -> tuple[dict[str, Any], dict[str, str]]:
    """A create (SPEC 3.1), as ``agents.create`` serves it: the response body and headers."""
    key = idempotency_key(key_header)
    asked = services.ask(agent, contract.parse_create(parse_json(body)), idempotency_key=key)
    headers = {"Location": f"/api/v1/prompts/{asked.prompt.pk}"}
    if not asked.created:
        headers["Idempotent-Replayed"] = "true"
    return created_body(asked), headers


def created_body(asked: services.Asked) -> dict[str, Any]:
    prompt = asked.prompt
    return {
        "id": str(prompt.pk),
        "status": prompt.status,
        "expires_at": contract.iso(prompt.expires_at),
        "extended": prompt.extended,
        "warnings": prompt.warnings,
        "session": prompt.session.key,
        "run_id": prompt.run.run_id,
        "timeoutSeconds": prompt.timeout_seconds,
    }


def body_of(model: type) -> dict[str, Any]:
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$"


@api.post(
    "/prompts",
    response={201: contract.CreatedOut, 429: contract.ErrorOut, **ERRORS},
    openapi_extra=body_of(contract.CreatePromptIn),
    summary="Ask the user",
)
def create_prompt(request: AgentRequest) -> NoReturn:
    """Store a prompt (SPEC 3.1) for the session's owner to answer. A retry with
    the same ``Idempotency-Key`` returns the same prompt, never a second one."""
    # The create is served in front of Django (agents/create.py, server/routing.py);
    # this operation only describes it in the OpenAPI document.
    raise ImproperlyConfigured("POST /api/v1/prompts is served by askuser_app.agents.create, in front of Django.")


@api.post(
    "/sessions/{key}/messages",
    response={201: contract.MessageOut, **ERRORS},
    openapi_extra=body_of(contract.MessageIn),
    summary="Post a chat message",
)
# django-ninja types Path for the Path[str] form only; the call form returns the same parameter.
def post_message(
    request: AgentRequest,
    key: str = Path(..., pattern=KEY_PATTERN, max_length=128),  # type: ignore[type-arg]
) -> JsonResponse:
    """Say something in the session's chat; the session is created on first use."""
    said = contract.validated(contract.MessageIn, read_json(request))
    message = services.post_agent_message(request.auth, key, said.text, title=said.title)
    return JsonResponse(contract.message_json(message), status=201, json_dumps_params={"ensure_ascii": False})


@api.post(
    "/prompts/{prompt_id}/cancel", response={200: contract.ResultOut, **ERRORS}, summary="Cancel a pending prompt"
)
def cancel_prompt(request: AgentRequest, prompt_id: str) -> JsonResponse:
    """Resolve the prompt as ``no_answer`` (reason ``cancelled``); 409 when it is no longer pending."""
    prompt = services.prompt_for_owner(request.auth.owner_id, prompt_id)
    services.cancel(prompt, agent=request.auth)
    return JsonResponse(prompt.result, json_dumps_params={"ensure_ascii": False})


RunId = Path(..., pattern=KEY_PATTERN, max_length=128)  # type: ignore[type-arg]  # as above


@api.post("/runs/{run_id}/abort", response={200: contract.AbortedOut, **ERRORS}, summary="Abort a run")
def abort_run(request: AgentRequest, run_id: str = RunId) -> JsonResponse:
    """Mark the run aborted and cancel its pending prompt (reason ``aborted``);
    the run cannot ask again."""
    aborted = services.abort_run(request.auth, run_id)
    cancelled = aborted.cancelled
    return JsonResponse(
        {
            "run_id": aborted.run.run_id,
            "status": aborted.run.status,
            "cancelled_prompt": str(cancelled.pk) if cancelled else None,
            "result": cancelled.result if cancelled else None,
        },
        json_dumps_params={"ensure_ascii": False},
    )


@api.get("/tool", auth=None, summary="The ask_user tool definition")
def tool(request: AgentRequest) -> dict[str, Any]:
    """Name, JSON schema and model-facing guidance to register ask_user with a model."""
    return contract.tool_definition()


# --- the long-polls, served by ``agents/waits.py`` and described here --------------------------

WAIT_PARAMETER = {"in": "query", "name": "wait", "required": False, "schema": {"type": "number", "default": 0}}


def long_poll_operations() -> dict[str, dict[str, Any]]:
    """The OpenAPI operations of the two waiting reads, which have no ninja view."""
    prompt_id = {"in": "path", "name": "prompt_id", "required": True, "schema": {"type": "string"}}
    key = {"in": "path", "name": "key", "required": True, "schema": {"type": "string"}}
    after = {"in": "query", "name": "after", "required": False, "schema": {"type": "integer", "default": 0}}
    return {
        "/api/v1/prompts/{prompt_id}": long_poll_operation(
            "get_prompt",
            "Read or wait for the result",
            """The prompt's result (SPEC 3.2). With ``wait`` (0–55 s) the request holds
until the prompt resolves or ``wait`` passes, then returns its state:
``pending`` or terminal. Repeat until terminal. A pending state carries
``expires_at``, the deadline as it stands, and ``extended``, how many times the
person asked for more time: each moves the deadline later, and a wait holding
meanwhile goes on to the new one.""",
            [prompt_id, WAIT_PARAMETER],
            contract.ResultOut,
        ),
        "/api/v1/sessions/{key}/messages": long_poll_operation(
            "get_messages",
            "Read or wait for the user's messages",
            """The user's messages with an id above ``after``, oldest first. With
``wait`` (0–55 s) the request holds until one arrives. Pass the returned
``last_id`` as the next ``after``.""",
            [key, after, WAIT_PARAMETER],
            contract.MessagesOut,
        ),
    }


HOOK_EVENT = {
    "type": "object",
    "description": "A hook event's JSON as the agent sends it (the Claude Code hooks reference names its fields).",
    "properties": {
        "hook_event_name": {
            "type": "string",
            "examples": ["PermissionRequest", "PreToolUse", "PostToolUse", "Notification", "Stop"],
        },
        "session_id": {"type": "string"},
        "cwd": {"type": "string"},
        "tool_name": {"type": "string"},
        "tool_input": {"type": "object"},
        "tool_use_id": {"type": "string"},
        "permission_suggestions": {"type": "array", "items": {}},
    },
}
HOOK_OUTPUT = {"type": "object", "description": "The hook's output JSON; {} when nobody decided."}


def hook_operation() -> dict[str, Any]:
    """``POST /api/v1/hooks``, served by ``agents.hooks`` in front of Django."""
    wait = {**WAIT_PARAMETER, "schema": {"type": "number", "default": 55, "minimum": 0, "maximum": 590}}
    operation = long_poll_operation(
        "post_hook",
        "Answer a coding agent's hook event",
        """A Claude Code (or Codex) hook event, answered with the hook's output JSON.
``PermissionRequest`` and ``PreToolUse`` ask the person one question (Allow / Deny /
Allow and don't ask again, the tool input as its ``detail``) and hold up to ``wait``
seconds (default 55, at most 590; keep it below the hook's own ``timeout``) for the
answer: allow or deny as the person said, or ``{}`` when nobody answered, and the
prompt closes. ``PostToolUse``, ``PostToolUseFailure``, ``PermissionDenied``,
``UserPromptSubmit``, ``Stop`` and a newer request show the agent decided at its
terminal: the session's open question closes as "Decided at the terminal" (reason
``decided``). ``Notification`` and ``Stop`` add a line to the session's timeline;
they and any other event return ``{}`` at once.""",
        [wait],
        dict,
    )
    operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": HOOK_EVENT}}}
    operation["responses"]["200"]["content"]["application/json"]["schema"] = HOOK_OUTPUT
    return operation


def long_poll_operation(
    name: str, summary: str, description: str, parameters: list[dict[str, Any]], ok: type
) -> dict[str, Any]:
    def answer(status: int, model: type) -> dict[str, Any]:
        schema = {"$ref": f"#/components/schemas/{model.__name__}"}
        return {"description": HTTPStatus(status).phrase, "content": {"application/json": {"schema": schema}}}

    # 429: past the caps on parked waits (askuser_app.agents.waits.Parked).
    refusals = {str(status): answer(status, contract.ErrorOut) for status in (*ERRORS, 429)}
    return {
        "operationId": f"askuser_app_api_{name}",
        "summary": summary,
        "description": description,
        "parameters": parameters,
        "responses": {"200": answer(200, ok), **refusals},
        "security": [{"AgentToken": []}],
    }
