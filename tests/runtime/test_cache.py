"""The cache logins are kept in: in the scaled mode Redis, one
pool of connections per process, and a logout in one process ends the login
in every other."""

from __future__ import annotations

import shutil

import httpx
import pytest
import redis
from django.contrib.sessions.backends.cached_db import KEY_PREFIX
from django.test import Client

from tests.conftest import SCALED, SCALED_REASON
from tests.servers import DaphneServer, RedisServer

pytestmark = [pytest.mark.scaled, pytest.mark.skipif(not SCALED, reason=SCALED_REASON)]


def connections_made(url: str) -> int:
    """How many connections the Redis at ``url`` has accepted since it started (this one too)."""
    with redis.Redis.from_url(url) as server:
        made: int = server.info("stats")["total_connections_received"]
    return made


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs the redis-server program")
@pytest.mark.django_db(transaction=True)
def test_a_servers_requests_share_one_pool_of_connections_to_redis(owner, server_env):
    # A Redis of the test's own: Redis counts every client's connections, other tests' servers' too.
    own_redis = RedisServer().start()
    server = DaphneServer({**server_env, "REDIS_URL": own_redis.url}).start()
    try:
        browser = Client()
        browser.force_login(owner)
        session = browser.cookies["sessionid"].value
        with httpx.Client(base_url=server.url, cookies={"sessionid": session}) as pages:
            assert pages.get("/").status_code == 200  # the process's first connection
            before = connections_made(own_redis.url)
            # Each request reads its login from the cache, in an async context of its own.
            assert all(pages.get("/").status_code == 200 for _ in range(20))

        assert connections_made(own_redis.url) - before <= 2  # the count's own, and at most one more
        with redis.Redis.from_url(own_redis.url) as kept:
            assert kept.keys(f"*:{KEY_PREFIX}{session}")  # where cached_db keeps it
    finally:
        server.stop()
        own_redis.stop()


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
