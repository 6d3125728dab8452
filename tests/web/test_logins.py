"""Login throttling (django-axes) on the Control UI's and the admin's login pages."""

from __future__ import annotations

import io
import logging
import re
from datetime import timedelta

import httpx
import pytest
from asgiref.sync import async_to_sync
from axes.models import AccessAttempt, AccessFailureLog
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from tests.conftest import PASSWORD, make_user

WRONG = "not-the-password"

LOGIN_PAGES = ["/login/", "/admin/login/"]


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """Every attempt checks a password: a fast hasher keeps dozens of them quick."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    yield


def with_fast_password(user):
    user.set_password(PASSWORD)
    user.save(update_fields=["password"])
    return user


def log_in(path: str, username: str, password: str, address: str = "127.0.0.1", forwarded: str | None = None):
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    form = {"username": username, "password": password, "next": "/"}
    return Client(REMOTE_ADDR=address).post(path, form, headers=headers)


def logged_in(response) -> bool:
    return response.status_code == 302 and "_auth_user_id" in response.client.session


def fail(path: str, username: str, times: int, address: str = "127.0.0.1") -> list[int]:
    return [log_in(path, username, WRONG, address).status_code for _ in range(times)]


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_five_wrong_passwords_lock_the_user_out_even_with_the_right_one(staff, path):
    with_fast_password(staff)

    statuses = fail(path, "sam", 5)
    response = log_in(path, "sam", PASSWORD)

    assert statuses[:4] == [200] * 4  # the form again, saying the password was wrong
    assert response.status_code == 429 and not logged_in(response)
    page = response.content.decode()
    assert "Too many attempts" in page and "Try again in 15 minutes" in page


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_a_lockout_spares_other_users_and_other_addresses(staff, path):
    with_fast_password(staff)
    with_fast_password(make_user("kim", is_staff=True))
    fail(path, "sam", 5, address="10.0.0.1")

    assert logged_in(log_in(path, "sam", PASSWORD, address="10.0.0.2"))
    assert logged_in(log_in(path, "kim", PASSWORD, address="10.0.0.1"))
    assert log_in(path, "sam", PASSWORD, address="10.0.0.1").status_code == 429


def test_a_success_before_the_limit_clears_the_count(owner):
    with_fast_password(owner)
    fail("/login/", "alice", 4)
    assert logged_in(log_in("/login/", "alice", PASSWORD))

    fail("/login/", "alice", 4)

    assert logged_in(log_in("/login/", "alice", PASSWORD))


def test_the_lockout_ends_after_the_cool_off(owner, settings):
    with_fast_password(owner)
    fail("/login/", "alice", 5)
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))

    assert logged_in(log_in("/login/", "alice", PASSWORD))


def test_the_limit_and_cool_off_come_from_the_environment(tmp_path):
    import subprocess
    import sys

    code = (
        "from django.conf import settings as s; "
        "print(s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME.total_seconds(), s.ASKUSER_LOGIN_FAILURES_PER_USERNAME)"
    )
    env = {"DJANGO_SETTINGS_MODULE": "controlui.settings", "ASKUSER_DATA_DIR": str(tmp_path), "PATH": ""}
    env |= {"ASKUSER_LOGIN_FAILURES": "3", "ASKUSER_LOGIN_COOLOFF_MINUTES": "2"}
    env |= {"ASKUSER_LOGIN_FAILURES_PER_USERNAME": "20"}
    script = f"import django; django.setup(); {code}"

    output = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)

    assert output.stdout.split() == ["3", "120.0", "20"]


# --- behind a proxy ------------------------------------------------------------------------------

PROXY = "10.0.0.1"
CLIENT = "203.0.113.7"


async def attempts_through(proxy: str, tries: list[tuple[str, str]], username: str = "alice") -> list[int]:
    """Logins through the whole ASGI application from the peer ``proxy``, each
    ``(password, X-Forwarded-For)``, with the form's CSRF token as a browser would."""
    from controlui.asgi import application

    transport = httpx.ASGITransport(app=application, client=(proxy, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as browser:
        page = (await browser.get("/login/")).text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
        statuses = []
        for password, forwarded in tries:
            form = {"username": username, "password": password, "next": "/", "csrfmiddlewaretoken": token}
            response = await browser.post("/login/", data=form, headers={"X-Forwarded-For": forwarded})
            statuses.append(response.status_code)
        return statuses


@pytest.mark.django_db(transaction=True)  # Django's handler serves these on threads of its own
def test_behind_a_trusted_proxy_spoofed_leftmost_entries_are_locked_out_by_the_real_address(owner, settings):
    settings.ASKUSER_TRUSTED_PROXIES = [PROXY]
    with_fast_password(owner)
    spoofed = [(WRONG, f"198.51.100.{n}, {CLIENT}") for n in range(20)]

    statuses = async_to_sync(attempts_through)(PROXY, spoofed)
    right = async_to_sync(attempts_through)(PROXY, [(PASSWORD, f"192.0.2.99, {CLIENT}")])
    neighbour = async_to_sync(attempts_through)(PROXY, [(PASSWORD, "203.0.113.8")])

    assert statuses == [200] * 4 + [429] * 16
    assert right == [429]  # the sixth attempt, with the right password, is refused
    assert neighbour == [302]  # another client behind the same proxy is not locked out
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {CLIENT}


@pytest.mark.parametrize("trusted", [[], [PROXY]], ids=["no proxy trusted", "another proxy trusted"])
def test_an_untrusted_peer_is_counted_by_its_own_address_whatever_it_forwards(owner, settings, trusted):
    settings.ASKUSER_TRUSTED_PROXIES = trusted
    with_fast_password(owner)
    peer = "198.51.100.9"

    statuses = [log_in("/login/", "alice", WRONG, peer, f"192.0.2.{n}").status_code for n in range(6)]

    assert statuses == [200] * 4 + [429] * 2
    assert log_in("/login/", "alice", PASSWORD, peer, "192.0.2.200").status_code == 429
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {peer}


# --- one username from many addresses -------------------------------------------------------------


@pytest.fixture
def per_username(settings):
    """A username tier of 6 failures; the address tier stays at 5."""
    settings.ASKUSER_LOGIN_FAILURES_PER_USERNAME = 6
    return settings


def fail_from_many(username: str, addresses: int, each: int = 2) -> list[int]:
    return [code for n in range(addresses) for code in fail("/login/", username, each, address=f"192.0.2.{n + 1}")]


def test_one_username_guessed_from_many_addresses_is_locked_out_everywhere(per_username, owner, other_user):
    with_fast_password(owner)
    with_fast_password(other_user)

    statuses = fail_from_many("alice", 3)  # 6 wrong passwords, 2 from each address: none locked by address

    assert statuses == [200] * 5 + [429]  # the sixth is answered with the lockout page
    response = log_in("/login/", "alice", PASSWORD, address="198.51.100.50")
    assert response.status_code == 429 and not logged_in(response)
    assert "Too many attempts" in response.content.decode()
    assert logged_in(log_in("/login/", "bob", PASSWORD, address="192.0.2.1"))  # other users are not


def test_the_username_lockout_says_where_the_failures_came_from(per_username, owner, caplog):
    with_fast_password(owner)

    with caplog.at_level(logging.WARNING, logger="askuser"):
        fail_from_many("alice", 2, each=3)

    lines = [r.getMessage() for r in caplog.records if r.name == "askuser" and "locked out" in r.getMessage()]
    assert len(lines) == 1
    assert "'alice'" in lines[0] and "192.0.2.1 (3)" in lines[0] and "192.0.2.2 (3)" in lines[0]


def test_only_failures_within_the_last_hour_count_towards_the_username_lockout(per_username, owner):
    with_fast_password(owner)
    fail_from_many("alice", 2, each=3)
    AccessFailureLog.objects.update(attempt_time=timezone.now() - timedelta(minutes=61))
    fail("/login/", "alice", 3, address="192.0.2.3")

    assert logged_in(log_in("/login/", "alice", PASSWORD, address="198.51.100.50"))  # 3 within the hour
    fail("/login/", "alice", 3, address="192.0.2.4")
    assert log_in("/login/", "alice", PASSWORD, address="198.51.100.51").status_code == 429  # 6 within the hour


def test_the_username_lockout_ends_after_the_cool_off(per_username, owner, settings):
    with_fast_password(owner)
    fail_from_many("alice", 3)
    assert log_in("/login/", "alice", PASSWORD, address="198.51.100.50").status_code == 429

    past = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessFailureLog.objects.update(attempt_time=past)
    AccessAttempt.objects.update(attempt_time=past)

    assert logged_in(log_in("/login/", "alice", PASSWORD, address="198.51.100.50"))


def test_attempts_refused_during_a_lockout_are_not_counted_as_failures(per_username, owner):
    with_fast_password(owner)
    fail("/login/", "alice", 5, address="192.0.2.1")  # locked from this address

    refused = fail("/login/", "alice", 10, address="192.0.2.1")

    assert refused == [429] * 10
    assert AccessFailureLog.objects.filter(username="alice").count() == 5
    assert logged_in(log_in("/login/", "alice", PASSWORD, address="198.51.100.50"))


def test_axes_reset_username_lifts_the_username_lockout(per_username, owner):
    with_fast_password(owner)
    fail_from_many("alice", 3)
    assert log_in("/login/", "alice", PASSWORD, address="198.51.100.50").status_code == 429

    call_command("axes_reset_username", "alice", stdout=io.StringIO())

    assert logged_in(log_in("/login/", "alice", PASSWORD, address="198.51.100.50"))


def test_the_username_tier_can_be_turned_off(per_username, owner):
    per_username.ASKUSER_LOGIN_FAILURES_PER_USERNAME = 0
    with_fast_password(owner)
    fail_from_many("alice", 5)

    assert logged_in(log_in("/login/", "alice", PASSWORD, address="198.51.100.50"))


def test_the_failure_log_keeps_only_the_last_hour_or_so(per_username, owner, settings):
    with_fast_password(owner)
    fail("/login/", "someone-else", 2, address="192.0.2.9")
    AccessFailureLog.objects.update(attempt_time=timezone.now() - timedelta(hours=1) - settings.AXES_COOLOFF_TIME)

    fail("/login/", "alice", 1)

    assert list(AccessFailureLog.objects.values_list("username", flat=True)) == ["alice"]
