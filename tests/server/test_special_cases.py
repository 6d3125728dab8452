"""askuser_app/server/README.md, the performance special cases, one section each:
every file and test a case names exists, so the list cannot outlive what it lists,
and each case says, in a short section, where it is, what it does instead of the framework's way,
the figure it bought, the test that fails when the framework changes under it, and when it can go."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "askuser_app" / "server" / "README.md"
PACKAGES = "agents|delivery|domain|runtime|server|staff|web"


def cases() -> list[str]:
    """Each special case's section: from its ``## N. title`` to the next heading."""
    found = re.findall(r"^## \d+\. .*?(?=^## )", PAGE.read_text(), re.MULTILINE | re.DOTALL)
    assert found, "no special case on the page"
    return found


def test_every_case_says_where_it_is_what_it_bought_and_its_test_in_a_short_section():
    for case in cases():
        for field in ("Where", "Instead of", "Bought", "Guarded by", "Can go when"):
            assert f"- **{field}:** " in case, (case.splitlines()[0], field)
        # The measurements themselves are written up in docs/PERFORMANCE.md.
        assert len(case) < 1600, (case.splitlines()[0], len(case))
        assert max(len(line) for line in case.splitlines()) <= 100, case.splitlines()[0]


def test_every_file_the_page_names_exists():
    for case in cases():
        for name in re.findall(rf"`((?:{PACKAGES})/[\w/]+\.py)`", case):
            assert (ROOT / "askuser_app" / name).is_file(), name
        for name in re.findall(r"`((?:controlui|tests)/[\w/]+\.py)`", case):
            assert (ROOT / name).is_file(), name


def test_every_test_the_page_names_is_in_the_file_it_names():
    for case in cases():
        for part in case.split(";"):
            files = re.findall(r"`(tests/[\w/]+\.py)`", part)
            names = re.findall(r"`(test_\w+)`", part)
            if not names:
                continue
            assert len(files) == 1, part
            source = (ROOT / files[0]).read_text()
            for name in names:
                assert re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), f"{files[0]}: {name}"
