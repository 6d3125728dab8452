"""askuser_app/server/README.md, the table of performance special cases: every
file and test it names exists, so the table cannot outlive what it lists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "askuser_app" / "server" / "README.md"
PACKAGES = "agents|delivery|domain|runtime|server|staff|web"


def rows() -> list[str]:
    found = [line for line in TABLE.read_text().splitlines() if re.match(r"\| \d+ \|", line)]
    assert found, "no row in the table"
    return found


def test_every_file_the_table_names_exists():
    for row in rows():
        for name in re.findall(rf"`((?:{PACKAGES})/[\w/]+\.py)`", row):
            assert (ROOT / "askuser_app" / name).is_file(), name
        for name in re.findall(r"`((?:controlui|tests)/[\w/]+\.py)`", row):
            assert (ROOT / name).is_file(), name


def test_every_test_the_table_names_is_in_the_file_it_names():
    for row in rows():
        for part in row.split(";"):
            files = re.findall(r"`(tests/[\w/]+\.py)`", part)
            names = re.findall(r"`(test_\w+)`", part)
            if not names:
                continue
            assert len(files) == 1, part
            source = (ROOT / files[0]).read_text()
            for name in names:
                assert re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), f"{files[0]}: {name}"
