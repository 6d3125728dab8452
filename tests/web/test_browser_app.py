"""askuser as an installable app, in chromium: the manifest passes chromium's own installability
check (the DevTools protocol's ``Page.getInstallabilityErrors``), and the settings page says how to
install it here: the browser's install dialog where it offers one, iOS's "Add to Home Screen" words
on an iPhone."""

from __future__ import annotations

import pytest

from tests.browsers import MARKS, WAIT_MS, profile_on_disk
from tests.conftest import log_in

pytestmark = MARKS

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
)


@pytest.fixture(scope="module")
def installer(playwright, server):
    """A chromium with a profile on disk (chromium installs nothing from an off-the-record context,
    which a Playwright context is: "in-incognito"), that offers its install dialog at once: a real
    person's browser waits until they have used the site a while (the engagement check)."""
    with profile_on_disk(playwright, server, "--bypass-app-banner-engagement-checks") as context:
        yield context


def opened(browser, server, owner, path: str, **options):
    """``path`` in a new page, logged in as ``owner``: ``browser`` a browser, or a context of its own."""
    context = browser.new_context(base_url=server.url, **options) if hasattr(browser, "new_context") else browser
    context.add_cookies([{"name": "sessionid", "value": log_in(owner), "url": server.url}])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if "Security Policy" in message.text else None)
    page.goto(path)
    return page, errors


def installability_errors(page) -> list[dict]:
    cdp = page.context.new_cdp_session(page)
    return cdp.send("Page.getInstallabilityErrors")["installabilityErrors"]


def test_chromium_finds_the_control_ui_installable(installer, server, owner):
    page, errors = opened(installer, server, owner, "/")

    assert installability_errors(page) == []
    manifest = page.evaluate("() => fetch(document.querySelector('link[rel=manifest]').href).then(r => r.json())")
    assert (manifest["display"], manifest["start_url"], manifest["scope"]) == ("standalone", "/", "/")
    assert errors == []
    page.close()


def test_the_login_page_is_installable_too(installer, server, db):
    installer.clear_cookies()
    page = installer.new_page()
    page.goto("/login/")

    assert installability_errors(page) == []
    page.close()


def test_the_settings_page_offers_the_browsers_install_dialog(installer, server, owner):
    page, errors = opened(installer, server, owner, "/settings/")

    section = page.locator("#install-app")
    section.locator("[data-install]").wait_for(state="visible", timeout=WAIT_MS)
    assert section.get_attribute("data-state") == "offered"
    assert section.get_by_role("status").inner_text() == "This browser can install askuser as an app."
    assert page.get_by_role("button", name="Install askuser").is_visible()
    assert errors == []
    page.close()


def test_on_an_iphone_the_settings_page_says_to_add_askuser_to_the_home_screen(chromium, server, owner):
    page, errors = opened(
        chromium, server, owner, "/settings/", user_agent=IPHONE, viewport={"width": 390, "height": 844}
    )

    status = page.locator("#install-app").get_by_role("status")
    page.wait_for_selector("#install-app[data-state='ios']", timeout=WAIT_MS)
    assert status.inner_text() == (
        "On an iPhone or an iPad, tap Share, then “Add to Home Screen”, and open askuser from its icon there: "
        "iOS delivers notifications only to askuser installed this way."
    )
    assert not page.get_by_role("button", name="Install askuser").is_visible()
    assert errors == []
    page.context.close()
