"""Who a request comes from, behind proxies or not: the one function every per-address rule asks."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.test import RequestFactory

from askuser_app.runtime import proxies

PROXY = "10.0.0.1"


def scope(peer: str | None, *forwarded: str) -> dict:
    return {
        "client": (peer, 40000) if peer is not None else None,
        "headers": [(b"x-forwarded-for", value.encode()) for value in forwarded],  # bytes, as sent
    }


@pytest.mark.parametrize(
    "trusted,peer,forwarded,client",
    [
        # No proxy trusted: the header is the client's own word.
        ([], "198.51.100.9", ["203.0.113.7"], "198.51.100.9"),
        ([], "::ffff:198.51.100.9", [], "198.51.100.9"),
        # One proxy: it appended the address it was asked by, on the right.
        ([PROXY], PROXY, ["203.0.113.7"], "203.0.113.7"),
        ([PROXY], PROXY, ["127.0.0.1, 192.0.2.1, 203.0.113.7"], "203.0.113.7"),
        ([PROXY], "::ffff:10.0.0.1", ["203.0.113.7"], "203.0.113.7"),
        ([PROXY], PROXY, [], PROXY),  # the proxy's own request, its health check
        # A chain: the first hop from the right that is not a proxy.
        (["10.0.0.0/8"], PROXY, ["192.0.2.1, 203.0.113.7, 10.0.0.2"], "203.0.113.7"),
        (["10.0.0.0/8", "fd00::/8"], "fd00::1", ["203.0.113.7, 10.0.0.2"], "203.0.113.7"),
        (["10.0.0.0/8"], PROXY, ["10.0.0.3, 10.0.0.2"], "10.0.0.3"),  # all proxies: the leftmost
        # Repeated headers are one list, in order.
        ([PROXY], PROXY, ["192.0.2.1", "203.0.113.7"], "203.0.113.7"),
        # Ports and brackets, as some proxies write them.
        ([PROXY], PROXY, ["203.0.113.7:51234"], "203.0.113.7"),
        ([PROXY], PROXY, ["[2001:db8::7]:51234"], "2001:db8::7"),
        ([PROXY], PROXY, [" 2001:DB8::7 "], "2001:db8::7"),
        # Not an address: the walk ends at the proxy that passed it on.
        ([PROXY], PROXY, ["unknown"], PROXY),
        ([PROXY], PROXY, ["203.0.113.7, garbage"], PROXY),
        ([PROXY], PROXY, ["garbage, 203.0.113.7"], "203.0.113.7"),
        ([PROXY], PROXY, ["①②⑦.0.0.1"], PROXY),
        ([PROXY], PROXY, ["١٢٧.0.0.1"], PROXY),
        ([PROXY], PROXY, ["fe80::1%eth0"], PROXY),
        ([PROXY], PROXY, ["203.0.113.7,,"], PROXY),
        ([PROXY], PROXY, [","], PROXY),
        ([PROXY], PROXY, ["x" * 10_000], PROXY),
        # No peer address (a Unix socket): none.
        ([PROXY], None, ["203.0.113.7"], None),
    ],
)
def test_the_client_is_the_rightmost_forwarded_entry_that_is_not_a_trusted_proxy(
    settings, trusted, peer, forwarded, client
):
    settings.ASKUSER_TRUSTED_PROXIES = trusted

    assert proxies.client_address(scope(peer, *forwarded)) == client


def test_a_django_request_gets_the_same_answer_as_its_scope(settings, rf: RequestFactory):
    settings.ASKUSER_TRUSTED_PROXIES = [PROXY]
    request = rf.post("/login/", REMOTE_ADDR=PROXY, headers={"X-Forwarded-For": "192.0.2.1, 203.0.113.7"})

    assert proxies.for_request(request) == "203.0.113.7"
    assert proxies.for_request(rf.get("/", REMOTE_ADDR="")) is None


def run_settings(env: dict[str, str], tmp_path) -> subprocess.CompletedProcess[str]:
    code = "from django.conf import settings as s; print(s.ASKUSER_TRUSTED_PROXIES)"
    base = {"DJANGO_SETTINGS_MODULE": "controlui.settings", "ASKUSER_DATA_DIR": str(tmp_path), "PATH": ""}
    script = f"import django; django.setup(); {code}"
    return subprocess.run([sys.executable, "-c", script], env=base | env, capture_output=True, text=True)


def test_the_trusted_proxies_come_from_the_environment(tmp_path):
    output = run_settings({"ASKUSER_TRUSTED_PROXIES": " 10.0.0.1, fd00::/8 ,192.168.1.7/24"}, tmp_path)

    assert output.returncode == 0, output.stderr
    assert output.stdout.strip() == "['10.0.0.1/32', 'fd00::/8', '192.168.1.0/24']"


def test_a_trusted_proxy_that_is_no_address_stops_the_server_with_its_name(tmp_path):
    output = run_settings({"ASKUSER_TRUSTED_PROXIES": "10.0.0.1,proxy.internal"}, tmp_path)

    assert output.returncode != 0
    assert "ASKUSER_TRUSTED_PROXIES: 'proxy.internal' is not an address or a network" in output.stderr


# --- the scheme a proxy reports ---------------------------------------------------------------


@pytest.fixture
def behind_tls(settings):
    """ASKUSER_HTTPS=1's settings, with one trusted proxy."""
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 3600
    settings.ASKUSER_TRUSTED_PROXIES = [PROXY]
    return settings


def get_from(peer: str, path: str, headers: dict[str, str]) -> httpx.Response:
    """A request through the application production serves, from ``peer``."""
    from controlui.asgi import application

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=application, client=(peer, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://askuser.example") as client:
            return await client.get(path, headers=headers)

    return async_to_sync(get)()


@pytest.mark.django_db(transaction=True)  # Django's handler runs: it closes its connection
@pytest.mark.parametrize("header", ["X-Forwarded-Proto", "X-Forwarded_Proto"])
def test_a_client_that_says_it_came_over_https_is_not_believed_unless_a_trusted_proxy_says_so(behind_tls, header):
    behind_tls.ALLOWED_HOSTS = ["askuser.example"]

    claimed = get_from("203.0.113.7", "/login/", {header: "https"})
    relayed = get_from(PROXY, "/login/", {"X-Forwarded-Proto": "https"})

    assert claimed.status_code == 301 and claimed.headers["location"] == "https://askuser.example/login/"
    assert "strict-transport-security" not in claimed.headers
    assert relayed.status_code == 200 and relayed.headers["strict-transport-security"].startswith("max-age=3600")


@pytest.mark.django_db(transaction=True)
def test_a_route_in_front_of_django_believes_only_a_trusted_proxy_too(behind_tls):
    behind_tls.ALLOWED_HOSTS = ["askuser.example"]
    wait = "/api/v1/prompts/00000000-0000-0000-0000-000000000000?wait=1"  # the long-poll's own 401

    claimed = get_from("203.0.113.7", wait, {"X-Forwarded-Proto": "https"})
    relayed = get_from(PROXY, wait, {"X-Forwarded-Proto": "https"})

    assert "strict-transport-security" not in claimed.headers
    assert relayed.status_code == 401 and "strict-transport-security" in relayed.headers
