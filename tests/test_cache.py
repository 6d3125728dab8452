"""The cache logins are kept in: in the scaled mode Redis, one
pool of connections per process, and a logout in one process ends the login
in every other."""

from __future__ import annotations

import os

import httpx
import pytest
import redis
from django.contrib.sessions.backends.cached_db import KEY_PREFIX
from django.core.cache import cache
from django.test import Client

from .conftest import SCALED, SCALED_REASON

pytestmark = [pytest.mark.scaled, pytest.mark.skipif(not SCALED, reason=SCALED_REASON)]


def connections_made() -> int:
    """How many connections Redis has accepted since it started (this one too)."""
    with redis.Redis.from_url(os.environ["REDIS_URL"]) as server:
        made: int = server.info("stats")["total_connections_received"]
    return made


@pytest.mark.django_db(transaction=True)
def test_a_servers_requests_share_one_pool_of_connections_to_redis(owner, start_server):
    server = start_server()
    browser = Client()
    browser.force_login(owner)
    with httpx.Client(base_url=server.url, cookies={"sessionid": browser.cookies["sessionid"].value}) as pages:
        assert pages.get("/").status_code == 200  # the process's first connection
        before = connections_made()
        # Each request reads its login from the cache, in an async context of its own.
        assert all(pages.get("/").status_code == 200 for _ in range(20))

    assert connections_made() - before <= 2  # the count's own, and at most one more
    assert cache.get(KEY_PREFIX + browser.cookies["sessionid"].value) is not None  # where cached_db keeps it


@pytest.mark.django_db(transaction=True)
def test_a_logout_in_one_process_ends_the_login_in_the_other(owner, start_server):
    first, second = start_server(), start_server()
    browser = Client()
    browser.force_login(owner)
    cookies = {"sessionid": browser.cookies["sessionid"].value}
    with httpx.Client(base_url=first.url, cookies=cookies) as on_first:
        assert on_first.get("/").status_code == 200  # the login is read, and kept in the cache
    with httpx.Client(base_url=second.url, cookies=cookies) as on_second:
        csrf = on_second.get("/").cookies["csrftoken"]
        on_second.cookies.set("csrftoken", csrf)
        logged_out = on_second.post("/logout/", headers={"X-CSRFToken": csrf})
        assert logged_out.status_code == 302

    with httpx.Client(base_url=first.url, cookies=cookies) as on_first:
        page = on_first.get("/")

    assert page.status_code == 302 and "/login/" in page.headers["location"]
