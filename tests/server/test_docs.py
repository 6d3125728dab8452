"""The documentation names only what exists: every file, folder and module a docstring or a
page names (in backticks: ``askuser_app/web/views.py``, ``server/edge.py``,
``askuser_app.agents.waits.Parked``, ``client.py``) is there, every relative link of the
README and of docs/ leads to a file and a heading that are there, and the README stays a
quick start (under 300 lines) that links a page for each reader."""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_neutral

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, ROOT / "askuser_app" / "server" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = ("askuser_app", "controlui", "bench", "tests", "client", "tools")
# A name starting so is a path from the checkout's root.
ROOTED = (
    "askuser_app/",
    "controlui/",
    "bench/",
    "tests/",
    "docs/",
    "static/",
    "templates/",
    "client/",
    "deploy/",
    "tools/",
)
# A name starting so is a path inside askuser_app (``server/edge.py``, ``channels/email/``).
PACKAGES = ("agents", "delivery", "domain", "runtime", "server", "staff", "web", "chats", "channels")
# Files of other projects that a page quotes: the path a hook shows, a frame of Daphne's in a profile.
NOT_OURS = frozenset({"src/app.py", "websocket/protocol.py"})
PLACEHOLDER = re.compile(r"[<>*{}…]")  # askuser_app/locale/<code>/: the folder before it is checked


def docstrings(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        kind = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        if isinstance(node, kind) and (text := ast.get_docstring(node, clean=False)):
            yield text


def prose(page: Path) -> str:
    """A page without its fenced code blocks (a shell comment is not a heading, an example not a link)."""
    return re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)


def texts() -> Iterator[tuple[str, str]]:
    """Each docstring and each page, with where it is."""
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for text in docstrings(path):
                yield str(path.relative_to(ROOT)), text
    for page in PAGES:
        yield str(page.relative_to(ROOT)), prose(page)


def spans(text: str) -> Iterator[str]:
    """What ``double`` or `single` backticks hold, when it is one word (not a command or a phrase)."""
    for double, single in re.findall(r"``(.+?)``|`([^`\n]+)`", text):
        if not re.search(r"\s", double or single):
            yield double or single


def path_exists(name: str) -> bool:
    cut = PLACEHOLDER.search(name)
    if cut:  # only the folder before the placeholder
        name = name[: cut.start()].rpartition("/")[0]
    name = name.rstrip(".,;:)")
    if name.startswith(ROOTED):
        return (ROOT / name).exists()
    return any((base / name).exists() for base in folders())


@cache
def folders() -> list[Path]:
    """Where a name not from the root may be: askuser_app and every folder in it."""
    return [ROOT / "askuser_app", *(p for p in (ROOT / "askuser_app").rglob("*") if p.is_dir())]


@cache
def python_files() -> frozenset[str]:
    return frozenset({path.name for folder in SOURCES for path in (ROOT / folder).rglob("*.py")} | {"manage.py"})


def module_file(parts: list[str]) -> tuple[Path, list[str]] | None:
    """The module a dotted name's longest importable prefix names, and the rest of the name."""
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate, parts[cut:]
    return None


def dotted_exists(name: str) -> bool:
    found = module_file(name.split(":")[0].rstrip(".,;:()").split("."))
    if found is None:
        return False
    path, rest = found
    source = path.read_text(encoding="utf-8")
    return all(
        re.search(
            rf"^\s*(async def|def|class) {part}\b|^\s*{part}\s*[:=]|^\s*(from \S+ )?import .*\b{part}\b", source, re.M
        )
        for part in rest
    )


def named(text: str) -> Iterator[tuple[str, bool]]:
    """Each file, folder or module ``text`` names, and whether it exists."""
    for word in spans(text):
        word = word.strip("(),;")
        if re.match(r"^(askuser_app|controlui)\.\w", word):
            yield word, dotted_exists(word)
        elif word.startswith(ROOTED) or (word.split("/")[0] in PACKAGES and "/" in word):
            yield word, path_exists(word)
        elif re.fullmatch(r"[\w./-]+/\w+\.py", word):  # any other path to a module: chats/polling.py
            yield word, path_exists(word) or word in NOT_OURS
        elif re.fullmatch(r"\w+\.py", word):
            yield word, word in python_files()


def test_every_file_and_module_a_docstring_or_a_page_names_exists():
    missing = [f"{where}: {name}" for where, text in texts() for name, exists in named(text) if not exists]

    assert not missing, "\n".join(missing)


def test_the_check_reads_every_kind_of_name():
    text = (
        "``askuser_app/web/views.py`` ``server/edge.py`` ``channels/email/`` ``askuser_app.agents.waits.Parked`` "
        "`controlui.asgi:application` ``client.py`` `askuser_app/locale/<code>/` "
        "``askuser_app/realtime.py`` ``chat/polling.py`` ``askuser_app.agents.longpoll`` "
        "``askuser_app.agents.waits.Gone`` ``handler.py`` `askuser_app/gone/<code>/`"
    )

    found = dict(named(text))

    assert [name for name, exists in found.items() if exists] == [
        "askuser_app/web/views.py",
        "server/edge.py",
        "channels/email/",
        "askuser_app.agents.waits.Parked",
        "controlui.asgi:application",
        "client.py",
        "askuser_app/locale/<code>/",
    ]
    assert len(found) == 13  # the names that do not exist are read too, and found missing


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    kept = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(heading) for heading in re.findall(r"^#{1,6} (.+)$", prose(page), re.MULTILINE)}


def test_every_relative_link_leads_to_a_page_and_a_heading_that_exist():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in anchors(linked)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")

    assert not broken, "\n".join(broken)


def test_the_readme_is_a_quick_start_that_links_a_page_for_each_reader():
    text = README.read_text(encoding="utf-8")

    assert len(text.splitlines()) < 300
    assert "make run" in text and "make test" in text and "demo / demo" in text
    for page in ("USING", "AGENTS", "HOOKS", "WEBHOOKS", "CHANNELS", "NOTIFICATIONS", "DEPLOYMENT", "SECURITY"):
        assert f"(docs/{page}.md)" in text, page
    for page in ("STAFF", "CONTRIBUTING", "CONFIGURATION"):
        assert f"(docs/{page}.md)" in text, page


def test_the_deployment_pages_sed_line_fills_in_every_placeholder_of_the_nginx_site():
    # docs/DEPLOYMENT.md alone brings the recipe up: its sed line leaves nothing for nginx to refuse.
    page = (ROOT / "docs" / "DEPLOYMENT.md").read_text(encoding="utf-8")
    filled = set(re.findall(r"-e 's\|@([A-Z_0-9]+)@\|[^|]+\|'", page))
    site = (ROOT / "deploy" / "nginx" / "askuser.conf").read_text(encoding="utf-8")

    assert filled == set(re.findall(r"@([A-Z_0-9]+)@", site))
