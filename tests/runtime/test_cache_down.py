"""The cache is a shortcut past the database (askuser_app/runtime/caching.py): with
Redis unreachable, creates, saves and pages go on, reading the database."""

from __future__ import annotations

import socket

import pytest
import redis
from django.core.cache import cache

from askuser_app.domain import contract, prefs, services
from askuser_app.models import Delivery
from askuser_app.runtime import i18n
from tests.conftest import payload

pytestmark = pytest.mark.django_db


@pytest.fixture
def unreachable_cache(settings):
    with socket.socket() as probe:  # a port nothing listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    with pytest.raises(redis.ConnectionError):
        cache.get("anything")
    return settings


def test_with_the_cache_down_creates_notify_saves_succeed_and_languages_are_read(unreachable_cache, agent, owner):
    unreachable_cache.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    unreachable_cache.ASKUSER_EMAIL_SMTP = True
    owner.email = "alice@example.com"
    owner.save()  # forgetting what was kept fails, the save does not
    i18n.choose(owner, "hi")

    first = services.ask(agent, contract.parse_create(payload(session="s1"))).prompt
    prefs.choose_email_after(owner, 0)  # mail off: the next create follows at once
    second = services.ask(agent, contract.parse_create(payload(session="s2"))).prompt

    assert list(Delivery.objects.filter(channel="email").values_list("prompt_id", "address")) == [
        (first.pk, "alice@example.com")
    ]
    assert not Delivery.objects.filter(prompt=second).exists()
    assert i18n.chosen(owner) == "hi"


def test_with_the_cache_down_a_login_is_read_from_the_database_and_a_logout_ends_it(unreachable_cache, owner):
    from django.test import Client

    browser = Client()
    browser.force_login(owner)

    assert browser.get("/").status_code == 200  # the login read from the database
    assert browser.post("/logout/").status_code == 302
    assert browser.get("/").status_code == 302  # logged out: sent to log in


def test_a_cache_that_stays_down_is_logged_once_in_a_while_not_once_per_read(unreachable_cache, caplog, monkeypatch):
    from askuser_app.runtime import caching

    monkeypatch.setattr(caching, "_said_at", -caching.WARN_EVERY)
    monkeypatch.setattr(caching, "_unsaid", 0)
    for _ in range(5):
        assert caching.read("askuser:anything") == {}

    said = [r.getMessage() for r in caplog.records if r.name == "askuser" and "could not be read" in r.getMessage()]
    assert len(said) == 1
    monkeypatch.setattr(caching, "_said_at", -caching.WARN_EVERY)  # as if WARN_EVERY had passed
    caching.read("askuser:anything")
    assert "(and 4 more since the last)" in caplog.records[-1].getMessage()
