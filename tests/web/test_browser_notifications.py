"""What waits for the person, in a real browser: the title's count across
sessions, the header's link to the oldest, and desktop notifications shown
once however many tabs are open."""

from __future__ import annotations

import httpx
import pytest

from tests.browsers import MARKS, WAIT_MS, Human, panel_open, shot

pytestmark = MARKS

# From before the page's scripts run: every notification the page constructs and
# every permission request it makes is recorded, then handed to the browser's own.
RECORDER = """
window.shownNotifications = [];
window.permissionRequests = 0;
window.liveOpens = 0;
document.addEventListener("htmx:wsOpen", () => window.liveOpens++);
if (window.Notification) {
  const Real = window.Notification;
  const Recording = function (title, options) {
    const record = {title: title, body: options && options.body, tag: options && options.tag};
    window.shownNotifications.push(record);
    record.notification = new Real(title, options);
    return record.notification;
  };
  Object.defineProperty(Recording, "permission", {get: () => Real.permission});
  Recording.requestPermission = function (callback) {
    window.permissionRequests++;
    return Real.requestPermission(callback);
  };
  window.Notification = Recording;
}
"""


class Person(Human):
    """A logged-in person whose pages record their notifications."""

    def __init__(self, browser, live, user, *, notifications: bool = False) -> None:
        # The page's own notifications: with a service worker running (Web Push on the device)
        # the page hands them to it instead (tests/delivery/test_browser_push.py).
        super().__init__(browser, live, user, viewport={"width": 1280, "height": 800}, service_workers="block")
        self.context.add_init_script(RECORDER)
        if notifications:
            self.context.grant_permissions(["notifications"], origin=live.url)

    def visit(self, path: str):
        page = self.context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.goto(path)
        page.wait_for_function("() => window.liveOpens >= 1 && window.askuserNotify !== undefined", timeout=WAIT_MS)
        return page


@pytest.fixture
def person(chromium, server, owner):
    made: list[Person] = []

    def make(**options) -> Person:
        made.append(Person(chromium, server, owner, **options))
        return made[-1]

    yield make
    for someone in made:
        someone.context.close()
        assert someone.errors == []


def count_shown(page, count: int) -> None:
    page.wait_for_function(f"() => document.getElementById('waiting').dataset.count === '{count}'", timeout=WAIT_MS)


def test_the_title_counts_every_sessions_prompts_and_an_answer_elsewhere_lowers_it_live(person, agent_api):
    oldest = agent_api.ask(session="first")
    agent_api.ask(session="second")
    someone = person()

    sessions = someone.visit("/")
    settings = someone.visit("/settings/")

    assert sessions.title() == "(2) Sessions · askuser" and settings.title() == "(2) Settings · askuser"
    link = settings.get_by_role("link", name="2 waiting for your answer: open the inbox")
    assert link.get_attribute("href") == "/inbox/"  # more than one: the inbox has them all
    assert settings.locator("#favicon").get_attribute("href").startswith("data:image/svg+xml,")
    shot(sessions, "waiting-indicator")

    settings.evaluate("window.sameDocument = true")
    answering = someone.visit(f"/p/{oldest}/")  # the link's page: the oldest's session, its panel open
    panel_open(answering).get_by_text("Production").click()  # one question: the click answers it

    for page in (sessions, settings, answering):
        count_shown(page, 1)
    assert settings.evaluate("window.sameDocument") is True  # live, not reloaded
    assert sessions.title() == "(1) Sessions · askuser" and settings.title() == "(1) Settings · askuser"
    assert answering.title() == "(1) first · askuser"
    assert settings.locator(".waiting-link").get_attribute("href") not in ("/inbox/", f"/p/{oldest}/")  # the one left


def test_no_page_asks_for_permission_when_it_loads(person, agent_api):
    agent_api.ask(session="first")
    someone = person()

    pages = [someone.visit(path) for path in ("/", "/s/first/", "/settings/", "/settings/chat/")]

    assert [page.evaluate("window.permissionRequests") for page in pages] == [0, 0, 0, 0]
    assert pages[0].get_by_role("button", name="Turn on desktop notifications").is_visible()


def test_once_turned_on_a_new_prompt_shows_one_notification_across_two_tabs_and_its_click_opens_it(person, agent_api):
    someone = person(notifications=True)
    settings = someone.visit("/settings/")
    sessions = someone.visit("/")
    settings.evaluate("document.addEventListener('askuser:notifications-on', () => window.turnedOn = true)")
    assert settings.get_by_text("Off in this browser.").is_visible()

    settings.get_by_role("button", name="Turn on desktop notifications").click()

    settings.wait_for_function("() => window.turnedOn === true", timeout=WAIT_MS)
    assert settings.get_by_text("On in this browser.").is_visible()
    shot(settings, "notifications-on")
    assert settings.evaluate("window.permissionRequests") == 1
    prompt_id = agent_api.ask(session="second")
    for page in (settings, sessions):
        count_shown(page, 1)  # both tabs have heard of it: each has decided whether to show it
    shown = [
        page.evaluate("window.shownNotifications.map(({title, body, tag}) => ({title, body, tag}))")
        for page in (settings, sessions)
    ]
    assert sorted(len(notes) for notes in shown) == [0, 1]
    assert [note for notes in shown for note in notes] == [
        {"title": "helper asks: Deploy", "body": "Where should this release go first?", "tag": f"askuser-{prompt_id}"}
    ]

    notifying = settings if shown[0] else sessions
    notifying.evaluate("window.shownNotifications[0].notification.onclick(new Event('click'))")

    notifying.wait_for_url("**/s/second/#prompt-panel", timeout=WAIT_MS)
    panel_open(notifying)


def test_turned_off_no_notification_is_shown(person, agent_api):
    someone = person(notifications=True)
    settings = someone.visit("/settings/")
    settings.get_by_role("button", name="Turn on desktop notifications").click()
    settings.get_by_role("button", name="Turn off desktop notifications").click()
    assert settings.get_by_text("Off in this browser.").is_visible()

    agent_api.ask(session="second")

    count_shown(settings, 1)
    assert settings.evaluate("window.shownNotifications.length") == 0


def test_a_cancel_removes_the_count_without_a_notification(person, agent_api):
    prompt_id = agent_api.ask(session="first")
    someone = person()
    page = someone.visit("/settings/chat/")
    assert page.title().startswith("(1) ")

    httpx.post(f"{agent_api.server.url}/api/v1/prompts/{prompt_id}/cancel", headers=agent_api.headers)

    count_shown(page, 0)
    assert not page.title().startswith("(") and page.locator(".waiting-link").count() == 0
    assert page.locator("#favicon").get_attribute("href") == "/static/askuser/icon.svg"
