"""The web app manifest that makes the Control UI installable: served as a manifest to anyone (browsers
fetch it without the login cookie), in the page's language, linked from every page, its icons there."""

from __future__ import annotations

import re
import struct

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from tests.conftest import page


@pytest.fixture
def logged_in(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def manifest_link(body: str) -> str:
    found = re.search(r'<link rel="manifest" href="([^"]+)">', body)
    assert found, "no manifest link"
    return found.group(1).replace("&amp;", "&")


def png_size(path: str) -> tuple[int, int]:
    with open(path, "rb") as image:
        head = image.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.mark.django_db
def test_every_page_links_the_manifest_and_the_manifest_makes_an_app(logged_in):
    links = {manifest_link(page(logged_in.get(path))) for path in ("/", "/settings/", "/inbox/")}
    links.add(manifest_link(page(Client().get("/login/"))))
    assert links == {"/manifest.webmanifest?lang=en"}

    served = Client().get("/manifest.webmanifest?lang=en")  # no login: browsers send no cookie for it

    assert served.status_code == 200
    assert served["Content-Type"] == "application/manifest+json"
    assert "script-src 'self'" in served["Content-Security-Policy"]
    app = served.json()
    assert {key: app[key] for key in ("id", "name", "start_url", "scope", "display", "lang", "dir")} == {
        "id": "/",
        "name": "askuser",
        "start_url": "/",
        "scope": "/",
        "display": "standalone",
        "lang": "en",
        "dir": "ltr",
    }
    assert app["theme_color"] == "#4f46e5"
    assert app["shortcuts"] == [{"name": "Inbox", "url": "/inbox/"}]


@pytest.mark.django_db
def test_the_manifests_icons_are_pngs_of_the_sizes_it_says_with_a_maskable_one():
    app = Client().get("/manifest.webmanifest").json()

    for icon in app["icons"]:
        found = finders.find(icon["src"].removeprefix("/static/"))
        assert isinstance(found, str), icon["src"]
        width, height = png_size(found)
        assert icon["sizes"] == f"{width}x{height}" and icon["type"] == "image/png"
    assert {(icon["sizes"], icon["purpose"]) for icon in app["icons"]} == {
        ("192x192", "any"),
        ("512x512", "any"),
        ("512x512", "maskable"),
    }


@pytest.mark.django_db
def test_the_manifest_speaks_the_pages_language(logged_in):
    logged_in.post("/language/", {"language": "hi", "next": "/settings/"})
    assert manifest_link(page(logged_in.get("/settings/"))) == "/manifest.webmanifest?lang=hi"

    app = Client().get("/manifest.webmanifest?lang=hi").json()

    assert app["lang"] == "hi"
    assert app["description"] != Client().get("/manifest.webmanifest?lang=en").json()["description"]
    assert app["shortcuts"][0]["name"] != "Inbox"
    assert Client().get("/manifest.webmanifest?lang=xx").json()["lang"] == "en"  # not ours: the default
