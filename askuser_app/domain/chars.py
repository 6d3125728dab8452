"""The questions every check of people's, agents' and other servers' text asks, answered once.

``fold`` is how two strings are compared as "the same words" (an option label
and a reply, two labels of one question); ``control_character`` finds what may
never be stored: control characters other than new lines and tabs, and lone
surrogates (which no encoding can write); ``line_break`` what ends a line.

``ascii_int`` and ``ascii_number`` read a number that a request or another
server wrote (a form field, a query parameter, ``Content-Length``,
``Retry-After``): ASCII digits only, or None. Never ``str.isdigit()`` and
``int()`` on such text: "²" and "①" pass ``isdigit()`` and make ``int()``
raise, and ``int()``/``float()`` read "١" and "२" as 1 and 2 (and " 1",
"1_0", "infinity"; 4,301 digits raise).
"""

from __future__ import annotations

import math
import re
import unicodedata

FORBIDDEN_CATEGORIES = ("Cc", "Cs")
# The digits a number that picks an option may be written in: ASCII and Devanagari (०-९).
# Other scripts' digits are not numbers here (int() would read "١", and not "²").
_DEVANAGARI_DIGITS = str.maketrans("०१२३४५६७८९", "0123456789")
# 18 digits fit every database's bigint (2**63 has 19).
INT_DIGITS = 18
_ASCII_INT = re.compile(r"[0-9]+")
_ASCII_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?")
# What str.splitlines() ends a line at, besides the control characters among them: a
# one-line field refuses them all alike.
LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


def fold(text: str) -> str:
    """Case-insensitive and Unicode-folded (NFKC): "ＰＲＯＤ" and "prod" are the same."""
    return unicodedata.normalize("NFKC", text).casefold().strip()


def ascii_digits(text: str) -> str:
    """``text`` with its Devanagari digits written as ASCII ones: "१२" is "12"."""
    return text.translate(_DEVANAGARI_DIGITS)


def ascii_int(text: str | None, *, digits: int = INT_DIGITS) -> int | None:
    """``text`` as a whole number if it is 1 to ``digits`` ASCII digits, and nothing else; else None."""
    if text is None or len(text) > digits or not _ASCII_INT.fullmatch(text):
        return None
    return int(text)


def ascii_number(text: str | None, *, length: int = 40) -> float | None:
    """``text`` as a finite number from 0 if it is written in ASCII ("2", "0.5", ".5", "1e-05"); else None."""
    if text is None or len(text) > length or not _ASCII_NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def line_break(text: str) -> str | None:
    """The first character in ``text`` that starts a new line, U+2028 and U+2029 included."""
    return next((char for char in text if char in LINE_BREAKS), None)


def control_character(text: str, *, allowed: str = "\n\t") -> str | None:
    """The first control character or lone surrogate in ``text`` that is not ``allowed``."""
    for char in text:
        if unicodedata.category(char) in FORBIDDEN_CATEGORIES and char not in allowed:
            return char
    return None
