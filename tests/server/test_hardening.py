"""Hardening: rate limits, body limits, security headers, cookies, deploy checks."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from asgiref.sync import async_to_sync

from askuser_app.models import Message, Prompt, Session
from controlui.asgi import application
from tests.conftest import AgentClient, asgi_request, payload

ROOT = Path(__file__).resolve().parents[2]


# --- the rate limit ------------------------------------------------------------------------


def test_creating_past_the_rate_limit_is_refused_with_retry_after(api, settings):
    settings.ASKUSER_RATE_LIMIT = 3
    for index in range(3):
        assert api.ask(payload(session=f"s{index}")).status_code == 201

    response = api.ask(payload(session="one-too-many"))

    assert response.status_code == 429
    assert response.json()["error"] == "rate_limited"
    assert 1 <= int(response["Retry-After"]) <= 60
    assert "3 times in the last minute" in response.json()["detail"]
    assert Prompt.objects.count() == 3


def test_the_rate_limit_is_per_agent_and_spares_idempotent_retries(api, other_token, settings):
    settings.ASKUSER_RATE_LIMIT = 1
    first = api.ask(payload(), headers={"Idempotency-Key": "k1"})

    retry = api.ask(payload(), headers={"Idempotency-Key": "k1"})
    other = AgentClient(other_token).ask(payload())

    assert (first.status_code, retry.status_code, other.status_code) == (201, 201, 201)
    assert api.ask(payload(session="s2")).status_code == 429


def test_posting_messages_past_the_message_rate_limit_is_refused_and_makes_no_session(api, other_token, settings):
    settings.ASKUSER_MESSAGE_RATE_LIMIT = 3
    for index in range(3):
        assert api.post(f"/sessions/chat-{index}/messages", {"text": "hello"}).status_code == 201

    response = api.post("/sessions/one-too-many/messages", {"text": "hello"})
    other = AgentClient(other_token).post("/sessions/chat-0/messages", {"text": "hello"})

    assert response.status_code == 429
    assert response.json()["error"] == "rate_limited"
    assert 1 <= int(response["Retry-After"]) <= 60
    assert "posted 3 messages in the last minute" in response.json()["detail"]
    assert not Session.objects.filter(key="one-too-many").exists()
    assert Message.objects.filter(agent__owner__username="alice").count() == 3
    assert other.status_code == 201  # the limit is per agent


# --- request bodies --------------------------------------------------------------------------


async def call(scope_extra: dict, chunks: list[bytes]) -> tuple[int, dict]:
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    sent: list[dict] = []

    async def receive():
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()  # the client stays connected

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/v1/prompts",
        "query_string": b"",
        "headers": [],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
        **scope_extra,
    }
    await application(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], dict(start["headers"])


def test_a_body_declared_too_large_is_refused_before_it_is_read(db, settings):
    settings.ASKUSER_MAX_BODY = 1000
    length = str(10**9).encode()

    status, headers = async_to_sync(call)({"headers": [(b"content-length", length)]}, [b"x"])

    assert status == 413 and headers[b"content-type"] == b"application/json"


def test_a_chunked_body_past_the_limit_is_refused(db, settings):
    settings.ASKUSER_MAX_BODY = 1000

    status, _ = async_to_sync(call)({"path": "/login/"}, [b"x" * 600, b"x" * 600, b"x" * 600])

    assert status == 413


def test_an_agents_call_is_capped_at_a_prompts_worth_whatever_the_pages_cap(db, settings):
    settings.ASKUSER_MAX_BODY = 10 * 1024 * 1024
    chunks = [b"x" * 16 * 1024] * 5  # 80 KiB, chunked: no declared length

    for path in ("/api/v1/prompts", "/api/v1/sessions/s1/messages", "/mcp"):
        status, _ = async_to_sync(call)({"path": path}, chunks)
        assert status == 413, path


@pytest.mark.django_db(transaction=True)  # Django's own handler runs: it opens and closes connections
def test_a_chunked_body_within_the_limit_reaches_the_api(token):
    auth = [(b"authorization", f"Bearer {token}".encode())]

    status, _ = async_to_sync(call)({"headers": auth}, [b'{"session": "s1", ', b'"questions": []}'])

    assert status == 422  # read whole, then validated


# --- headers and cookies --------------------------------------------------------------------------


def assert_secure_headers(headers) -> None:
    csp = headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"


@pytest.mark.parametrize("path", ["/login/", "/", "/api/v1/tool", "/api/v1/docs", "/admin/login/"])
def test_pages_and_the_api_send_security_headers(client, owner, path):
    client.force_login(owner)

    response = client.get(path)

    assert_secure_headers(response.headers)
    page = response.headers["Content-Type"].startswith("text/html")
    # A page may run its own scripts; JSON may load nothing.
    assert ("script-src 'self'" in response.headers["Content-Security-Policy"]) is page
    assert response.headers["X-Frame-Options"] == "DENY"


def test_long_polls_and_health_send_security_headers(api, asked):
    async def get(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.get(path, headers={"Authorization": f"Bearer {api.token}"})

    for path in (f"/api/v1/prompts/{asked.pk}", "/healthz"):
        assert_secure_headers(async_to_sync(get)(path).headers)


@pytest.mark.django_db(transaction=True)  # the server's handlers run on their own threads
def test_the_agent_api_sends_the_same_headers_and_no_cookie_in_front_of_django_and_through_it(token):
    """A create is served in front of Django (agentwrites), a 404 by Django: the same headers."""
    auth = {"Authorization": f"Bearer {token}"}

    created = async_to_sync(asgi_request)("POST", "/api/v1/prompts", json=payload(), headers=auth)
    not_found = async_to_sync(asgi_request)("GET", "/api/v1/nope", headers=auth)

    assert created.status_code == 201 and not_found.status_code == 404
    for response in (created, not_found):
        assert_secure_headers(response.headers)
        assert response.headers["X-Frame-Options"] == "DENY"
        assert "set-cookie" not in response.headers
        assert "Cookie" not in response.headers.get("Vary", "")


@pytest.mark.django_db(transaction=True)
def test_behind_tls_a_plain_http_create_is_left_to_django_and_a_secure_one_gets_hsts(token, settings):
    from askuser_app.agents import create as agentwrites

    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 3600
    settings.ASKUSER_TRUSTED_PROXIES = ["127.0.0.1"]  # the test client's address: the TLS proxy
    auth = {"Authorization": f"Bearer {token}"}
    create = {"type": "http", "method": "POST", "path": "/api/v1/prompts", "scheme": "http"}

    secure = async_to_sync(asgi_request)(
        "POST", "/api/v1/prompts", json=payload(), headers={**auth, "X-Forwarded-Proto": "https"}
    )

    # Django's SecurityMiddleware redirects the plain one, as every request.
    assert not agentwrites.serves({**create, "headers": []})
    assert agentwrites.serves({**create, "headers": [(b"x-forwarded-proto", b"https")]})
    assert secure.status_code == 201
    assert secure.headers["Strict-Transport-Security"].startswith("max-age=3600")


@pytest.mark.django_db(transaction=True)
def test_a_browser_session_does_not_open_the_agent_api(owner):
    """Only the agent token authenticates the API; a logged-in browser's cookie is not read."""
    from django.test import Client

    browser = Client()
    browser.force_login(owner)
    cookie = {"Cookie": f"sessionid={browser.cookies['sessionid'].value}"}

    response = async_to_sync(asgi_request)("POST", "/api/v1/prompts", json=payload(), headers=cookie)

    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"


@pytest.mark.django_db(transaction=True)
def test_the_agent_api_still_refuses_an_unknown_host(token):
    response = async_to_sync(asgi_request)(
        "POST", "/api/v1/prompts", json=payload(), headers={"Authorization": f"Bearer {token}", "Host": "evil.example"}
    )

    assert response.status_code == 400


def test_session_and_csrf_cookies_are_http_only_and_same_site(client, owner):
    from tests.conftest import PASSWORD

    client.get("/login/")
    response = client.post("/login/", {"username": "alice", "password": PASSWORD})

    session = response.cookies["sessionid"]
    csrf = client.cookies["csrftoken"]
    assert session["httponly"] and session["samesite"] == "Lax"
    assert csrf["httponly"] and csrf["samesite"] == "Lax"


def test_the_deploy_check_is_clean_under_production_settings(tmp_path):
    env = {
        **os.environ,
        "DEBUG": "0",
        "ASKUSER_HTTPS": "1",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "askuser.example.com",
        "ASKUSER_DATA_DIR": str(tmp_path),
    }

    check = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert check.returncode == 0, check.stdout + check.stderr
