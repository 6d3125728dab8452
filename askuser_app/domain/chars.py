"""Two questions every check of people's and agents' text asks, answered once.

``fold`` is how two strings are compared as "the same words" (an option label
and a reply, two labels of one question); ``control_character`` finds what may
never be stored: control characters other than new lines and tabs, and lone
surrogates (which no encoding can write).
"""

from __future__ import annotations

import unicodedata

FORBIDDEN_CATEGORIES = ("Cc", "Cs")
# The digits a number that picks an option may be written in: ASCII and Devanagari (०-९).
# Other scripts' digits are not numbers here (int() would read "١", and not "²").
_DEVANAGARI_DIGITS = str.maketrans("०१२३४५६७८९", "0123456789")


def fold(text: str) -> str:
    """Case-insensitive and Unicode-folded (NFKC): "ＰＲＯＤ" and "prod" are the same."""
    return unicodedata.normalize("NFKC", text).casefold().strip()


def ascii_digits(text: str) -> str:
    """``text`` with its Devanagari digits written as ASCII ones: "१२" is "12"."""
    return text.translate(_DEVANAGARI_DIGITS)


def control_character(text: str, *, allowed: str = "\n\t") -> str | None:
    """The first control character or lone surrogate in ``text`` that is not ``allowed``."""
    for char in text:
        if unicodedata.category(char) in FORBIDDEN_CATEGORIES and char not in allowed:
            return char
    return None
