"""Login throttling (django-axes) on the Control UI's and the admin's login pages."""

from __future__ import annotations

import pytest
from django.test import Client

from .conftest import PASSWORD

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


def log_in(path: str, username: str, password: str, address: str = "127.0.0.1"):
    return Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password, "next": "/"})


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
    from .conftest import make_user

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
    from datetime import timedelta

    from axes.models import AccessAttempt
    from django.utils import timezone

    with_fast_password(owner)
    fail("/login/", "alice", 5)
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))

    assert logged_in(log_in("/login/", "alice", PASSWORD))


def test_the_limit_and_cool_off_come_from_the_environment(tmp_path):
    import subprocess
    import sys

    code = "from django.conf import settings as s; print(s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME.total_seconds())"
    env = {"DJANGO_SETTINGS_MODULE": "controlui.settings", "ASKUSER_DATA_DIR": str(tmp_path), "PATH": ""}
    env |= {"ASKUSER_LOGIN_FAILURES": "3", "ASKUSER_LOGIN_COOLOFF_MINUTES": "2"}
    script = f"import django; django.setup(); {code}"

    output = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)

    assert output.stdout.split() == ["3", "120.0"]
