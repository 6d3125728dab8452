"""Draw the app's PNG icons (the installed app's, on a home screen or a task bar) from the same
design as ``static/askuser/icon.svg``, with chromium through Playwright (both are the browser
tests' own): run once after a change of design, and commit the files it writes.

    .venv/bin/python tools/make_icons.py

``icon-192.png`` and ``icon-512.png`` keep the rounded square on a transparent ground (purpose
"any"); ``icon-maskable-512.png`` fills the whole square and keeps the mark inside the middle
80 % that every platform's mask leaves whole (purpose "maskable")."""

from __future__ import annotations

import shutil
from pathlib import Path

from playwright.sync_api import sync_playwright

FOLDER = Path(__file__).resolve().parent.parent / "static" / "askuser" / "icons"
ACCENT = "#4f46e5"  # --accent in static/askuser/app.css, and the manifest's theme colour

ANY = f"""<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="8"
fill="{ACCENT}"/><text x="16" y="23" font-family="DejaVu Sans,sans-serif" font-size="20" font-weight="700"
text-anchor="middle" fill="#fff">?</text></svg>"""
MASKABLE = f"""<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32"
fill="{ACCENT}"/><text x="16" y="21.5" font-family="DejaVu Sans,sans-serif" font-size="15" font-weight="700"
text-anchor="middle" fill="#fff">?</text></svg>"""

ICONS = {"icon-192.png": (ANY, 192), "icon-512.png": (ANY, 512), "icon-maskable-512.png": (MASKABLE, 512)}


def main() -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=shutil.which("chromium"), args=["--headless"])
        for name, (svg, size) in ICONS.items():
            page = browser.new_page(viewport={"width": size, "height": size})
            page.set_content(f"<style>html,body{{margin:0;background:transparent}}svg{{display:block}}</style>{svg}")
            page.locator("svg").evaluate(
                f"svg => {{ svg.setAttribute('width', {size}); svg.setAttribute('height', {size}); }}"
            )
            page.screenshot(
                path=FOLDER / name, omit_background=True, clip={"x": 0, "y": 0, "width": size, "height": size}
            )
            page.close()
        browser.close()
    print(f"wrote {', '.join(ICONS)} to {FOLDER}")


if __name__ == "__main__":
    main()
