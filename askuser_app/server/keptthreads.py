"""The panel's answer, ``POST /s/<key>/prompts/<id>/answer``, served by Django
on threads kept for it.

Django's ASGI handler gives every request a thread of its own, and with it a
new database connection (on SQLite a new connection and its PRAGMAs; on
PostgreSQL a checkout from the pool); and it crosses from the event loop to
that thread and back for each synchronous middleware hook, twice more around
WhiteNoise's middleware, which is synchronous only. The answer is the
request a person waits on after each click, and that handling cost as much
as the answer itself (docs/PERFORMANCE.md, "The answer request").

Here the request goes whole to Django's public WSGI handler
(``get_wsgi_application()``) on a thread kept for answers
(``ASKUSER_ANSWER_THREADS``; one on SQLite, so that a process's answers
queue for the write lock as its creates do), whose connection is kept as
well. Every middleware (security, sessions, CSRF, authentication, messages,
htmx, the security headers, django-axes) and the view run exactly as under
any WSGI server, on one thread, in one hop from the event loop; Django's
``request_finished`` closes or returns the connection as at the end of any
request. Only the protocol is adapted: the ASGI scope becomes a WSGI environ
(PEP 3333), the response is sent back whole (the answer's response is a
small page fragment, never streamed).

asgiref's ``WsgiToAsgi`` does this too, but on the thread-sensitive
executor (the one thread Channels' consumers share) and without closing the
response, which in Django is what sends ``request_finished``.

It sits behind the front door (``edge.FrontDoor``: the host check and the
body bound) like every route; any other method on the path goes to Django's
ASGI handler.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings

from askuser_app.runtime import asyncdb, http, realtime

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Response = tuple[int, list[tuple[bytes, bytes]], bytes]


threads = asyncdb.KeptThreads(lambda: settings.ASKUSER_ANSWER_THREADS, "answer")


class OnKeptThreads:
    """An ASGI app that serves the WSGI app ``wsgi`` (Django's handler) on the answer threads."""

    def __init__(self, wsgi: WSGIApp) -> None:
        self.wsgi = wsgi

    async def __call__(self, scope: http.Scope, receive: http.Receive, send: http.Send) -> None:
        body = await http.read_body(receive)
        if body is None:  # the client hung up
            return
        # What the answer announces reaches the session's other pages and the
        # agent's wait once the person's own page has its response.
        with realtime.sent_after_response():
            status, headers, content = await threads.run(self.serve)(environ(scope, body))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": content})

    def serve(self, environ: dict[str, Any]) -> Response:
        """Run the WSGI app as a WSGI server does, closing its response (Django's ``request_finished``)."""
        started: list[Any] = []
        written: list[bytes] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., Any]:
            if started and exc_info is None:
                raise RuntimeError("start_response called twice without exc_info")
            started[:] = [status, headers]
            return written.append

        result = self.wsgi(environ, start_response)
        try:
            content = b"".join([*written, *result])
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status, headers = started
        encoded = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
        return int(status.split(" ", 1)[0]), encoded, content


def environ(scope: http.Scope, body: bytes) -> dict[str, Any]:
    """The WSGI environ (PEP 3333) of an ASGI HTTP request, as Django's ASGI handler reads one.

    Strings are the request's bytes as latin-1, as WSGI has them. Repeated
    headers are joined (cookies with "; "). A header whose name has an
    underscore is dropped, as Django's development server and other WSGI
    servers drop it: its environ key could not be told from the hyphenated
    header's (``X-Forwarded_Proto`` passing for ``X-Forwarded-Proto``)."""
    root = scope.get("root_path", "")
    path = scope["path"].removeprefix(root) if root and scope["path"].startswith(root) else scope["path"]
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": root.encode().decode("latin-1"),
        "PATH_INFO": path.encode().decode("latin-1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] or 0),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1] or 0),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope["headers"]:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        if "_" in name:
            continue
        key = {"content-length": "CONTENT_LENGTH", "content-type": "CONTENT_TYPE"}.get(name)
        key = key or "HTTP_" + name.upper().replace("-", "_")
        if key in environ:
            value = environ[key] + ("; " if key == "HTTP_COOKIE" else ",") + value
        environ[key] = value
    # The body is read whole: its length, also for a chunked one (Django's WSGI request reads that many bytes).
    environ["CONTENT_LENGTH"] = str(len(body))
    return environ
