"""Who a request comes from, behind proxies or not: the one function every per-address rule asks."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest
from django.test import RequestFactory

from askuser_app.runtime import proxies
from tests.servers import DaphneServer

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

TLS_PROXY = "127.0.0.1"  # the trusted proxy; the client claiming TLS comes from 127.0.0.2
WAIT = "/api/v1/prompts/00000000-0000-0000-0000-000000000000?wait=1"  # the long-poll's own 401


class BehindTls(DaphneServer):
    """Daphne with ``ASKUSER_HTTPS=1``: ready once it serves its trusted proxy's https request."""

    def wait_ready(self, within: float = 30.0) -> None:
        try:
            ready = httpx.get(f"{self.url}/api/v1/tool", headers={"X-Forwarded-Proto": "https"}, timeout=within)
            if ready.status_code == 200:
                return
        except httpx.TransportError:
            pass
        raise RuntimeError(f"Daphne on {self.port} did not start:\n{self.output()}")


@pytest.fixture(scope="module")
def behind_tls(server_env):
    daphne = BehindTls({**server_env, "ASKUSER_HTTPS": "1", "ASKUSER_TRUSTED_PROXIES": TLS_PROXY}).start()
    yield daphne
    daphne.stop()


def get_from(server: DaphneServer, source: str, path: str, header: str = "X-Forwarded-Proto") -> httpx.Response:
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, base_url=server.url) as client:
        return client.get(path, headers={header: "https"})


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_client_that_says_it_came_over_https_is_believed_only_from_a_trusted_proxy(behind_tls):
    claimed = get_from(behind_tls, "127.0.0.2", "/login/")
    spelled_otherwise = get_from(behind_tls, "127.0.0.2", "/login/", "X-Forwarded_Proto")
    claimed_wait = get_from(behind_tls, "127.0.0.2", WAIT)
    relayed = get_from(behind_tls, TLS_PROXY, "/login/")
    relayed_wait = get_from(behind_tls, TLS_PROXY, WAIT)

    for plain in (claimed, spelled_otherwise):  # plain HTTP: redirected, no HSTS
        assert plain.status_code == 301 and plain.headers["location"] == f"https://127.0.0.1:{behind_tls.port}/login/"
        assert "strict-transport-security" not in plain.headers
    assert "strict-transport-security" not in claimed_wait.headers  # a route in front of Django alike
    assert relayed.status_code == 200 and "strict-transport-security" in relayed.headers
    assert relayed_wait.status_code == 401 and "strict-transport-security" in relayed_wait.headers
