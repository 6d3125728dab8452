"""The delivery engine shares its attempts out per owner first, then per host: one person's slow
or silent receivers never hold up another person's deliveries; and a process killed mid-attempt
loses nothing.

A silent host is a listening socket that is never read: the kernel accepts each connection, and
no answer ever comes (for https, not even the TLS handshake's).
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import socket
import statistics
import sys
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from asgiref.sync import sync_to_async
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from askuser_app.delivery import egress, engine, names
from askuser_app.delivery.channels.chats import core
from askuser_app.delivery.engine import Busy, Outcome, Tried
from askuser_app.domain import addresses, contract, services
from askuser_app.models import (
    Delivery,
    DeliveryAttempt,
    DeliveryHost,
    PushSubscription,
    WebhookAttempt,
    WebhookDelivery,
)
from askuser_app.runtime.asyncdb import database_call
from tests.conftest import SCALED, SCALED_REASON, asgi_request, payload
from tests.dnsfake import FakeDNS
from tests.servers import DaphneServer, serve_in_thread
from tests.webhookfake import Receiver

DEADLINE = 2.0  # seconds another owner's delivery may take, however busy the engine is with the first's
SETTLE = 20.0  # seconds for what the engine has in flight to be recorded
BOT = "123456:TEST-token"
SLOW_NAMES = 24  # one owner's callback hosts whose names never resolve
LATE_CALLBACK = 5.0  # seconds a lookup left open would take to call back (1.8 s measured)


class Silent:
    """Hosts that accept TCP connections and never answer."""

    def __init__(self, hosts: Iterable[str]) -> None:
        self.sockets: list[socket.socket] = []
        for host in hosts:
            listening = socket.socket()
            listening.bind((host, 0))
            listening.listen(128)
            self.sockets.append(listening)

    def urls(self, scheme: str, path: str) -> list[str]:
        return [f"{scheme}://{host}:{port}{path}" for host, port in (s.getsockname() for s in self.sockets)]

    def close(self) -> None:
        """Every connection they hold is reset: what is in flight to them ends at once."""
        for listening in self.sockets:
            listening.close()


async def found(find: Any, within: float = SETTLE) -> Any:
    """Poll the database until ``find()`` returns something true."""
    end = time.monotonic() + within
    while not (result := await sync_to_async(find)()):
        assert time.monotonic() < end, "condition not reached in time"
        await asyncio.sleep(0.02)
    return result


def ask_and_cancel(agent: Any, url: str, session: str) -> None:
    """A prompt with a callback, resolved at once: its result is due at ``url``."""
    prompt = services.ask(agent, contract.parse_create(payload(session=session, callback_url=url))).prompt
    services.cancel(prompt, agent=agent)


def all_recorded(attempts: Any, rows: Any, count_field: str) -> Any:
    """Every attempt claimed on ``rows`` so far has been recorded (none is in flight)."""
    return lambda: attempts.count() >= sum(rows.values_list(count_field, flat=True))


# --- one person's silent push devices, another person's Telegram message -----------------------


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def devices(user: Any, endpoints: list[str]) -> None:
    """Push subscriptions as browsers make them: a P-256 key and an auth secret each."""
    for endpoint in endpoints:
        key = ec.generate_private_key(ec.SECP256R1()).public_key()
        point = key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        auth = b64url(secrets.token_bytes(16))
        PushSubscription.objects.create(user=user, endpoint=endpoint, p256dh=b64url(point), auth=auth)


def sent_message(call: Any) -> tuple[int, dict[str, Any]]:
    chat = int(call.body["chat_id"])
    message = {"message_id": 1, "date": 1_700_000_000, "chat": {"id": chat, "type": "private"}, "text": "…"}
    return 200, {"ok": True, "result": message}


@pytest.mark.django_db(transaction=True)
async def test_one_users_silent_push_devices_do_not_delay_another_users_telegram_message(
    settings,
    fake_api,
    agent,
    owner,
    other_user,
):
    settings.ASKUSER_PUSH_ALLOW_PRIVATE = True  # the silent push service is on 127.0.0.1
    settings.ASKUSER_PUSH_GRACE = 0  # pushed at once
    settings.TELEGRAM_BOT_TOKEN, settings.TELEGRAM_API_URL = BOT, fake_api.url
    fake_api.route("POST", f"/bot{BOT}/sendMessage", sent_message)
    silent = Silent(["127.0.0.1"])
    pushes = Delivery.objects.filter(channel="push")
    try:
        [endpoint] = silent.urls("https", "/push/")
        await database_call(devices)(owner, [f"{endpoint}{n}" for n in range(24)])
        other_agent, _token = await database_call(services.create_agent)("other", other_user)
        await database_call(core.link_by_hand)(other_user, "telegram", "777", chat_id="777")
        await database_call(services.ask)(agent, contract.parse_create(payload()))
        engine.ensure_running()
        await found(lambda: pushes.filter(attempts__gte=1).count() >= 2)  # the engine is busy with them

        await database_call(services.ask)(other_agent, contract.parse_create(payload()))

        await asyncio.to_thread(fake_api.wait_for, f"/bot{BOT}/sendMessage", timeout=DEADLINE)
    finally:
        await database_call(pushes.update)(state="failed")  # no more tries…
        silent.close()  # …and those in flight end at once
        attempts = DeliveryAttempt.objects.filter(delivery__channel="push")
        await found(all_recorded(attempts, pushes, "attempts"))


# --- one owner's 64 slow webhook hosts, another owner's webhook ---------------------------------


@pytest.mark.django_db(transaction=True)
async def test_64_slow_webhook_hosts_of_one_owner_do_not_delay_another_owners_webhook(settings, agent, other_user):
    settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE = True  # the hosts are loopback addresses
    silent, fast = Silent(f"127.0.0.{n}" for n in range(2, 66)), Receiver()
    slow = WebhookDelivery.objects.filter(owner=other_user)
    try:
        slow_agent, _token = await database_call(services.create_agent)("slow", other_user)
        for n, url in enumerate(silent.urls("http", "/hook")):
            await database_call(ask_and_cancel)(slow_agent, url, f"slow-{n}")
        engine.ensure_running()
        await found(lambda: slow.filter(attempt_count__gte=1).count() >= 8)  # the engine is busy with them

        await database_call(ask_and_cancel)(agent, fast.url, "fast")

        assert await asyncio.to_thread(fast.arrived.wait, DEADLINE), "the other owner's webhook waited"
        delivered = await found(
            lambda: WebhookDelivery.objects.filter(owner_id=agent.owner_id, status="delivered").first()
        )
        assert json.loads(fast.requests[0][1])["id"] == str(delivered.prompt_id)
    finally:
        await database_call(slow.update)(status="failed")  # no more attempts…
        silent.close()  # …and those in flight end at once
        fast.close()
        await found(all_recorded(WebhookAttempt.objects.filter(delivery__in=slow), slow, "attempt_count"))


# --- one owner's backlog of 30,000 due messages, another owner's hooks and message -------------

BACKLOG = 30_000
ROUNDS, ROUND_TRIPS = 3, 10  # hook calls without and with the backlog in turn, so both see the same machine
WAITING = {
    "session_id": "5f1c2e7a-1d2b-4c11-9a3e-0b6f7f4d2e10",
    "transcript_path": "/home/alice/.claude/projects/x.jsonl",
    "cwd": "/home/alice/app",
    "hook_event_name": "Notification",
    "notification_type": "idle_prompt",
    "message": "Claude is idle",
}


def backlog(user: Any, link: Any) -> None:
    """``BACKLOG`` news for ``user``'s Telegram chat, all due, written in one bulk insert."""
    rows = (
        Delivery(
            owner=user, channel="telegram", link=link, address=link.chat_id, host="telegram", notice=f"news {n}", ref={}
        )
        for n in range(BACKLOG)
    )
    Delivery.objects.bulk_create(rows, batch_size=2_000)
    set_aside(user, False)  # (and checkpointed)


def set_aside(user: Any, aside: bool) -> None:
    """``user``'s backlog out of the engine's way (not due: as if it were not there), or back."""
    was, now = ("to_send", "dropped") if aside else ("dropped", "to_send")
    Delivery.objects.filter(owner=user, state=was).update(state=now)
    if connection.vendor == "sqlite":
        # Written into SQLite's log now: otherwise the next commit, a hook's, copies 30,000 rows' pages.
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")


async def hook_round_trips(token: str, count: int = ROUND_TRIPS) -> list[float]:
    """The times of ``count`` hook calls, each a Notification that returns at once."""
    body = json.dumps(WAITING).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    times = []
    for _n in range(count):
        began = time.monotonic()
        response = await asgi_request("POST", "/api/v1/hooks", content=body, headers=headers)
        times.append(time.monotonic() - began)
        assert (response.status_code, response.json()) == (200, {})
    return times


def sent_to(fake: Any, chat: str) -> Any:
    return lambda: [call for call in fake.of(f"/bot{BOT}/sendMessage") if str(call.body["chat_id"]) == chat]


@pytest.mark.django_db(transaction=True)
async def test_30000_due_messages_of_one_owner_slow_neither_another_owners_hooks_nor_her_message(
    settings, fake_api, owner, token, other_user
):
    settings.TELEGRAM_BOT_TOKEN, settings.TELEGRAM_API_URL = BOT, fake_api.url
    settings.TELEGRAM_WEBHOOK_SECRET = "s3cret"  # no polling: the chat's answers come by webhook
    fake_api.route("POST", f"/bot{BOT}/sendMessage", sent_message)
    await database_call(core.link_by_hand)(owner, "telegram", "4242", chat_id="4242")
    theirs = await database_call(core.link_by_hand)(other_user, "telegram", "888", chat_id="888")
    engine.ensure_running()
    await hook_round_trips(token, 3)  # the first calls load what every later one uses
    await found(sent_to(fake_api, "4242"))
    await database_call(backlog)(other_user, theirs)

    # A busy machine's load drifts over seconds: the calls without and with the backlog take turns.
    without, busy = [], []
    for _round in range(ROUNDS):
        await database_call(set_aside)(other_user, True)
        without += await hook_round_trips(token)
        await database_call(set_aside)(other_user, False)
        engine.wake()
        sent = len(sent_to(fake_api, "888")())
        await found(lambda sent=sent: len(sent_to(fake_api, "888")()) >= sent + 10)  # the engine is busy with them
        mine = len(sent_to(fake_api, "4242")())
        busy += await hook_round_trips(token)
        await found(lambda mine=mine: len(sent_to(fake_api, "4242")()) > mine, within=DEADLINE)

    baseline, loaded = statistics.median(without), statistics.median(busy)
    assert loaded <= 2 * baseline, f"a hook took {loaded * 1000:.0f} ms, {baseline * 1000:.0f} ms without the backlog"


def rows_read(plan: dict[str, Any]) -> int:
    """The rows every node of a PostgreSQL plan (EXPLAIN ANALYZE, JSON) read: returned or filtered out."""
    own = (plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0)) * plan.get("Actual Loops", 1)
    return own + sum(rows_read(child) for child in plan.get("Plans", []))


@pytest.mark.skipif(not SCALED, reason=SCALED_REASON)
@pytest.mark.django_db
def test_a_turn_steps_over_a_busy_hosts_30000_due_rows_to_the_owners_other_host_without_reading_them(settings, owner):
    settings.TELEGRAM_BOT_TOKEN, settings.TELEGRAM_API_URL = BOT, "http://127.0.0.1:9"
    backlog(owner, core.link_by_hand(owner, "telegram", "888", chat_id="888"))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the planner knows the backlog is there
    busy = Busy.of(engine.claim_due())  # two to Telegram: it is at its limit for this owner
    Delivery.objects.create(owner=owner, channel="email", address="a@example.com", host="email", notice="n")

    with CaptureQueriesContext(connection) as read:
        [claimed] = engine.claim_due(engine.SLOTS, busy)

    assert claimed.host == "email"  # the owner's other host takes its turn
    with connection.cursor() as cursor:
        for query in [query["sql"] for query in read.captured_queries if query["sql"].startswith("SELECT")]:
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}")
            [[plan]] = cursor.fetchone()
            assert rows_read(plan["Plan"]) <= 500, query  # a few rows, never the backlog


@pytest.mark.skipif(SCALED, reason="SQLite's planner; PostgreSQL's reads are the test above")
@pytest.mark.django_db
def test_on_sqlite_a_turn_reads_the_due_rows_down_the_partial_indexes_made_for_them(settings, owner):
    settings.TELEGRAM_BOT_TOKEN, settings.TELEGRAM_API_URL = BOT, "http://127.0.0.1:9"
    link = core.link_by_hand(owner, "telegram", "888", chat_id="888")
    rows = (
        Delivery(owner=owner, channel="telegram", link=link, address="888", host="telegram", notice=f"news {n}")
        for n in range(BACKLOG)
    )
    Delivery.objects.bulk_create(rows, batch_size=2_000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the planner knows the backlog is there
    busy = Busy.of(engine.claim_due())  # two to Telegram: it is at its limit for this owner
    Delivery.objects.create(owner=owner, channel="email", address="a@example.com", host="email", notice="n")
    executed: list[tuple[str, Any]] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        executed.append((sql, params))  # as the engine sends it: its values bound, not written in
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        [claimed] = engine.claim_due(engine.SLOTS, busy)
        engine.next_due(timezone.now())

    assert claimed.host == "email"
    due = [
        (sql, params)
        for sql, params in executed
        if sql.startswith("SELECT") and '"askuser_app_delivery"' in sql and '"next_attempt_at" <' in sql
    ]
    assert len(due) >= 3  # the owners with rows due, the owner's oldest, each host's oldest; the next due
    with connection.cursor() as cursor:
        for sql, params in due:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            plan = " / ".join(str(row[-1]) for row in cursor.fetchall())
            # Down a due index, never through the owner's every row (its foreign key's index) or a scan.
            assert "USING INDEX delivery_" in plan and "owner_id_" not in plan and "SCAN U0" not in plan, plan


# --- the rules, one claim at a time ------------------------------------------------------------


@pytest.mark.django_db
def test_an_owner_alone_leaves_a_share_of_the_slots_free_and_another_owner_takes_one(settings, agent, other_user):
    settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE = True
    busy_agent, _token = services.create_agent("busy", other_user)
    for n in range(30):
        ask_and_cancel(busy_agent, f"http://10.0.0.{n + 1}/hook", f"busy-{n}")

    theirs = engine.claim_due(8)
    ask_and_cancel(agent, "http://10.0.1.1/hook", "mine")
    then = engine.claim_due(8, Busy.of(theirs))

    assert len(theirs) == 4  # half the slots: the other half is one share kept free
    assert [claim.owner_id for claim in then] == [agent.owner_id]  # the newcomer's, not more of theirs


@pytest.mark.django_db
def test_within_an_owner_each_host_takes_at_most_two_attempts_in_turn(settings, agent, owner):
    settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE = True
    for n in range(5):
        ask_and_cancel(agent, f"http://10.0.0.1/hook/{n}", f"one-{n}")
    ask_and_cancel(agent, "http://10.0.0.2/hook", "two")

    claimed = engine.claim_due()

    assert sorted(claim.host for claim in claimed) == ["10.0.0.1:80", "10.0.0.1:80", "10.0.0.2:80"]


@pytest.mark.django_db
def test_a_push_service_that_keeps_timing_out_pauses_and_its_first_answer_ends_the_pause(settings, agent, owner):
    settings.ASKUSER_PUSH_ALLOW_PRIVATE = True
    settings.ASKUSER_PUSH_GRACE = 0  # pushed at once
    devices(owner, [f"https://slow.example/p/{n}" for n in range(3)] + ["https://fast.example/p/1"])
    services.ask(agent, contract.parse_create(payload()))
    claimed = engine.claim_due()
    slow = [claim for claim in claimed if claim.host == "slow.example:443"]
    assert len(slow) == 2 and len(claimed) == 3  # the slow service's third device waits its turn

    engine.record(slow[0], Tried(Outcome(False, "ReadTimeout", timed_out=True), timezone.now(), 29_000))
    pause = DeliveryHost.objects.get(host="slow.example:443")
    assert engine.claim_due() == []  # its third device, due now, waits out the pause too
    waiting = Delivery.objects.get(host="slow.example:443", attempts=0)
    assert pause.timeouts == 1 and waiting.next_attempt_at == pause.paused_until

    engine.record(slow[1], Tried(Outcome(True, answered=True, ref={"subscription": 1}), timezone.now(), 80))
    assert DeliveryHost.objects.filter(host="slow.example:443", timeouts=0, paused_until=None).exists()


# --- a process killed mid-attempt ----------------------------------------------------------------


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
async def test_a_webhook_cut_off_by_a_crash_is_sent_again_after_the_restart_and_recorded_once(server_env, owner, token):
    receiver = Receiver()
    receiver.release.clear()  # the first attempt is held in flight…
    env = {**server_env, "ASKUSER_WEBHOOK_ALLOW_PRIVATE": "1"}
    env |= {"ASKUSER_WEBHOOK_TIMEOUT": "1", "ASKUSER_CONNECT_TIMEOUT": "1", "ASKUSER_WEBHOOK_RETRY_BASE": "0.2"}
    first = DaphneServer(env).start()
    try:
        created = httpx.post(
            f"{first.url}/api/v1/prompts",
            json=payload(callback_url=receiver.url),
            headers={"Authorization": f"Bearer {token}"},
        )
        prompt_id = created.json()["id"]
        httpx.post(f"{first.url}/api/v1/prompts/{prompt_id}/cancel", headers={"Authorization": f"Bearer {token}"})
        assert await asyncio.to_thread(receiver.arrived.wait, SETTLE)
        first.kill()  # …when its server dies
        receiver.release.set()
        second = DaphneServer(env, port=first.port).start()  # started with its engine, as serve starts it
        try:
            delivery = await found(
                lambda: WebhookDelivery.objects.filter(prompt_id=prompt_id, status="delivered").first()
            )
        finally:
            second.stop()
    finally:
        first.stop()
        receiver.close()

    attempts = await database_call(lambda: list(delivery.attempts.values_list("number", "status_code")))()
    assert attempts == [(2, 204)]  # the dead process recorded nothing; the new one its one success
    assert [headers["Askuser-Attempt"] for headers, _body in receiver.requests] == ["1", "2"]
    assert len({body for _headers, body in receiver.requests}) == 1  # the same result, once more


# --- one owner's names that never resolve, another owner's webhook -----------------------------


@pytest.mark.django_db(transaction=True)
async def test_one_owners_names_that_never_resolve_do_not_delay_another_owners_webhook(settings, agent, other_user):
    dns, fast = FakeDNS({"alice-hooks.test": ["127.0.0.1"]}), Receiver()  # every other name: never answered
    settings.ASKUSER_DNS_SERVERS = [dns.address]
    settings.ASKUSER_WEBHOOK_ALLOW_HOSTS = ["127.0.0.1/32"]  # the receiver's address, checked once resolved
    slow = WebhookDelivery.objects.filter(owner=other_user)
    try:
        slow_agent, _token = await database_call(services.create_agent)("slow", other_user)
        for n in range(SLOW_NAMES):
            await database_call(ask_and_cancel)(slow_agent, f"http://tarpit-{n}.test/hook", f"slow-{n}")
        engine.ensure_running()
        await found(lambda: slow.filter(attempt_count__gte=1).count() >= 8)  # the engine is busy with them
        assert await asyncio.to_thread(dns.silent_for.wait, DEADLINE)  # and their lookups hang

        port = urlsplit(fast.url).port
        await database_call(ask_and_cancel)(agent, f"http://alice-hooks.test:{port}/askuser-hook", "fast")

        assert await asyncio.to_thread(fast.arrived.wait, DEADLINE), "the other owner's webhook waited"
        assert fast.requests[0][0]["Host"] == f"alice-hooks.test:{port}"
        assert not await database_call(DeliveryHost.objects.filter(owner_id=agent.owner_id).exists)()
    finally:
        await database_call(slow.update)(status="failed")  # no more attempts…
        dns.close()  # …and the lookups in flight end at once
        fast.close()
        await found(all_recorded(WebhookAttempt.objects.filter(delivery__in=slow), slow, "attempt_count"))


@pytest.mark.backend_neutral
async def test_a_resolved_name_is_checked_for_every_address_and_sent_to_the_one_checked(settings):
    names = {"inside.test": ["10.1.2.3"], "mixed.test": ["93.184.216.34", "127.0.0.1"]}
    dns = FakeDNS(names | {"public.test": ["93.184.216.34"]})
    settings.ASKUSER_DNS_SERVERS = [dns.address]
    try:
        for name in names:
            with pytest.raises(egress.Refused, match="private address"):
                await egress.pin(f"http://{name}/hook", addresses.webhook_rules())
        pinned = await egress.pin("https://public.test:8443/hook", addresses.webhook_rules())
        dns.names["public.test"] = ["127.0.0.1"]  # rebound: the answer kept for its TTL is used and was checked
        again = await egress.pin("https://public.test:8443/hook", addresses.webhook_rules())
    finally:
        dns.close()

    assert pinned == again
    assert (str(pinned.url), pinned.host_header) == ("https://93.184.216.34:8443/hook", "public.test:8443")
    assert pinned.extensions == {"sni_hostname": "public.test"}


@pytest.mark.backend_neutral
def test_a_lookup_given_up_on_calls_nothing_back_once_its_event_loop_has_closed(settings):
    dns = FakeDNS({})  # never answers
    settings.ASKUSER_DNS_SERVERS = [dns.address]
    called_back, errors = threading.Event(), []

    def unraisable(report: Any) -> None:  # where "Event loop is closed" from c-ares' thread goes
        errors.append(report.exc_value)
        called_back.set()

    was, sys.unraisablehook = sys.unraisablehook, unraisable
    try:
        with pytest.raises(TimeoutError):
            asyncio.run(names.resolve("tarpit.test", 80, 0.2))  # given up on; then the loop closes
        dns.close()  # a query c-ares still has to retry fails at once (within 2 s)
        assert not called_back.wait(LATE_CALLBACK), errors
    finally:
        sys.unraisablehook = was
        dns.close()


# --- one owner's slow path on a host another owner also uses ------------------------------------


class SlowPath:
    """A receiver whose ``/slow`` path never answers in time; any other path answers at once."""

    def __init__(self) -> None:
        self.arrived, self.closing = threading.Event(), threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                if self.path.startswith("/slow"):
                    receiver.closing.wait(SETTLE)
                else:
                    receiver.arrived.set()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        self.stop = serve_in_thread(self.httpd)

    def close(self) -> None:
        self.closing.set()
        self.stop()


@pytest.mark.django_db(transaction=True)
async def test_one_owners_slow_path_pauses_a_shared_host_for_that_owner_only(settings, agent, other_user):
    settings.ASKUSER_WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on 127.0.0.1
    settings.ASKUSER_WEBHOOK_TIMEOUT = 0.5  # the slow path times out soon…
    settings.ASKUSER_WEBHOOK_RETRY_BASE = 60.0  # …and a pause lasts a minute
    shared = SlowPath()
    slow = WebhookDelivery.objects.filter(owner=other_user)
    try:
        slow_agent, _token = await database_call(services.create_agent)("slow", other_user)
        for n in range(2):
            await database_call(ask_and_cancel)(slow_agent, f"{shared.url}/slow/{n}", f"slow-{n}")
        engine.ensure_running()
        pause = await found(lambda: DeliveryHost.objects.filter(paused_until__isnull=False).first())

        await database_call(ask_and_cancel)(agent, f"{shared.url}/fast", "fast")

        assert await asyncio.to_thread(shared.arrived.wait, DEADLINE), "the other owner's webhook waited"
        assert pause.owner_id == other_user.pk
        assert not await database_call(DeliveryHost.objects.filter(owner_id=agent.owner_id).exists)()
    finally:
        await database_call(slow.update)(status="failed")
        shared.close()
        await found(all_recorded(WebhookAttempt.objects.filter(delivery__in=slow), slow, "attempt_count"))
