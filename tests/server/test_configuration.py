"""Every environment variable the code reads is on one page, docs/CONFIGURATION.md, and only
there: no other page keeps a settings table of its own (they drifted apart when the README
kept one), every page that names a setting leads there, and the README's commands lead to
the address ``make run`` serves on.

The scan covers the server (``askuser_app/``, ``controlui/``) and the benchmark (``bench/``),
which reads knobs of its own (``BENCH_*``); tests/ is left out: what it reads configures the
test run (``ASKUSER_REQUIRE_SCALED``, ``ASKUSER_SOAK_PROMPTS``), not askuser."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "CONFIGURATION.md"
README = ROOT / "README.md"
SCANNED = ("askuser_app", "controlui", "bench")
# controlui/settings.py's helpers: env_int("NAME", 5) reads NAME.
ENV_HELPERS = frozenset({"env_str", "env_int", "env_bool", "env_list", "env_float", "env_networks"})


def sources() -> Iterator[tuple[Path, ast.Module]]:
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def is_environ(node: ast.expr) -> bool:
    """``os.environ``."""
    return isinstance(node, ast.Attribute) and node.attr == "environ" and _is_os(node.value)


def _is_os(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "os"


def reads(tree: ast.Module) -> Iterator[tuple[ast.expr | None, int]]:
    """Each read of the environment: the expression naming the variable, and its line.

    ``env_*("NAME")``, ``os.environ.get("NAME")``, ``os.getenv("NAME")``, ``os.environ["NAME"]``
    and ``"NAME" in os.environ``; writes (``os.environ[...] = ``, ``setdefault``) are not reads."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            helper = isinstance(func, ast.Name) and func.id in ENV_HELPERS
            getter = isinstance(func, ast.Attribute) and (
                (func.attr == "get" and is_environ(func.value)) or (func.attr == "getenv" and _is_os(func.value))
            )
            if helper or getter:
                yield (node.args[0] if node.args else None), node.lineno
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and is_environ(node.value):
            yield node.slice, node.lineno
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.ops[0], ast.In | ast.NotIn)
            and is_environ(node.comparators[0])
        ):
            yield node.left, node.lineno


def helper_lines(tree: ast.Module) -> set[int]:
    """The lines of the env_* helpers' own bodies, which read the name they are given."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in ENV_HELPERS:
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def names_read() -> dict[str, list[str]]:
    """Each variable read, with where."""
    found: dict[str, list[str]] = {}
    for path, tree in sources():
        for name, line in reads(tree):
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                found.setdefault(name.value, []).append(f"{path.relative_to(ROOT)}:{line}")
    return found


def test_every_environment_variable_the_code_reads_is_on_the_configuration_page():
    page = PAGE.read_text(encoding="utf-8")

    missing = {name: where for name, where in names_read().items() if f"`{name}`" not in page}

    assert not missing, f"read but not in docs/CONFIGURATION.md: {missing}"


def test_the_scan_sees_the_reads_of_every_kind():
    found = names_read()

    # env_* helpers, os.environ.get in and out of settings, the benchmark's own knobs.
    assert {"DATABASE_URL", "ASKUSER_HSTS_SECONDS", "LOG_LEVEL", "ASKUSER_URL", "BENCH_POSTGRES"} <= set(found)
    assert "ASKUSER_REQUIRE_SCALED" not in found  # tests/ is not scanned
    assert len(found) >= 70


def test_every_read_names_its_variable_where_the_scan_can_see_it():
    hidden = [
        f"{path.relative_to(ROOT)}:{line}"
        for path, tree in sources()
        for name, line in reads(tree)
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)) and line not in helper_lines(tree)
    ]

    assert not hidden, f"environment read under a computed name (the page cannot be checked for it): {hidden}"


def test_the_three_settings_added_beside_this_page_have_rows():
    page = PAGE.read_text(encoding="utf-8")

    for name in ("ASKUSER_TRUSTED_PROXIES", "ASKUSER_LOGIN_FAILURES_PER_USERNAME", "ASKUSER_MAX_PUSH_DEVICES"):
        assert re.search(rf"^\| `{name}` \|", page, re.MULTILINE), name


def readme_sections() -> list[str]:
    return re.split(r"\n(?=#{2,3} )", README.read_text(encoding="utf-8"))


def other_pages() -> list[Path]:
    """Every page of documentation but the configuration page itself."""
    pages = [README, ROOT / "askuser_app" / "server" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [page for page in pages if page != PAGE]


def test_the_readme_links_the_page_near_the_top():
    intro = readme_sections()[0]

    assert "docs/CONFIGURATION.md" in intro


def test_settings_are_described_only_on_the_configuration_page():
    settings = set(names_read())
    described: dict[str, list[str]] = {}
    for page in other_pages():
        for line in page.read_text(encoding="utf-8").splitlines():
            cell = re.match(r"\| *`([A-Z][A-Z0-9_]+)`", line)  # a table's row whose first cell is a setting
            if cell and cell.group(1) in settings:
                described.setdefault(str(page.relative_to(ROOT)), []).append(cell.group(1))

    assert len(other_pages()) >= 10
    assert not described, f"settings described outside docs/CONFIGURATION.md: {described}"


def test_every_page_that_names_a_setting_leads_to_the_configuration_page():
    settings = set(names_read())
    unlinked = []
    for page in other_pages():
        text = page.read_text(encoding="utf-8")
        if page.name == "PERFORMANCE.md":  # written by make bench (bench/report.py), not by hand
            continue
        if any(f"`{name}`" in text for name in settings) and "CONFIGURATION.md" not in text:
            unlinked.append(str(page.relative_to(ROOT)))

    assert not unlinked, unlinked


def shell_blocks() -> list[str]:
    return [block.split("```")[0] for block in README.read_text(encoding="utf-8").split("```sh\n")[1:]]


def commands(block: str) -> str:
    """A shell block without its comments (which may say what the default address is)."""
    return "\n".join(re.sub(r"(^|\s)#.*$", "", line) for line in block.splitlines())


def test_the_readmes_commands_take_the_servers_address_from_where_make_run_keeps_it():
    address = re.compile(r"(127\.0\.0\.1|localhost|\[::1\]):[0-9]")
    hard_coded = [block for block in shell_blocks() if address.search(commands(block))]
    [loop] = [block for block in shell_blocks() if "ASKUSER_TOKEN=" in block]

    assert not hard_coded, hard_coded  # make run PORT=8765 would leave them talking to nothing
    assert "URL=$(cat var/server-url)" in loop and '"$URL/api/v1/prompts' in loop
