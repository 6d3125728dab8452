"""Two questions every check of people's and agents' text asks, answered once.

``fold`` is how two strings are compared as "the same words" (an option label
and a reply, two labels of one question); ``control_character`` finds what may
never be stored: control characters other than new lines and tabs, and lone
surrogates (which no encoding can write).
"""

from __future__ import annotations

import unicodedata

FORBIDDEN_CATEGORIES = ("Cc", "Cs")


def fold(text: str) -> str:
    """Case-insensitive and Unicode-folded (NFKC): "ＰＲＯＤ" and "prod" are the same."""
    return unicodedata.normalize("NFKC", text).casefold().strip()


def control_character(text: str, *, allowed: str = "\n\t") -> str | None:
    """The first control character or lone surrogate in ``text`` that is not ``allowed``."""
    for char in text:
        if unicodedata.category(char) in FORBIDDEN_CATEGORIES and char not in allowed:
            return char
    return None
