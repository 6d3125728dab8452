"""A coding agent's plan is shown as Markdown that runs nothing and fetches nothing (SPEC 4.5, 7)."""

from __future__ import annotations

import pytest

from askuser_app.web.plans import plan_html

pytestmark = pytest.mark.backend_neutral


def test_markdown_becomes_headings_lists_code_and_tables():
    html = plan_html("# Plan\n\n1. Add `retry()`\n2. **Test** it\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    assert "<h1>Plan</h1>" in html and "<ol>" in html and "<code>retry()</code>" in html
    assert "<strong>Test</strong>" in html and "<td>1</td>" in html


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="https://e.example" onclick="alert(1)">x</a>',
        "<iframe src=https://evil.example></iframe>",
    ],
)
def test_raw_html_is_shown_as_text(hostile):
    html = plan_html(f"Before\n\n{hostile}\n\nafter")
    assert "<" + hostile[1:] not in html
    assert hostile.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;") in html


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,x", "vbscript:x"])
def test_links_that_would_run_something_are_not_links(url):
    for text in (f"[click]({url})", f"<{url}>"):
        assert "href" not in plan_html(text)


def test_safe_links_open_apart_from_the_page():
    html = plan_html("[docs](https://example.com/d)")
    assert 'href="https://example.com/d"' in html and 'rel="noopener noreferrer nofollow"' in html


def test_images_are_never_fetched_only_linked():
    html = plan_html('![tracker "x"](https://evil.example/pixel.png) ![bad](javascript:alert(1))')
    assert "<img" not in html
    assert '<a href="https://evil.example/pixel.png"' in html and ">tracker &quot;x&quot;</a>" in html
    assert "javascript:" not in html.split("href=")[-1].split(">")[0]  # the bad one is text, not a link
