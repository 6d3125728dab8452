"""ask_user as an MCP tool (the official ``mcp`` SDK), over stdio and streamable HTTP.

There is one tool implementation, ``build_server``: it checks that the
arguments are the tool's own, asks through ``AsyncAskUserClient`` and sends
progress notifications while the human thinks. Only where that client points
differs between the transports:

- stdio (``manage.py mcp_stdio``): at an askuser server's URL, with the agent
  token given on the command line;
- streamable HTTP (``/mcp``, routed in front of Django): at this very
  application, in process (httpx's ASGI transport), with the token and the
  client address of the MCP request. No loopback socket, and the same API code
  path (front door, caps and refusals included) as any agent.

Cancelling the tool call cancels the prompt: the client does that whenever its
``ask`` is cancelled.

Each agent conversation asks in a session of its own unless one is named
(``--session``, ``?session=``): a stdio process keeps one for its life, an
HTTP MCP session one per ``Mcp-Session-Id``, and a call of the 2026 protocol,
which carries no MCP session, is a conversation by itself. Such a session is
titled from what the MCP client says it is, so the person sees who asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import os
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import httpx
import mcp_types as types
from channels.routing import get_default_application
from django.conf import settings
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from askuser_app.agents import refusals
from askuser_app.agents.calls import agent_call
from askuser_app.domain import agentauth, contract
from askuser_app.runtime import origins, proxies
from askuser_client.client import (
    DEFAULT_WAIT,
    TOOL_FIELDS,
    AskUserError,
    AsyncAskUserClient,
    Extension,
    ValidationError,
    clean_title,
    new_session_key,
)

log = logging.getLogger("askuser")

SESSION_PREFIX = "mcp"
MCP_PATHS = ("/mcp", "/mcp/")
FOREIGN_ORIGIN = refusals.Rejected(
    403,
    "forbidden_origin",
    "/mcp takes requests from programs and from this server's own pages only: this Origin is neither "
    "(CSRF_TRUSTED_ORIGINS lists others to accept).",
)


@dataclass(frozen=True)
class Asker:
    """Who asks, and in which session, for one tool call; ``title`` names a session made for it."""

    client: AsyncAskUserClient
    session: str
    run_id: str | None = None
    title: str | None = None


AskerFor = Callable[[ServerRequestContext[Any, Any]], AbstractAsyncContextManager[Asker]]


def tool() -> types.Tool:
    """The tool exactly as ``GET /api/v1/tool`` defines it."""
    definition = contract.tool_definition()
    return types.Tool(
        name=definition["name"], description=definition["description"], input_schema=definition["input_schema"]
    )


def build_server(asker_for: AskerFor, *, progress_every: float | None = None) -> Server[Any]:
    every = progress_every if progress_every is not None else settings.ASKUSER_MCP_PROGRESS_EVERY

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool()])

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        if params.name != contract.TOOL_NAME:
            return failure(f"There is no tool {params.name!r} here; the only tool is {contract.TOOL_NAME}.")
        arguments = params.arguments or {}
        unknown = sorted(set(arguments) - TOOL_FIELDS)
        if unknown:
            return failure(f"{unknown[0]}: is not a known field; ask_user takes only questions and timeoutSeconds.")
        async with asker_for(ctx) as asker:
            extensions: asyncio.Queue[Extension] = asyncio.Queue()
            asking = asker.client.ask(
                arguments,
                session=asker.session,
                run_id=asker.run_id,
                title=asker.title,
                on_extended=extensions.put_nowait,
            )
            try:
                result = await with_progress(ctx, asking, every, extensions)
            except AskUserError as exc:
                return failure(describe(exc))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
        )

    return Server("askuser", on_list_tools=list_tools, on_call_tool=call_tool)


async def with_progress(
    ctx: ServerRequestContext[Any, Any],
    asking: Awaitable[dict[str, Any]],
    every: float,
    extensions: asyncio.Queue[Extension] | None = None,
) -> dict[str, Any]:
    """Await the answer, telling the MCP client every ``every`` seconds that it is still coming,
    and at once when the person asks for more time (``extensions``, from the client's wait)."""
    extensions = extensions if extensions is not None else asyncio.Queue()

    started = time.monotonic()

    async def tick() -> None:
        waited = 0.0
        while True:
            extension = await _next_extension(extensions, every)
            # The seconds waited so far, which only grow (progress must).
            waited = max(round(time.monotonic() - started, 3), waited + 0.001)
            message = more_time(extension) if extension else f"Waiting for the user's answer ({waited:g} s)"
            try:
                await ctx.session.report_progress(waited, None, message)
            except Exception:  # a client that went away hears nothing; the wait goes on
                log.debug("Progress notification not sent", exc_info=True)

    ticker = asyncio.ensure_future(tick())
    try:
        return await asking
    finally:
        ticker.cancel()


async def _next_extension(extensions: asyncio.Queue[Extension], within: float) -> Extension | None:
    try:
        async with asyncio.timeout(within):
            return await extensions.get()
    except TimeoutError:
        return None


def more_time(extension: Extension) -> str:
    """The progress message for an extension: "the user asked for more time: 15 more minutes"."""
    minutes = extension.added_minutes
    return f"the user asked for more time: {minutes} more minute{'' if minutes == 1 else 's'}"


def failure(message: str) -> types.CallToolResult:
    """A tool error the model sees (and can correct), not a protocol error."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def client_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The MCP client's name and version, as it gave them (``initialize``, or each 2026 request)."""
    params = ctx.session.client_params
    if params is None:
        return None
    return clean_title(f"{params.client_info.name} {params.client_info.version}")


def describe(exc: AskUserError) -> str:
    if isinstance(exc, ValidationError) and exc.errors:
        lines = "\n".join(f"- {error['path']}: {error['message']}" for error in exc.errors)
        return f"ask_user was not sent; fix these and call it again:\n{lines}"
    return f"ask_user failed: {exc.body.get('detail') or exc.message}"


# --- stdio ---------------------------------------------------------------------------------


async def serve_stdio(
    url: str,
    token: str,
    *,
    session: str | None = None,
    run_id: str | None = None,
    wait: float = DEFAULT_WAIT,
    progress_every: float | None = None,
) -> None:
    """Serve the tool on stdin/stdout, asking through the askuser server at ``url``.

    Without ``session``, the process is one conversation: one new session for its life,
    titled ``<client> <version> · <folder it was started in>``."""
    folder = os.path.basename(os.getcwd())
    key = session or new_session_key(SESSION_PREFIX)
    async with AsyncAskUserClient(url, token, wait=wait) as client:

        def asker_for(ctx: ServerRequestContext[Any, Any]) -> contextlib.nullcontext[Asker]:
            title = None if session else clean_title(f"{client_name(ctx) or 'MCP'} · {folder}")
            return contextlib.nullcontext(Asker(client, key, run_id, title))

        server = build_server(asker_for, progress_every=progress_every)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


# --- streamable HTTP at /mcp ---------------------------------------------------------------


@functools.cache
def endpoint() -> HttpEndpoint:
    """The process's ``/mcp``; its tool calls come back in through the whole HTTP application."""
    return HttpEndpoint(get_default_application())


class HttpEndpoint:
    """``/mcp`` for agents with a token; tool calls go to ``api_app`` in process.

    The SDK's session manager needs a running task group (its public
    ``run()``). ``manage.py serve`` starts it with the background loops once it
    listens (``start``, from ``server/loops.py``'s ``start_serving``), in the
    event loop that serves, before any request; a request never starts it.
    """

    def __init__(self, api_app: Any) -> None:
        self.api_app = api_app
        self.server = build_server(self.asker_for)
        self.managers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Running] = weakref.WeakKeyDictionary()

    def start(self) -> None:
        """In the running event loop: the session manager, until ``stop`` (or the loop's end)."""
        loop = asyncio.get_running_loop()
        running = self.managers.get(loop)
        if running is None or running.task.done():
            self.managers[loop] = Running.start(self.server)

    async def stop(self) -> None:
        """End the running event loop's session manager, and with it every MCP session it holds."""
        running = self.managers.pop(asyncio.get_running_loop(), None)
        if running is not None:
            running.task.cancel()
            await asyncio.gather(running.task, return_exceptions=True)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # Another site's page (a DNS rebinding, a page on a local port) never drives the tool
        # through a browser, as the MCP transport asks; programs send no Origin.
        if origins.foreign_origin(scope):
            return await refusals.refuse(send, FOREIGN_ORIGIN, scope)
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        try:
            agent = await agent_call(agentauth.agent_for)(headers.get("authorization"))
        except agentauth.Unauthorized as exc:
            return await refusals.refuse(send, exc, scope)
        # The SDK binds each MCP session to the credential that opened it.
        bearer = agentauth.bearer_token(headers.get("authorization"))
        token = AccessToken(token=bearer, client_id=f"agent-{agent.pk}", scopes=[])
        manager = await self.manager()
        await manager.handle_request({**scope, "user": AuthenticatedUser(token)}, receive, send)

    @contextlib.asynccontextmanager
    async def asker_for(self, ctx: ServerRequestContext[Any, Any]) -> AsyncIterator[Asker]:
        request = ctx.request
        assert request is not None  # over HTTP every call comes with its request
        token = agentauth.bearer_token(request.headers.get("authorization"))
        base_url = f"http://{request.headers.get('host', 'localhost')}"
        # The caller's address (behind trusted proxies, the client they relay), so
        # that its waits count against its own cap.
        client = (proxies.client_address(request.scope) or "127.0.0.1", request.client.port if request.client else 0)
        transport = httpx.ASGITransport(app=self.api_app, client=client)
        async with AsyncAskUserClient(base_url, token, transport=transport) as askuser:
            query = request.query_params
            given = query.get("session")
            session = given or http_session_key(request.headers.get("mcp-session-id"))
            yield Asker(askuser, session, query.get("run_id") or None, None if given else client_name(ctx))

    async def manager(self) -> StreamableHTTPSessionManager:
        running = self.managers.get(asyncio.get_running_loop())
        if running is None or running.task.done():
            raise RuntimeError("/mcp's session manager is not running: manage.py serve starts it (loops.start_serving)")
        await running.ready.wait()
        return running.manager


def http_session_key(mcp_session_id: str | None) -> str:
    """The askuser session of an MCP session: named by a digest of its id, which
    stays out of pages and the admin; a call without one is a conversation by itself."""
    if not mcp_session_id:
        return new_session_key(SESSION_PREFIX)
    return f"{SESSION_PREFIX}-{hashlib.sha256(mcp_session_id.encode()).hexdigest()[:12]}"


@dataclass
class Running:
    manager: StreamableHTTPSessionManager
    ready: asyncio.Event
    task: asyncio.Task[None]

    @classmethod
    def start(cls, server: Server[Any]) -> Running:
        # Sessions of clients that went away are dropped after an hour idle.
        manager = StreamableHTTPSessionManager(app=server, session_idle_timeout=3600)
        ready = asyncio.Event()
        return cls(manager, ready, asyncio.get_running_loop().create_task(cls.serve(manager, ready)))

    @staticmethod
    async def serve(manager: StreamableHTTPSessionManager, ready: asyncio.Event) -> None:
        async with manager.run():
            ready.set()
            await asyncio.Event().wait()  # for the life of the process
