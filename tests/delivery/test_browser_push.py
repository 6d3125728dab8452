"""Web Push in a real browser: the service worker at /sw.js registers for the whole site, the
settings page's subscribe flow, and a push delivered to that service worker (through the
DevTools protocol's ``ServiceWorker.deliverPushMessage``) shows, then closes, its notification.

What headless chromium allows here: in a Playwright context (off the record) pushManager.subscribe()
rejects at once, "Registration failed - permission denied" (Chrome has no push in incognito); in a
profile on disk it never settles, since Chrome cannot reach its push service (FCM) without the
internet. So the subscribe flow is tested up to that call, and the push itself is delivered by
DevTools, a real push event in the real service worker. A click on a notification has no
DevTools command (and a synthetic one cannot waitUntil), so the tap is what notificationclick
waits on, ``answerFromNotification``, called in the worker with the notification it showed.

The real chain: since headless chromium cannot subscribe to its push service (FCM) offline, the
test makes the subscription's keys itself (``tests/pushfake.py``'s ``Browser``) and links them to
the person; the server then sends its real push (aes128gcm, VAPID-signed) to the push service fake
on 127.0.0.1, which the test decrypts with those keys (``http_ece``) and hands, as the push service
would, to the real service worker through ``ServiceWorker.deliverPushMessage``."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from askuser_app.delivery.channels.chats.core import card
from askuser_app.delivery.channels.push import adapter as push
from askuser_app.models import Prompt, PushSubscription
from tests import pushfake
from tests.browsers import MARKS, WAIT_MS, profile_on_disk
from tests.conftest import QUESTION
from tests.servers import DaphneServer

pytestmark = MARKS


@pytest.fixture(scope="module")
def push_service(tmp_path_factory):
    with pushfake.https(tmp_path_factory.mktemp("push-service")) as service:
        yield service


@pytest.fixture(scope="module")
def server(server_env, push_service):
    """The module's Daphne, sending its pushes to the push service fake (on 127.0.0.1, its
    certificate trusted as OpenSSL reads SSL_CERT_FILE)."""
    env = {
        **server_env,
        "SSL_CERT_FILE": str(push_service.certificate),
        "ASKUSER_PUSH_ALLOW_PRIVATE": "1",
        "ASKUSER_CHAT_RETRY_BASE": "0.05",
        "ASKUSER_PUSH_GRACE": "0",  # pushed at once: these tests follow the push, not the grace
    }
    daphne = DaphneServer(env)
    daphne.env["ASKUSER_PUBLIC_URL"] = daphne.url
    daphne.start()
    yield daphne
    daphne.stop()


@pytest.fixture(scope="module")
def profile(playwright, server):
    """A browser with a profile on disk: Chrome refuses push subscriptions in an off-the-record
    context ("Registration failed - permission denied"), which is what a Playwright context is."""
    with profile_on_disk(playwright, server, "--disable-features=NativeNotifications,SystemNotifications") as context:
        yield context


@pytest.fixture
def page(profile, server, owner):
    client = Client()
    client.force_login(owner)
    profile.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": server.url}])
    profile.grant_permissions(["notifications"], origin=server.url)
    errors: list[str] = []
    page = profile.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    # The settings page, its push script and the service worker all keep to the site's CSP.
    page.on("console", lambda message: errors.append(message.text) if "Security Policy" in message.text else None)
    page.goto("/settings/")
    page.wait_for_selector("#push-state[data-state]", timeout=WAIT_MS)
    yield page
    page.close()
    assert errors == []


def wait_for_state(page, *states: str) -> str:
    selector = ", ".join(f"#push-state[data-state='{state}']" for state in states)
    page.wait_for_selector(selector, timeout=WAIT_MS)
    return page.locator("#push-state").inner_text()


def registration_id(page) -> tuple[str, object]:
    """The service worker's registration, as the DevTools protocol names it, and the session."""
    cdp = page.context.new_cdp_session(page)
    seen: list[dict] = []
    cdp.on("ServiceWorker.workerRegistrationUpdated", lambda event: seen.extend(event["registrations"]))
    page.wait_for_function("() => navigator.serviceWorker.ready.then(() => true)", timeout=WAIT_MS)
    cdp.send("ServiceWorker.enable")  # then reports every registration, as events
    for _tick in range(WAIT_MS // 50):  # events are handled while Playwright is called
        if any(not r["isDeleted"] for r in seen):
            break
        page.wait_for_timeout(50)
    [registration] = {r["registrationId"]: r for r in seen if not r["isDeleted"]}.values()
    return registration["registrationId"], cdp


WAIT_FOR_NOTIFICATIONS = """async (count) => {
  // Inside the service worker: until it shows ``count`` notifications, for at most 10 s.
  const until = Date.now() + 10000;
  for (;;) {
    const all = await self.registration.getNotifications();
    if (all.length === count || Date.now() > until) {
      return all.map(n => ({title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url}));
    }
    await new Promise(resolve => setTimeout(resolve, 50));
  }
}"""


def service_worker(page):
    workers = page.context.service_workers
    return workers[0] if workers else page.context.wait_for_event("serviceworker", timeout=WAIT_MS)


def test_turning_push_on_registers_the_service_worker_for_the_whole_site(page, server):
    assert page.locator("#push-state").get_attribute("data-state") == "off"
    assert page.locator("#push-enable").is_visible()
    # Chrome without the internet never settles pushManager.subscribe() (it keeps trying to reach
    # its push service); the page gives up after its timeout, shortened here.
    page.evaluate("() => { document.getElementById('push-settings').dataset.subscribeTimeout = '1500'; }")

    page.click("#push-enable")

    said = wait_for_state(page, "failed", "on")
    scope = page.evaluate("() => navigator.serviceWorker.getRegistration('/').then(r => r && r.scope)")
    assert scope == f"{server.url}/"
    if page.locator("#push-state").get_attribute("data-state") == "on":  # a browser that reaches its push service
        assert PushSubscription.objects.count() == 1
        return
    assert said == "Notifications could not be turned on: the browser’s push service did not answer."
    assert page.locator("#push-enable").is_visible()  # to try again
    assert not PushSubscription.objects.exists()


def test_the_in_page_notifications_switch_subscribes_this_browser_too(page):
    page.evaluate("() => { document.getElementById('push-settings').dataset.subscribeTimeout = '1500'; }")

    page.evaluate("() => document.dispatchEvent(new CustomEvent('askuser:notifications-on'))")

    # The same subscribe as the settings button, so the same end here (see the test above).
    said = wait_for_state(page, "failed", "on")
    assert "push service" in said or PushSubscription.objects.exists()


# Records, inside the service worker, each notification it asks the browser to show and close;
# the browser's own calls still run. (Headless chromium lists a shown notification in
# getNotifications() only most of the time, so the test reads what the worker did.)
SPY = """() => {
  self.shown = []; self.closed = [];
  // The browser's own, once: a worker that lives on from an earlier test is spied on again, not twice.
  const show = self.realShow = self.realShow || ServiceWorkerRegistration.prototype.showNotification;
  ServiceWorkerRegistration.prototype.showNotification = function (title, options) {
    return show.call(this, title, options).then(() => {
      self.shown.push({title, body: options.body, tag: options.tag, url: options.data.url});
    });
  };
  const close = self.realClose = self.realClose || Notification.prototype.close;
  Notification.prototype.close = function () { self.closed.push(this.tag); return close.call(this); };
  return self.registration.active.state;
}"""
WAIT_FOR = """async (what) => {
  const until = Date.now() + 10000;
  while (self[what.list].length < what.count && Date.now() < until) await new Promise(r => setTimeout(r, 50));
  return self[what.list];
}"""


def test_a_push_shows_its_notification_and_the_closing_push_takes_it_away(page, server):
    page.evaluate("() => navigator.serviceWorker.register('/sw.js', {scope: '/'})")
    registration, cdp = registration_id(page)
    worker = service_worker(page)
    assert worker.evaluate(SPY) == "activated"
    prompt = "7b0c2a4e-4a8e-4a47-9f55-3d2b1f1f0c11"
    shown = {
        "type": "prompt",
        "tag": f"askuser-{prompt}",
        "title": "helper asks: Deploy",
        "body": "Where should this release go first?",
        "url": f"https://askuser.example.com/p/{prompt}/",
        "prompt_id": prompt,
    }

    def deliver(message: dict) -> None:
        # A real push event in the real service worker (the browser decrypts before it: plain data).
        data = json.dumps(message)
        cdp.send(
            "ServiceWorker.deliverPushMessage", {"origin": server.url, "registrationId": registration, "data": data}
        )

    deliver(shown)
    assert worker.evaluate(WAIT_FOR, {"list": "shown", "count": 1}) == [
        {
            "title": "helper asks: Deploy",
            "body": "Where should this release go first?",
            "tag": f"askuser-{prompt}",
            "url": f"https://askuser.example.com/p/{prompt}/",
        }
    ]
    # The same prompt again (as the page's own notification would be) replaces it: one at most.
    deliver({**shown, "body": "Again"})
    assert [n["body"] for n in worker.evaluate(WAIT_FOR, {"list": "shown", "count": 2})] == [shown["body"], "Again"]
    assert len(worker.evaluate(WAIT_FOR_NOTIFICATIONS, 1)) <= 1

    listed = worker.evaluate("() => self.registration.getNotifications().then(all => all.length)")
    deliver({"type": "closed", "tag": f"askuser-{prompt}"})

    assert worker.evaluate(WAIT_FOR_NOTIFICATIONS, 0) == []
    if listed:  # what the browser listed, the closing push closed
        assert worker.evaluate(WAIT_FOR, {"list": "closed", "count": 1}) == [f"askuser-{prompt}"]


def test_with_the_service_worker_running_the_page_hands_its_notification_to_it(page, agent_api):
    # A page notification and a worker's are kept apart whatever their tags; from the worker,
    # the push for the same prompt replaces it instead of showing a second one.
    page.evaluate("() => navigator.serviceWorker.register('/sw.js', {scope: '/'})")
    page.wait_for_function("() => navigator.serviceWorker.ready.then(r => !!r.active)", timeout=WAIT_MS)
    page.evaluate(
        """() => {
          window.fromThePage = 0; window.fromTheWorker = [];
          const Real = window.Notification;
          window.Notification = function (title, options) { window.fromThePage++; return new Real(title, options); };
          Object.defineProperty(window.Notification, "permission", {get: () => Real.permission});
          const show = ServiceWorkerRegistration.prototype.showNotification;
          ServiceWorkerRegistration.prototype.showNotification = function (title, options) {
            window.fromTheWorker.push(options.tag);
            return show.call(this, title, options);
          };
          localStorage.setItem("askuser-notifications", "on");
        }"""
    )

    prompt_id = agent_api.ask(QUESTION)

    page.wait_for_function("() => window.fromTheWorker.length === 1", timeout=WAIT_MS)
    assert page.evaluate("() => window.fromTheWorker") == [f"askuser-{prompt_id}"]
    assert page.evaluate("() => window.fromThePage") == 0


# Inside the service worker, before any push: each count it gives the app's badge, read by replacing
# navigator.setAppBadge in the worker's own scope (Playwright's evaluate: CDP Runtime.evaluate there).
BADGE_SPY = """() => {
  self.badges = [];
  navigator.setAppBadge = function (count) { self.badges.push(count); return Promise.resolve(); };
  return typeof navigator.setAppBadge;
}"""


class Relay:
    """The push service's last step: what the server pushed to this browser's subscription, decrypted
    with its keys, delivered to the service worker as chromium's push service would."""

    def __init__(self, page, server, push_service, owner) -> None:
        self.service = push_service
        self.name = f"chromium-{owner.pk}"
        self.browser = pushfake.Browser(push_service.endpoint(self.name))
        keys = self.browser.to_json()["keys"]
        PushSubscription.objects.create(
            user=owner, endpoint=self.browser.endpoint, p256dh=keys["p256dh"], auth=keys["auth"], device="Chrome"
        )
        self.server, self.delivered, self.token = server, 0, ""
        self.registration, self.cdp = registration_id(page)

    def next(self) -> dict:
        """Wait for the server's next push, deliver it; what it said."""
        self.delivered += 1
        received = self.service.wait_for(self.name, self.delivered)[self.delivered - 1]
        plain = self.browser.plain(received.body)
        self.cdp.send(
            "ServiceWorker.deliverPushMessage",
            {"origin": self.server.url, "registrationId": self.registration, "data": plain},
        )
        return json.loads(plain)


def answer_elsewhere(page, token: str, key: str, prompt_id: str, option: int) -> None:
    """The person answers from another device of theirs (the panel's form, as it posts)."""
    answered = page.request.post(
        f"/s/{key}/prompts/{prompt_id}/answer", form={"q-deploy_target": str(option)}, headers={"X-CSRFToken": token}
    )
    assert answered.ok, answered.status


@pytest.fixture
def relay(page, server, push_service, owner):
    page.evaluate("() => navigator.serviceWorker.register('/sw.js', {scope: '/'})")
    relay = Relay(page, server, push_service, owner)
    worker = service_worker(page)
    assert worker.evaluate(SPY) == "activated"
    assert worker.evaluate(BADGE_SPY) == "function"
    relay.token = page.evaluate("() => JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken']")
    # No askuser page stays open: only the pushes show notifications, as on a locked phone.
    page.goto("about:blank")
    return relay, worker


def test_the_servers_real_push_shows_the_new_prompt_and_its_closing_push_closes_it(relay, agent_api, page):
    relay, worker = relay
    prompt_id = agent_api.ask(QUESTION, session="support-1")

    pushed = relay.next()

    assert pushed["type"] == "prompt"
    [shown] = worker.evaluate(WAIT_FOR, {"list": "shown", "count": 1})
    assert shown == {
        "title": "helper asks: Deploy",
        "body": "Where should this release go first?",
        "tag": f"askuser-{prompt_id}",
        "url": f"{relay.server.url}/p/{prompt_id}/",
    }

    answer_elsewhere(page, relay.token, "support-1", prompt_id, 1)
    closing = relay.next()

    assert (closing["type"], closing["tag"]) == ("closed", f"askuser-{prompt_id}")
    # The worker closed the notification of that tag (what it did: see SPY on headless listings).
    assert worker.evaluate(WAIT_FOR, {"list": "closed", "count": 1}) == [f"askuser-{prompt_id}"]


def test_two_prompts_two_notifications_and_the_badge_counts_what_waits(relay, agent_api, page):
    relay, worker = relay
    first = agent_api.ask(QUESTION, session="support-1")
    relay.next()
    assert worker.evaluate(WAIT_FOR, {"list": "badges", "count": 1}) == [1]
    second = agent_api.ask(QUESTION, session="support-2")
    relay.next()

    assert worker.evaluate(WAIT_FOR, {"list": "badges", "count": 2}) == [1, 2]
    shown = worker.evaluate(WAIT_FOR, {"list": "shown", "count": 2})
    assert [n["tag"] for n in shown] == [f"askuser-{first}", f"askuser-{second}"]

    answer_elsewhere(page, relay.token, "support-1", first, 0)
    relay.next()

    assert worker.evaluate(WAIT_FOR, {"list": "badges", "count": 3}) == [1, 2, 1]
    if worker.evaluate(WAIT_FOR, {"list": "closed", "count": 1}):
        assert worker.evaluate("() => self.closed") == [f"askuser-{first}"]


# The notification the push showed, as the worker hands it to notificationclick, tapped: its
# button's id, as ``event.action`` names it (``answerFromNotification`` is what the listener waits on).
TAP = """async ({tag, action}) => {
  const until = Date.now() + 10000;
  let shown = [];
  while (!shown.length && Date.now() < until) {
    shown = await self.registration.getNotifications({tag});
    if (!shown.length) await new Promise(resolve => setTimeout(resolve, 50));
  }
  if (!shown.length) return null;
  const notification = shown[0];
  self.tapped = notification;
  const buttons = notification.actions.map(a => a.action);
  const said = await answerFromNotification(notification, action);
  const left = await self.registration.getNotifications({tag});
  return {buttons, most: Notification.maxActions, requireInteraction: notification.requireInteraction,
          said, left: left.map(n => ({body: n.body, actions: n.actions.length}))};
}"""
TAP_AGAIN = """async (action) => {
  const said = await answerFromNotification(self.tapped, action);
  const left = await self.registration.getNotifications({tag: self.tapped.tag});
  return {said, left: left.map(n => n.body)};
}"""


def test_a_notifications_button_answers_without_opening_the_page_once(page, server, owner, agent_api):
    page.evaluate("() => navigator.serviceWorker.register('/sw.js', {scope: '/'})")
    registration, cdp = registration_id(page)
    worker = service_worker(page)
    # This tab's own notification (turned on by the test above, in this profile) would take the
    # same tag, buttonless, whenever it came after the push: only the push's is wanted here.
    page.evaluate("() => localStorage.setItem('askuser-notifications', 'off')")
    prompt_id = agent_api.ask(QUESTION)
    waiting = agent_api.wait(prompt_id)  # the agent, waiting through the API it uses
    # This browser's device, as its subscription would be stored (headless chromium cannot reach a
    # push service to subscribe); the push the server makes for it, delivered as the browser would.
    device = PushSubscription.objects.create(
        user=owner, endpoint="https://push.invalid/device", p256dh="k", auth="a", device="Chrome on Linux"
    )
    _row, message = push.ready(device.pk, card(Prompt.objects.get(pk=prompt_id)))
    cdp.send(
        "ServiceWorker.deliverPushMessage",
        {"origin": server.url, "registrationId": registration, "data": json.dumps(message)},
    )

    opened = [tab.url for tab in page.context.pages]

    tapped = worker.evaluate(TAP, {"tag": f"askuser-{prompt_id}", "action": "option-1"})

    assert tapped is not None, "the push showed no notification"
    # Chromium shows two buttons: both options; Mute this session had no room.
    assert tapped["most"] == 2 and tapped["buttons"] == ["option-0", "option-1"]
    assert tapped["requireInteraction"] is False
    assert tapped["said"] == {"status": 200, "message": "Answered: Production — by alice from a notification"}
    assert tapped["left"] == []  # the notification closed; no page opened
    result = waiting.result(timeout=WAIT_MS / 1000)
    assert (result["status"], result["surface"], result["resolved_by"]) == ("answered", "push", "alice")
    assert result["answers"] == {"answers": {"deploy_target": ["Production"]}}
    assert [tab.url for tab in page.context.pages] == opened

    again = worker.evaluate(TAP_AGAIN, "option-1")

    assert again["said"]["status"] == 409
    assert again["said"]["message"].startswith("This prompt was already answered from a notification by alice")
    assert again["left"] == [again["said"]["message"]]  # why nothing happened, shown in its place
