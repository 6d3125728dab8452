"""One set of security headers: a response made in front of Django (a wait, the create, a
refusal at the front door, health) carries what Django's middleware gives the responses it makes."""

from __future__ import annotations

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.core.asgi import get_asgi_application

from askuser_app.runtime import http
from tests.conftest import asgi_request

SECURITY = {
    "strict-transport-security",
    "x-content-type-options",
    "referrer-policy",
    "cross-origin-opener-policy",
    "x-frame-options",
    "content-security-policy",
    "permissions-policy",
}


def security_of(response) -> dict[str, str]:
    return {name.lower(): value for name, value in response.headers.items() if name.lower() in SECURITY}


def lowered(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def get(path: str, **headers: str):
    return async_to_sync(asgi_request)("GET", path, headers=headers)


async def django_get(path: str, headers: dict[str, str]) -> httpx.Response:
    """The request served by Django's own handler, built now: its middleware reads the settings as they are."""
    transport = httpx.ASGITransport(app=get_asgi_application())
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.get(path, headers=headers)


@pytest.fixture
def https(settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_HSTS_PRELOAD = True
    settings.ASKUSER_TRUSTED_PROXIES = ["127.0.0.1"]  # the test client's address: the TLS proxy
    return {"X-Forwarded-Proto": "https"}


@pytest.mark.django_db(transaction=True)  # Django's handler runs: it closes its connection
@pytest.mark.parametrize("secure", [False, True], ids=["http", "https"])
def test_a_response_made_in_front_of_django_has_the_headers_djangos_own_has(secure, request):
    headers = request.getfixturevalue("https") if secure else {}
    made_by_django = async_to_sync(django_get)("/api/v1/tool", headers)  # ninja's JSON, through Django's middleware
    made_in_front = get("/api/v1/prompts/00000000-0000-0000-0000-000000000000", **headers)  # the wait's 401

    assert (made_by_django.status_code, made_in_front.status_code) == (200, 401)
    assert security_of(made_in_front) == security_of(made_by_django) == lowered(http.security_headers(secure))
    assert ("strict-transport-security" in security_of(made_in_front)) is secure


@pytest.mark.django_db(transaction=True)  # Django's handler runs: it closes its connection
def test_a_page_has_the_pages_policy_and_json_the_tighter_one():
    page = get("/login/")

    assert security_of(page) == lowered(http.security_headers(False, data=False))
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert get("/healthz").headers["content-security-policy"] == http.DATA_POLICY


@pytest.mark.django_db(transaction=True)  # Django's handler runs: it closes its connection
def test_a_refusal_at_the_front_door_has_them_too():
    refused = get("/api/v1/tool", Host="evil.example")

    assert refused.status_code == 400
    assert security_of(refused) == lowered(http.security_headers(False))
