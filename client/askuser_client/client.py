"""Ask your human from Python: a client for the askuser agent API.

    from askuser_client.client import AskUserClient

    with AskUserClient("http://127.0.0.1:8000", token) as askuser:
        result = askuser.ask([question], session="support-42")
    if result["status"] == "answered":
        choice = result["answers"]["answers"]["deploy_target"][0]

``AsyncAskUserClient`` is the same with ``await``. ``ask`` creates the prompt
(with an Idempotency-Key, so a retried create never makes a second prompt),
repeats the bounded long-poll until the prompt resolves, rides out dropped
connections and server restarts with backoff, and cancels the prompt when the
caller is cancelled or interrupted. It returns the server's result unchanged:
``{"status": "answered", "answers": {"answers": {...}}, ...}`` or
``{"status": "no_answer", ...}``.

When the person asks for more time, the prompt's ``expires_at`` moves later
(and its ``extended`` count grows): the wait follows the new deadline, and
``ask(..., on_extended=callback)`` calls ``callback(Extension)`` each time.

This module imports nothing from Django and needs only httpx (and anyio,
which httpx brings): copy it into an agent's code base as it is.

Both clients share one implementation: each operation is a generator that
yields the HTTP requests and pauses it needs and receives the replies; the
sync client runs it with blocking calls, the async one with ``await``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import random
import re
import sys
import time
import unicodedata
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import anyio
import httpx

DEFAULT_WAIT = 25  # seconds per long-poll: well under the 60 s proxies allow
MAX_WAIT = 55
RETRY_FOR = 60.0  # how long a create keeps retrying an unreachable server
GRACE = 60.0  # how long past the prompt's deadline a wait keeps retrying
ABANDON_TIMEOUT = 5.0  # the cancel sent on interruption must not hang the caller
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
TOOL_FIELDS = frozenset({"questions", "timeoutSeconds"})

logger = logging.getLogger("askuser.client")
MAX_TITLE = 120

SIGNATURE_HEADER = "Askuser-Signature"
SIGNATURE_TOLERANCE = 300  # seconds: a signed webhook older than this is a replay


# --- errors --------------------------------------------------------------------


class AskUserError(Exception):
    """Anything the askuser server refused, or could not be reached for."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.body = body if body is not None else {}


class AuthError(AskUserError):
    """401: the token is missing, unknown or revoked."""


class RefusedError(AskUserError):
    """403: asking is not allowed here (a subagent run)."""


class ConflictError(RefusedError):
    """409: the state forbids it (the session has a pending prompt, the run was aborted, …)."""


class NotFoundError(AskUserError):
    """404: no such prompt for this token's owner."""


class ValidationError(AskUserError):
    """400/413/422: the request breaks the contract; ``errors`` are the server's ``{path, message}`` pairs."""

    @property
    def errors(self) -> list[dict[str, str]]:
        return list(self.body.get("errors") or [])


class ServerUnavailableError(AskUserError):
    """The server could not be reached (or kept failing) for longer than the client retries."""

    def __init__(self, message: str, *, prompt_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.prompt_id = prompt_id


ERRORS_BY_STATUS: dict[int, type[AskUserError]] = {
    400: ValidationError,
    401: AuthError,
    403: RefusedError,
    404: NotFoundError,
    409: ConflictError,
    413: ValidationError,
    422: ValidationError,
}


def error_for(response: httpx.Response) -> AskUserError:
    """The typed error for a refusal, carrying the server's sentence and body."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    detail = body.get("detail") or response.text[:200] or response.reason_phrase
    kind = ERRORS_BY_STATUS.get(response.status_code, AskUserError)
    if response.status_code in RETRYABLE_STATUSES:
        kind = ServerUnavailableError
    return kind(f"{response.status_code}: {detail}", status=response.status_code, code=body.get("error"), body=body)


# --- sessions: who asks, and in which conversation ------------------------------------


def new_session_key(prefix: str) -> str:
    """A session key of its own for one conversation (``py-1a2b3c4d5e6f``), valid wherever keys are."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def clean_title(text: str) -> str | None:
    """``text`` as a title the server accepts: one line of visible text, at most 120 characters.

    Titles are built from names other programs report (a program's name, an
    MCP client's), so anything the server would refuse is dropped here rather
    than failing the question."""
    visible = "".join(char for char in text if not unicodedata.category(char).startswith("C"))
    return " ".join(visible.split())[:MAX_TITLE].rstrip() or None


def program_title() -> str | None:
    """``<program> · <folder>``: the running program's name and the folder it was started in."""
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] not in ("", "-c", "-m") else "python"
    return clean_title(" · ".join(part for part in (program, os.path.basename(os.getcwd())) if part))


# --- the steps both clients run ------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One HTTP request an operation needs made."""

    method: str
    path: str
    body: Any = None
    params: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 30.0


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Extension:
    """The person asked for more time: the prompt's new deadline, and how much it moved."""

    prompt_id: str
    expires_at: str  # ISO 8601, as the API gives it
    extended: int  # how many times the person has asked for more time so far
    added_seconds: int  # how much later the deadline is than when last seen

    @property
    def added_minutes(self) -> int:
        return max(1, round(self.added_seconds / 60))


OnExtended = Callable[[Extension], None]


def _timestamp(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def extension_between(seen: Mapping[str, Any], pending: Mapping[str, Any]) -> Extension | None:
    """The extension from one pending state of a prompt to a later one, if its deadline moved."""
    if pending.get("extended", 0) <= seen.get("extended", 0):
        return None
    added = round(_timestamp(pending["expires_at"]) - _timestamp(seen["expires_at"]))
    return Extension(str(pending["id"]), pending["expires_at"], int(pending["extended"]), added)


T = TypeVar("T")
Reply = httpx.Response | httpx.TransportError
# A step generator yields requests and pauses, is sent the replies (None after
# a pause), and returns what the operation returns.
Steps = Generator[Call | Pause, Reply | None, T]
JSON = dict[str, Any]
_SECONDS = re.compile(r"[0-9]{1,9}")


def backoff(first: float = 0.25, cap: float = 5.0) -> Iterator[float]:
    """Exponential delays with jitter, so restarted servers are not hit in lockstep."""
    delay = first
    while True:
        yield random.uniform(delay / 2, delay)
        delay = min(delay * 2, cap)


def retry_after(reply: Reply, fallback: float) -> float:
    """The server's ``Retry-After`` (ASCII digits only, as ``askuser_app.domain.chars.ascii_int``
    reads them: this file imports nothing of the server's), at most 30 s; else ``fallback``."""
    given = reply.headers.get("Retry-After", "").strip() if isinstance(reply, httpx.Response) else ""
    if _SECONDS.fullmatch(given):
        return min(float(given), 30.0)
    return fallback


def retrying(call: Call, until: float, prompt_id: str | None = None) -> Steps[JSON]:
    """Make ``call`` until it gets a non-retryable reply or ``until`` (monotonic) passes."""
    delays = backoff()
    told = False
    while True:
        reply = yield call
        assert reply is not None  # a call is always answered
        if isinstance(reply, httpx.Response) and reply.status_code not in RETRYABLE_STATUSES:
            return parsed(reply)
        pause = retry_after(reply, next(delays))
        if time.monotonic() + pause > until:
            raise unavailable(reply, prompt_id)
        if isinstance(reply, httpx.ConnectError) and not told:
            # Say where it tried at once: a wrong port otherwise looks like a silent hang.
            told = True
            left = until - time.monotonic()
            logger.warning("%s (is `make run` running?); retrying for %.0f s", could_not_connect(reply), left)
        yield Pause(pause)


def could_not_connect(error: httpx.TransportError) -> str:
    """``could not connect to http://127.0.0.1:8000: connection refused``."""
    return f"could not connect to {origin_of(error)}: {reason_of(error)}"


def origin_of(error: httpx.TransportError) -> str:
    try:
        url = error.request.url
    except RuntimeError:  # an error raised without its request
        return "the askuser server"
    return f"{url.scheme}://{url.netloc.decode()}"


def reason_of(error: httpx.TransportError) -> str:
    if isinstance(error, httpx.ConnectError) and "refused" in str(error).lower():
        return "connection refused"
    return str(error) or type(error).__name__


def once(call: Call) -> Steps[JSON]:
    reply = yield call
    assert reply is not None  # a call is always answered
    if isinstance(reply, httpx.TransportError):
        raise unavailable(reply, None)
    return parsed(reply)


def parsed(reply: httpx.Response) -> JSON:
    if reply.is_success:
        body: JSON = reply.json()  # the API answers every success with an object
        return body
    raise error_for(reply)


def unavailable(reply: Reply, prompt_id: str | None) -> ServerUnavailableError:
    if isinstance(reply, httpx.Response):
        error = error_for(reply)
        return ServerUnavailableError(error.message, prompt_id=prompt_id, status=error.status, body=error.body)
    where = f" while waiting for prompt {prompt_id}" if prompt_id else ""
    message = f"{origin_of(reply)} could not be reached{where}: {reason_of(reply)}"
    return ServerUnavailableError(message, prompt_id=prompt_id)


@dataclass
class Asking:
    """What one ``ask`` knows so far, so that an interruption can clean up after it."""

    body: dict[str, Any]
    key: str = field(default_factory=lambda: str(uuid.uuid4()))
    create_sent: bool = False
    prompt_id: str | None = None


Questions = Sequence[Mapping[str, Any]] | Mapping[str, Any]


def build_body(
    questions: Questions,
    *,
    session: str,
    run_id: str | None,
    run_kind: str,
    timeout_seconds: int | None,
    callback_url: str | None,
) -> dict[str, Any]:
    """The create body; ``questions`` may also be a whole ask_user tool input."""
    body: dict[str, Any] = dict(questions) if isinstance(questions, Mapping) else {"questions": list(questions)}
    body.update(session=session, run_kind=run_kind)
    if run_id is not None:
        body["run_id"] = run_id
    if timeout_seconds is not None:
        body["timeoutSeconds"] = timeout_seconds
    if callback_url is not None:
        body["callback_url"] = callback_url
    return body


class Operations:
    """The askuser API as step generators; the two clients below run them."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        session: str | None = None,
        title: str | None = None,
        wait: float = DEFAULT_WAIT,
        retry_for: float = RETRY_FOR,
        grace: float = GRACE,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        # Without a session given, each client is a conversation of its own,
        # so two programs on one token never share (and block) one session.
        self.session = session or new_session_key("py")
        self.title = title if title is not None or session else program_title()
        self.wait_seconds = min(max(wait, 1), MAX_WAIT)
        self.retry_for = retry_for
        self.grace = grace

    def http_options(self, options: dict[str, Any]) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.token}", **options.pop("headers", {})}
        return {"base_url": self.base_url, "headers": headers, "follow_redirects": False, **options}

    def asking(
        self,
        questions: Questions,
        *,
        session: str | None = None,
        title: str | None = None,
        run_id: str | None = None,
        run_kind: str = "main",
        timeout_seconds: int | None = None,
        callback_url: str | None = None,
    ) -> Asking:
        if session is None:  # the client's own session goes with its own title
            session, title = self.session, title or self.title
        body = build_body(
            questions,
            session=session,
            run_kind=run_kind,
            run_id=run_id,
            timeout_seconds=timeout_seconds,
            callback_url=callback_url,
        )
        if title:
            body["title"] = title
        return Asking(body)

    def ask_steps(self, asking: Asking, on_extended: OnExtended | None = None) -> Steps[JSON]:
        started = time.monotonic()
        created = yield from self.create_steps(asking)
        deadline = started + created["timeoutSeconds"] + self.grace
        return (yield from self.wait_steps(created["id"], deadline, on_extended, seen=created))

    def create_steps(self, asking: Asking) -> Steps[JSON]:
        call = Call("POST", "/api/v1/prompts", asking.body, headers={"Idempotency-Key": asking.key})
        asking.create_sent = True
        created = yield from retrying(call, time.monotonic() + self.retry_for)
        asking.prompt_id = created["id"]
        return created

    def wait_steps(
        self,
        prompt_id: str,
        deadline: float | None = None,
        on_extended: OnExtended | None = None,
        *,
        seen: Mapping[str, Any] | None = None,
    ) -> Steps[JSON]:
        """Repeat the bounded long-poll until the prompt is no longer pending.

        Retries last until the prompt's deadline (plus ``grace``) as the server
        last gave it: when the person asks for more time, they last longer too."""
        call = Call(
            "GET", f"/api/v1/prompts/{prompt_id}", params={"wait": self.wait_seconds}, timeout=self.wait_seconds + 15
        )
        until = deadline if deadline is not None else time.monotonic() + self.retry_for
        while True:
            result = yield from retrying(call, until, prompt_id)
            if result["status"] != "pending":
                return result
            until = self.deadline_of(result) if deadline is None else max(until, self.deadline_of(result))
            extension = extension_between(seen, result) if seen is not None else None
            if extension is not None and on_extended is not None:
                on_extended(extension)
            seen = result

    def deadline_of(self, pending: Mapping[str, Any]) -> float:
        """The prompt's deadline on the monotonic clock, with grace for clock skew."""
        return time.monotonic() + max(_timestamp(pending["expires_at"]) - time.time(), 0) + self.grace

    def abandon_steps(self, asking: Asking) -> Steps[None]:
        """Cancel what an interrupted ask left pending; best effort, never raises."""
        try:
            if asking.prompt_id is None and asking.create_sent:
                # The create may have reached the server: replaying it with the
                # same key names the prompt (or makes it, to be cancelled at once).
                call = Call("POST", "/api/v1/prompts", asking.body, headers={"Idempotency-Key": asking.key})
                asking.prompt_id = (yield from once(_quick(call)))["id"]
            if asking.prompt_id is not None:
                yield from once(_quick(Call("POST", f"/api/v1/prompts/{asking.prompt_id}/cancel")))
        except AskUserError:
            pass  # already resolved (409), or unreachable: nothing more to do

    def result_steps(self, prompt_id: str, wait: float) -> Steps[JSON]:
        call = Call("GET", f"/api/v1/prompts/{prompt_id}", params={"wait": min(wait, MAX_WAIT)}, timeout=wait + 15)
        return (yield from retrying(call, time.monotonic() + self.retry_for, prompt_id))

    def post_steps(self, path: str) -> Steps[JSON]:
        return (yield from retrying(Call("POST", path), time.monotonic() + self.retry_for))

    def get_steps(self, path: str) -> Steps[JSON]:
        return (yield from retrying(Call("GET", path), time.monotonic() + self.retry_for))


def _quick(call: Call) -> Call:
    return Call(call.method, call.path, call.body, call.params, call.headers, ABANDON_TIMEOUT)


def _request(http: httpx.Client | httpx.AsyncClient, call: Call) -> httpx.Request:
    return http.build_request(
        call.method,
        call.path,
        json=call.body,
        params=call.params,
        headers=dict(call.headers),
        timeout=httpx.Timeout(call.timeout, connect=min(call.timeout, 10.0)),
    )


# --- the clients ---------------------------------------------------------------------


class AskUserClient:
    """Blocking client.

    ``session`` is the default session key for ``ask``: without it the client
    asks in a fresh session of its own (``py-<12 hex>``), titled
    ``<program> · <folder>`` unless ``title`` says who is asking; ``wait`` the seconds per
    long-poll (≤ 55); ``retry_for`` how long an unreachable server is retried
    before a create gives up; ``grace`` how long past a prompt's deadline a wait
    keeps retrying. Other keyword arguments go to ``httpx.Client`` (transport,
    verify, proxy, event_hooks, …).
    """

    def __init__(
        self, base_url: str, token: str, *, session: str | None = None, title: str | None = None, **options: Any
    ) -> None:
        tuning = {k: options.pop(k) for k in ("wait", "retry_for", "grace") if k in options}
        self.ops = Operations(base_url, token, session=session, title=title, **tuning)
        self.http = httpx.Client(**self.ops.http_options(options))

    @property
    def session(self) -> str:
        """The session key ``ask`` uses when none is given: the one passed in, or the client's own."""
        return self.ops.session

    def __enter__(self) -> AskUserClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def ask(
        self,
        questions: Questions,
        *,
        session: str | None = None,
        title: str | None = None,
        run_id: str | None = None,
        run_kind: str = "main",
        timeout_seconds: int | None = None,
        on_extended: OnExtended | None = None,
    ) -> dict[str, Any]:
        """Ask 1–3 questions and block until the result (``timeout_seconds`` defaults to 900).

        ``on_extended`` is called with an ``Extension`` each time the person asks for more time."""
        asking = self.ops.asking(
            questions, session=session, title=title, run_id=run_id, run_kind=run_kind, timeout_seconds=timeout_seconds
        )
        try:
            return self.run(self.ops.ask_steps(asking, on_extended))
        except AskUserError:
            raise
        except BaseException:  # KeyboardInterrupt, SystemExit, a failing hook: leave nothing pending
            self.run(self.ops.abandon_steps(asking))
            raise

    def create(self, questions: Questions, **fields: Any) -> dict[str, Any]:
        """Only create the prompt (e.g. with ``callback_url=``); returns ``{id, status, expires_at, …}``.

        Takes the keyword arguments of ``ask``; a retry never makes a second prompt.
        """
        return self.run(self.ops.create_steps(self.ops.asking(questions, **fields)))

    def wait(self, prompt_id: str, *, on_extended: OnExtended | None = None) -> dict[str, Any]:
        """Block until the prompt resolves and return its result (``on_extended`` as for ``ask``)."""
        return self.run(self.ops.wait_steps(prompt_id, None, on_extended))

    def result(self, prompt_id: str, *, wait: float = 0) -> dict[str, Any]:
        """The prompt's state now (``pending`` or the result), holding up to ``wait`` seconds."""
        return self.run(self.ops.result_steps(prompt_id, wait))

    def cancel(self, prompt_id: str) -> dict[str, Any]:
        return self.run(self.ops.post_steps(f"/api/v1/prompts/{prompt_id}/cancel"))

    def abort_run(self, run_id: str) -> dict[str, Any]:
        return self.run(self.ops.post_steps(f"/api/v1/runs/{run_id}/abort"))

    def tool_definition(self) -> dict[str, Any]:
        return self.run(self.ops.get_steps("/api/v1/tool"))

    def run(self, steps: Steps[T]) -> T:
        reply: Reply | None = None
        while True:
            try:
                step = steps.send(reply)
            except StopIteration as done:
                value: T = done.value
                return value
            if isinstance(step, Pause):
                time.sleep(step.seconds)
                reply = None
                continue
            try:
                reply = self.http.send(_request(self.http, step))
            except httpx.TransportError as exc:
                reply = exc


class AsyncAskUserClient:
    """``AskUserClient`` for asyncio (or trio) code: every call is awaited; options go to ``httpx.AsyncClient``."""

    def __init__(
        self, base_url: str, token: str, *, session: str | None = None, title: str | None = None, **options: Any
    ) -> None:
        tuning = {k: options.pop(k) for k in ("wait", "retry_for", "grace") if k in options}
        self.ops = Operations(base_url, token, session=session, title=title, **tuning)
        self.http = httpx.AsyncClient(**self.ops.http_options(options))

    @property
    def session(self) -> str:
        return self.ops.session

    async def __aenter__(self) -> AsyncAskUserClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def ask(
        self,
        questions: Questions,
        *,
        session: str | None = None,
        title: str | None = None,
        run_id: str | None = None,
        run_kind: str = "main",
        timeout_seconds: int | None = None,
        on_extended: OnExtended | None = None,
    ) -> dict[str, Any]:
        """Ask 1–3 questions and wait for the result; cancelling the task cancels the prompt.

        ``on_extended`` is called with an ``Extension`` each time the person asks for more time."""
        asking = self.ops.asking(
            questions, session=session, title=title, run_id=run_id, run_kind=run_kind, timeout_seconds=timeout_seconds
        )
        try:
            return await self.run(self.ops.ask_steps(asking, on_extended))
        except AskUserError:
            raise
        except BaseException:  # CancelledError, KeyboardInterrupt: leave nothing pending
            # Shielded: under a cancelled anyio scope every await would be cancelled again.
            with anyio.CancelScope(shield=True):
                await self.run(self.ops.abandon_steps(asking))
            raise

    async def create(self, questions: Questions, **fields: Any) -> dict[str, Any]:
        return await self.run(self.ops.create_steps(self.ops.asking(questions, **fields)))

    async def wait(self, prompt_id: str, *, on_extended: OnExtended | None = None) -> dict[str, Any]:
        return await self.run(self.ops.wait_steps(prompt_id, None, on_extended))

    async def result(self, prompt_id: str, *, wait: float = 0) -> dict[str, Any]:
        return await self.run(self.ops.result_steps(prompt_id, wait))

    async def cancel(self, prompt_id: str) -> dict[str, Any]:
        return await self.run(self.ops.post_steps(f"/api/v1/prompts/{prompt_id}/cancel"))

    async def abort_run(self, run_id: str) -> dict[str, Any]:
        return await self.run(self.ops.post_steps(f"/api/v1/runs/{run_id}/abort"))

    async def tool_definition(self) -> dict[str, Any]:
        return await self.run(self.ops.get_steps("/api/v1/tool"))

    async def run(self, steps: Steps[T]) -> T:
        reply: Reply | None = None
        while True:
            try:
                step = steps.send(reply)
            except StopIteration as done:
                value: T = done.value
                return value
            if isinstance(step, Pause):
                await anyio.sleep(step.seconds)
                reply = None
                continue
            try:
                reply = await self.http.send(_request(self.http, step))
            except httpx.TransportError as exc:
                reply = exc


# --- webhooks ------------------------------------------------------------------------


_TIMESTAMP = re.compile(r"[0-9]{1,12}")


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The ``Askuser-Signature`` header value for ``body``: ``t=<unix>,v1=<hex>``."""
    t = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={digest}"


def verify_signature(
    secret: str,
    body: bytes,
    header: str | bytes | None,
    *,
    tolerance: float = SIGNATURE_TOLERANCE,
    now: float | None = None,
) -> bool:
    """True when ``header`` signs exactly ``body`` with ``secret`` within ``tolerance`` seconds.

    Check it on the raw request body, before parsing it; refuse the request when it is False.
    """
    if isinstance(header, bytes):
        header = header.decode("latin-1")  # how HTTP carries header bytes
    if not isinstance(header, str) or not isinstance(body, bytes):
        return False
    pairs = [item.strip().partition("=") for item in header.split(",")]
    timestamps = [value for key, _, value in pairs if key == "t"]
    # ASCII digits only: "²".isdigit() is true, but int() refuses it.
    if len(timestamps) != 1 or not _TIMESTAMP.fullmatch(timestamps[0]):
        return False
    timestamp = int(timestamps[0])
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = sign(secret, body, timestamp).partition("v1=")[2].encode()
    # Compared as bytes: compare_digest refuses str holding anything but ASCII.
    return any(hmac.compare_digest(expected, value.encode(errors="replace")) for key, _, value in pairs if key == "v1")


def webhook_result(body: bytes) -> dict[str, Any]:
    """The result a verified webhook carries."""
    result: dict[str, Any] = json.loads(body)
    return result
