"""The answer as the human feels it: in Debian's chromium (Playwright), from
the click on an option (one single-select question: the choice answers it) to
the panel closing on the page, and on a second tab of the same session open
beside it, one prompt after another. Timed in the pages (performance.now(),
from their common ``timeOrigin``), so the figures are what the browser saw,
request, response, push, swap and all."""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import httpx

from .payload import QUESTIONS, agent_headers
from .stats import Latency, latency

SESSION = "bench-click"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
WAIT_MS = 15_000

# Resolves with the milliseconds from the click to the panel being hidden (by
# the page as the answer is sent, static/askuser/app.js), and the click's time
# since the epoch.
CLICK = """() => new Promise(resolve => {
  let clicked = 0;
  const observer = new MutationObserver(() => {
    if (clicked && document.querySelector("#prompt-panel[hidden]")) {
      observer.disconnect();
      resolve([performance.now() - clicked, performance.timeOrigin + clicked]);
    }
  });
  observer.observe(document.body, {subtree: true, childList: true, attributes: true});
  // One single-select question: choosing the option answers it, no Submit.
  // A pointer's press, then its click, as a mouse gives them.
  const input = document.querySelector("#prompt-panel .options input");
  clicked = performance.now();
  input.closest(".option").dispatchEvent(new PointerEvent("pointerdown", {bubbles: true}));
  input.click();
})"""


# In the other tab: from now on, when its panel is hidden (by the push), in ms since the epoch.
WATCH = """() => { window.benchClosed = new Promise(resolve => {
  const observer = new MutationObserver(() => {
    if (document.querySelector("#prompt-panel[hidden]")) {
      observer.disconnect();
      resolve(performance.timeOrigin + performance.now());
    }
  });
  observer.observe(document.body, {subtree: true, childList: true, attributes: true});
}); }"""


@dataclass
class Clicks:
    own: Latency  # click → the clicking tab's panel closed
    every: Latency  # click → the panel closed in both tabs


def chromium() -> str | None:
    return shutil.which("chromium")


def measure(url: str, token: str, login: str, samples: int) -> Clicks:
    """``samples`` one-question prompts, each answered with a click in one of two open pages."""
    from playwright.sync_api import sync_playwright

    agent = httpx.Client(base_url=url, headers=agent_headers(token), timeout=30)
    body = {"session": SESSION, "questions": QUESTIONS[:1], "timeoutSeconds": 3600}
    own, every = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=ARGS)
        context = browser.new_context(base_url=url, viewport={"width": 1280, "height": 800})
        context.add_cookies([{"name": "sessionid", "value": login, "url": url}])
        first = agent.post("/api/v1/prompts", json=body).json()["id"]  # the session, before the page
        agent.post(f"/api/v1/prompts/{first}/cancel")
        page, other = context.new_page(), context.new_page()
        for tab in (page, other):
            tab.goto(f"/s/{SESSION}/")
        for _ in range(samples + 3):  # the first few warm the pages and the server up
            prompt_id = agent.post("/api/v1/prompts", json=body).json()["id"]
            for tab in (page, other):
                tab.wait_for_selector(f"#prompt-panel[data-prompt-id='{prompt_id}']:not([hidden])", timeout=WAIT_MS)
            other.evaluate(WATCH)
            took, clicked = page.evaluate(CLICK)
            closed = other.evaluate("() => window.benchClosed")
            own.append(took / 1000)
            every.append(max(took, closed - clicked) / 1000)
        browser.close()
    agent.close()
    return Clicks(latency(own[3:]), latency(every[3:]))
