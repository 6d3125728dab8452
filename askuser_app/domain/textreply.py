"""Prompts as plain text, and plain-text replies read back into answers (SPEC 4.2).

Used by the composer of the Control UI and by any surface that only has text.
The rules, in order:

- one question: the whole reply answers it. A number (1-based) or an exact
  label (case-insensitive, Unicode-folded) picks that option; anything else is
  the free-text answer. For multi-select, the whole reply is tried as one
  label first (labels may hold commas), then split on commas, semicolons or
  new lines and each part read as above.
- several questions: lines ``key: value`` (or ``key = value``), where key is
  the question's id, its header or its number; unkeyed lines answer the
  remaining questions in order. A keyed line never also counts positionally.

An exact label wins over a number, so options labelled "3" and "5" are read
as labels. A numbered key needs a space after its colon, so "1:30" stays a
time and never becomes "question 1: 30".

In every language of the Control UI: numbers in ASCII or Devanagari digits
("२" is 2), the word for Skip answers a question as skipped, the words for
"skip all" (the whole reply) skip the prompt, and "Other: …" is one's own
answer. An exact label still wins over those words.

The texts for people (how a reply was read, what it lacks, the prompt as
text) are in the active language; callers writing to a person who is not the
request's activate theirs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext_lazy

from askuser_app.domain.chars import ascii_digits, fold

if TYPE_CHECKING:
    from askuser_app.models import Question


@dataclass(frozen=True)
class TextQuestion:
    """What reading a reply needs to know of a question."""

    key: str
    header: str
    text: str
    multi_select: bool
    options: tuple[str, ...]
    descriptions: tuple[str, ...] = ()
    detail: str = ""  # shown verbatim under the question (a command, a diff)

    @classmethod
    def of(cls, question: Question) -> TextQuestion:
        options = list(question.options.all())
        return cls(
            key=question.key,
            header=question.header,
            text=question.text,
            multi_select=question.multi_select,
            options=tuple(o.label for o in options),
            descriptions=tuple(o.description for o in options),
            detail=question.detail,
        )


@dataclass
class Reading:
    """What a reply said: values per question, and what it did not answer."""

    answers: dict[str, list[str]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    extra_lines: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing and not self.extra_lines


# --- reading ---------------------------------------------------------------------

_KEYED = re.compile(r"^(?P<key>[^:=\n]{1,80}?)\s*(?P<sep>[:=])(?P<value>.*)$")
_NUMBER = re.compile(r"^([0-9]+)[.)।]?$")
_OTHER = re.compile(r"^(?P<word>[^:=\n]{1,40}?)\s*[:=]\s*(?P<value>.+)$", re.DOTALL)

# The words of a reply, as (context, English): each a "|"-separated list that every
# language translates (askuser_app/locale); all are understood, whatever the UI's language.
WORDS = {
    "skip": pgettext_lazy("skip one question", "skip|pass"),
    "skip all": pgettext_lazy("skip every question", "skip all|skip everything"),
    "other": pgettext_lazy("before one's own answer", "other"),
}
SKIP, SKIP_ALL, OTHER = WORDS


@functools.cache
def words(which: str) -> frozenset[str]:
    """The words ``WORDS[which]`` in every language of the Control UI, folded."""
    said = []
    for language, _name in settings.LANGUAGES:
        with translation.override(language):
            said.extend(str(WORDS[which]).split("|"))
    return frozenset(fold(word) for word in said if word.strip())


def number(text: str) -> int | None:
    """The number ``text`` is ("2", "2.", "२)"), in ASCII or Devanagari digits; else None."""
    found = _NUMBER.match(ascii_digits(fold(text)))
    return int(found[1]) if found else None


def read_reply(questions: Sequence[TextQuestion], reply: str) -> Reading:
    reading = Reading()
    lines = [line.strip() for line in re.split(r"\r\n|\r|\n", reply.strip()) if line.strip()]
    if not lines:
        reading.missing = [q.key for q in questions]
        return reading
    if fold(reply) in words(SKIP_ALL) and not any(match_option(q, reply) for q in questions):
        reading.answers = {q.key: [] for q in questions}
        return reading
    keyed, unkeyed = _split_keyed(questions, lines)
    if len(questions) == 1 and not keyed:
        keyed = {questions[0].key: "\n".join(lines)}
        unkeyed = []
    open_questions = [q for q in questions if q.key not in keyed]
    for question, line in zip(open_questions, unkeyed, strict=False):
        keyed[question.key] = line
    reading.extra_lines = unkeyed[len(open_questions) :]
    for question in questions:
        values = read_part(question, keyed.get(question.key, ""))
        if values is None:
            reading.missing.append(question.key)
        else:
            reading.answers[question.key] = values
    return reading


def read_part(question: TextQuestion, value: str) -> list[str] | None:
    """One question's part of a reply: its values, [] when it says Skip, None when empty."""
    value = value.strip()
    if not value:
        return None
    if fold(value) in words(SKIP) and match_option(question, value) is None:
        return []
    other = _OTHER.match(value)
    if other and fold(other["word"]) in words(OTHER) and match_option(question, value) is None:
        return [other["value"].strip()]
    return read_value(question, value)


def _split_keyed(questions: Sequence[TextQuestion], lines: list[str]) -> tuple[dict[str, str], list[str]]:
    keyed: dict[str, str] = {}
    unkeyed: list[str] = []
    for line in lines:
        question = _keyed_question(questions, line)
        if question is None:
            unkeyed.append(line)
        else:
            match = _KEYED.match(line)
            assert match is not None  # _keyed_question matched this line
            keyed[question.key] = match["value"].strip()
    return keyed, unkeyed


def _keyed_question(questions: Sequence[TextQuestion], line: str) -> TextQuestion | None:
    match = _KEYED.match(line)
    if match is None:
        return None
    key, value = fold(match["key"]), match["value"]
    numbered = number(key)
    if numbered is not None:
        # "1:30" is a time: a numbered key needs a space (or "=") before its answer.
        if match["sep"] == ":" and value and not value[0].isspace():
            return None
        index = numbered - 1
        return questions[index] if 0 <= index < len(questions) else None
    for question in questions:
        if key in (fold(question.key), fold(question.header)):
            return question
    return None


def read_value(question: TextQuestion, value: str) -> list[str]:
    """The option labels and/or free text one question's part of a reply names."""
    value = value.strip()
    if not value:
        return []
    whole = match_option(question, value)
    if whole is not None:
        return [whole]
    if not question.multi_select:
        return [value]
    chosen, free = [], []
    for part in filter(None, (p.strip() for p in re.split(r"[,;\n]", value))):
        label = match_option(question, part)
        if label is None:
            free.append(part)
        elif label not in chosen:
            chosen.append(label)
    return [label for label in question.options if label in chosen] + ([", ".join(free)] if free else [])


def match_option(question: TextQuestion, text: str) -> str | None:
    """The option a reply names by exact label or by number, if any."""
    folded = fold(text)
    for label in question.options:
        if fold(label) == folded:
            return label
    numbered = number(folded)
    if numbered is not None and 1 <= numbered <= len(question.options):
        return question.options[numbered - 1]
    return None


# --- explaining ------------------------------------------------------------------


def how_it_was_read(questions: Sequence[TextQuestion], reading: Reading) -> list[str]:
    """One line per question saying what the reply was taken to mean."""
    lines = []
    own, skipped = _("“%(answer)s” (your own answer)"), _("skipped")
    for question in questions:
        values = reading.answers.get(question.key, [])
        shown = ", ".join(v if v in question.options else own % {"answer": v} for v in values)
        lines.append(f"{question.header}: {shown or skipped}")
    return lines


def what_is_missing(questions: Sequence[TextQuestion], reading: Reading) -> str:
    """A sentence telling the user why the reply could not be read."""
    if reading.extra_lines and not reading.missing:
        extra = len(reading.extra_lines)
        too_long = ngettext(
            "Your reply has %(count)d more line than there are questions; %(guidance)s",
            "Your reply has %(count)d more lines than there are questions; %(guidance)s",
            extra,
        )
        return too_long % {"count": extra, "guidance": reply_guidance(questions)}
    names = [f"{i}. {q.header}" for i, q in enumerate(questions, 1) if q.key in reading.missing]
    unanswered = _("Your reply did not answer %(questions)s. %(guidance)s")
    return unanswered % {"questions": ", ".join(names), "guidance": reply_guidance(questions)}


def reply_guidance(questions: Sequence[TextQuestion]) -> str:
    if len(questions) == 1:
        if questions[0].multi_select:
            return _("Reply with numbers or labels, separated by commas, or type your own answer; “skip” skips it.")
        return _("Reply with a number or a label, or type your own answer; “skip” skips it.")
    first = questions[0]
    guidance = _(
        "Reply with one line per question, in order, or as “key: answer”, e.g. “1: 2” or “%(example)s”; "
        "“skip all” skips every question."
    )
    # A typed question (an MCP form's number, say) has no option to show as the example.
    example = first.options[0] if first.options else _("your answer")
    return guidance % {"example": f"{first.key}: {example}"}


# --- rendering -------------------------------------------------------------------


def shown_detail(question: TextQuestion) -> list[str]:
    """The question's detail as lines of its own, set apart by blank lines; none without one."""
    return ["", question.detail, ""] if question.detail else []


def render_prompt(questions: Sequence[TextQuestion]) -> str:
    """The prompt as text: numbered options, the Other line, how to reply."""
    blocks = []
    several = len(questions) > 1
    for position, question in enumerate(questions, 1):
        indent = "   " if several else "  "
        title = (
            f"{position}. {question.header} ({question.key}): {question.text}"
            if several
            else f"{question.header}: {question.text}"
        )
        if question.multi_select:
            title += " " + _("(choose one or more)")
        lines = [title, *shown_detail(question)]
        for index, label in enumerate(question.options, 1):
            description = question.descriptions[index - 1] if index <= len(question.descriptions) else ""
            lines.append(f"{indent}{index}. {label}" + (f" — {description}" if description else ""))
        lines.append(
            indent + (_("Other: reply with your own answer") if question.options else _("Reply with your answer"))
        )
        blocks.append("\n".join(lines))
    count = len(questions)
    intro = [
        ngettext("The agent asks %(count)d question:", "The agent asks %(count)d questions:", count) % {"count": count}
    ]
    return "\n\n".join([*(intro if several else []), *blocks, reply_guidance(questions)])
