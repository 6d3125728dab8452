"""``/metrics``: Prometheus' text format, read with Prometheus' own parser, for this machine or the
holder of the token; a server process that asked, answered and delivered says so."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import auth, log_in, until_sync, wait_until_parked
from tests.servers import DaphneServer, Worker
from tests.webhookfake import WEBHOOK_ENV, Receiver, ask_with_callback, cancel_over_http, finished

TOKEN = "metrics-token-for-the-scraper"
OUTSIDER = {"X-Forwarded-For": "203.0.113.7"}  # relayed by the trusted proxy on 127.0.0.1
CSRF = "metricscsrftokenmetricscsrftoken"  # an unmasked 32-character secret


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of a scrape, parsed as Prometheus parses it: (name, labels) → value."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scrape: dict, name: str, **labels: str) -> float | None:
    return scrape.get((name, frozenset(labels.items())))


@pytest.fixture(scope="module")
def server(server_env):
    env = {**server_env, **WEBHOOK_ENV, "ASKUSER_METRICS_TOKEN": TOKEN, "ASKUSER_TRUSTED_PROXIES": "127.0.0.1"}
    daphne = DaphneServer(env).start()
    yield daphne
    daphne.stop()


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


def scrape(server: DaphneServer, **headers: str) -> httpx.Response:
    return httpx.get(f"{server.url}/metrics", headers=headers, timeout=10)


def answer_in_the_panel(server: DaphneServer, owner, prompt_id: str) -> None:
    cookies = f"sessionid={log_in(owner)}; csrftoken={CSRF}"
    response = httpx.post(
        f"{server.url}/s/support-42/prompts/{prompt_id}/answer",
        data={"q-deploy_target": "0", "action": "answer"},
        headers={"Cookie": cookies, "X-CSRFToken": CSRF, "HX-Request": "true", "Origin": server.url},
        timeout=10,
    )
    assert response.status_code == 200, response.text


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_scrape_after_an_ask_an_answer_and_a_delivery_shows_them(server, receiver, owner, token):
    prompt_id = ask_with_callback(server, token, receiver.url)
    answer_in_the_panel(server, owner, prompt_id)
    until_sync(finished(prompt_id))

    response = scrape(server)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    seen = samples(response.text)
    assert value(seen, "askuser_prompts", status="answered", reason="", surface="web") == 1
    assert value(seen, "askuser_answer_seconds_count", surface="web") == 1
    assert value(seen, "askuser_answer_seconds_bucket", surface="web", le="+Inf") == 1
    assert value(seen, "askuser_delivery_attempts_total", kind="webhooks", outcome="ok") == 1
    assert value(seen, "askuser_delivery_hosts_paused") == 0
    assert value(seen, "askuser_waits_parked") == 0
    assert value(seen, "askuser_sockets_open") == 0
    assert value(seen, "askuser_loop_turns_total", loop="Delivering") >= 1
    assert value(seen, "askuser_loop_failures_total", loop="Delivering") is None  # none failed


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_scrape_changes_nothing_a_scrape_reports(server):
    def steady(text: str) -> dict:
        # The loops may turn between two scrapes; nothing else moves on its own.
        return {key: v for key, v in samples(text).items() if key[0].startswith("askuser_") and "loop" not in key[0]}

    first, second = scrape(server), scrape(server, Authorization=f"Bearer {TOKEN}")

    assert (first.status_code, second.status_code) == (200, 200)
    assert steady(first.text) == steady(second.text)


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_client_outside_is_refused_without_the_token_and_served_with_it(server):
    refused = [
        scrape(server, **OUTSIDER),
        scrape(server, **OUTSIDER, Authorization="Bearer wrong-token"),
        scrape(server, **OUTSIDER, Authorization=TOKEN),  # not as a Bearer token
        # Forwarded, which askuser does not read, names someone else: not this machine.
        scrape(server, Forwarded="for=203.0.113.7"),
    ]
    allowed = scrape(server, **OUTSIDER, Authorization=f"Bearer {TOKEN}")

    assert [response.status_code for response in refused] == [404, 404, 404, 404]
    assert all("askuser_" not in response.text for response in refused)
    assert allowed.status_code == 200
    assert value(samples(allowed.text), "askuser_delivery_hosts_paused") is not None


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_only_reading_is_served(server):
    assert httpx.post(f"{server.url}/metrics", timeout=10).status_code == 404


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_parked_wait_counts_while_it_waits(server, receiver, token):
    prompt_id = ask_with_callback(server, token, receiver.url, session="metrics-wait")
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(
            httpx.get, f"{server.url}/api/v1/prompts/{prompt_id}?wait=20", headers=auth(token), timeout=30
        )
        wait_until_parked(server)

        parked = value(samples(scrape(server).text), "askuser_waits_parked")
        cancel_over_http(server, token, prompt_id)

        assert waiting.result().json()["status"] == "no_answer"
    assert (parked, value(samples(scrape(server).text), "askuser_waits_parked")) == (1, 0)


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_the_workers_loops_are_counted_where_a_scrape_reaches_them(server_env):
    # manage.py worker serves no HTTP; its counters would otherwise be seen by nobody.
    env = {**server_env, "ASKUSER_METRICS_TOKEN": TOKEN, "ASKUSER_TRUSTED_PROXIES": "127.0.0.1"}
    worker = Worker(env, metrics=True).start()
    url = f"{worker.metrics_url}/metrics"
    try:

        def turned() -> bool:
            try:
                scraped = samples(httpx.get(url, timeout=10).text)
            except httpx.TransportError:
                return False
            return all(
                (value(scraped, "askuser_loop_turns_total", loop=name) or 0) >= 1
                for name in ("Expiring prompts", "Delivering")
            )

        until_sync(turned)
        refused = httpx.get(url, headers=OUTSIDER, timeout=10)
        allowed = httpx.get(url, headers={**OUTSIDER, "Authorization": f"Bearer {TOKEN}"}, timeout=10)
        elsewhere = httpx.get(f"{worker.metrics_url}/", timeout=10)
    finally:
        assert worker.stop() == 0, worker.output()

    assert (refused.status_code, elsewhere.status_code) == (404, 404)
    assert "askuser_" not in refused.text
    assert allowed.status_code == 200
    assert value(samples(allowed.text), "askuser_loop_turns_total", loop="Delivering") >= 1
