"""The agent's contract (SPEC 3): the ask_user request, its validation, the result.

Everything an agent can rely on is defined here: the request models (which
also produce the JSON schema of the tool and of the OpenAPI document), the
sentence each validation failure gets, the shape of the result, and the
tool definition with its model-facing guidance.
"""

from __future__ import annotations

import copy
import functools
import math
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

import regex
from django.utils.translation import gettext_noop
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt, StringConstraints
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import PydanticCustomError

from askuser_app.domain import addresses, wording
from askuser_app.domain.chars import control_character, fold, line_break

MAX_QUESTIONS = 3
HOOK_MAX_QUESTIONS = 4  # Claude Code's AskUserQuestion asks up to four; the API stays at three
HEADER_LENGTH = 12
DEFAULT_TIMEOUT = 900
MIN_TIMEOUT, MAX_TIMEOUT = 30, 3600
MAX_WAIT = 55
MAX_BODY_BYTES = 64 * 1024
MAX_FREE_TEXT = 2000
MAX_DETAIL = 4000
RECOMMENDED = "(recommended)"

# Invisible characters that make a string look blank without being whitespace.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
# Characters that make text display as something else: bidirectional controls
# ("Deploy to \u202enoitcudorP" shows as "Deploy to Production") and zero-width
# ones ("Ye\u200bs" looks like "Yes" but is another answer).
_JOINERS = "\u200c\u200d"
_NO_JOINING = regex.compile(
    r"[\p{Latin}\p{Greek}\p{Cyrillic}\p{Common}\p{Inherited}--\p{Extended_Pictographic}--\p{Emoji_Modifier}--[\ufe0f]]",
    regex.V1,
)
_DECEPTIVE = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c" + _INVISIBLE)


def invalid(message: str) -> PydanticCustomError:
    return PydanticCustomError("askuser", message)


def _checked_text(value: str, *, multiline: bool) -> str:
    # U+2028 and U+2029 are not control characters, but they end a line all the same.
    ends_line = None if multiline else line_break(value)
    if ends_line is not None:
        raise invalid(f"must be one line (found U+{ord(ends_line):04X}, a line break)")
    char = control_character(value, allowed="\n\t" if multiline else "")
    if char is not None and unicodedata.category(char) == "Cs":
        raise invalid("must be valid Unicode text (found a lone surrogate)")
    if char is not None:
        raise invalid(f"must not contain control characters (found U+{ord(char):04X})")
    if not value.strip(_INVISIBLE + " \t\n"):
        raise invalid("must not be blank")
    deceptive = _deceptive_char(value)
    if deceptive:
        raise invalid(
            f"must not contain invisible or text-direction characters (found U+{ord(deceptive):04X}):"
            " they make the text display differently from what it is"
        )
    return value


def _deceptive_char(value: str) -> str | None:
    """The first character that would make ``value`` display as something else.

    The zero-width joiners are writing, not disguise, after an emoji (a family
    emoji is joined people) or in scripts that join letters (Devanagari,
    Arabic, …); between Latin letters they only hide a difference."""
    for index, char in enumerate(value):
        if char in _DECEPTIVE and not (char in _JOINERS and _joins(value, index)):
            return char
    return None


def _joins(value: str, index: int) -> bool:
    if not 0 < index < len(value) - 1 or value[index + 1].isspace():
        return False
    return _NO_JOINING.match(value[index - 1]) is None


def visible(text: str) -> str:
    """``text`` as a ``detail`` may hold it: line ends as new lines, and every character a
    field refuses (other control characters, lone surrogates, invisible and text-direction
    ones) written out as ``\\u{…}``, so a command shows what it is, not what it looks like."""
    text = text.replace("\r\n", "\n")
    return "".join(
        f"\\u{{{ord(char):04x}}}" if char in _DECEPTIVE or control_character(char) else char for char in text
    )


def _single_line(value: str) -> str:
    return _checked_text(value, multiline=False)


def _multi_line(value: str) -> str:
    return _checked_text(value, multiline=True)


def _detail(value: str) -> str:
    """Shown verbatim, so only the blank lines around it go: a diff's first indent stays."""
    return _multi_line(value.strip("\n").rstrip())


def _not_other(label: str) -> str:
    if label.casefold().rstrip(".…: ") == "other":
        raise invalid('must not be "Other": a free-text answer is always offered')
    return label


# What an agent reads when its callback_url is refused, by the flaw found.
_CALLBACK_FLAWS = {
    addresses.Flaw.NOT_A_URL: "must be a valid http:// or https:// URL",
    addresses.Flaw.SCHEME: "must be an http:// or https:// URL with a host, e.g. https://agent.example.com/askuser",
    addresses.Flaw.CREDENTIALS: "must not carry credentials; check the Askuser-Signature header instead",
    addresses.Flaw.HOST: "must name its host in letters, digits, hyphens and dots (no %-escapes)",
    addresses.Flaw.PORT: "must use its scheme's own port",
}


def _callback_url(url: str) -> str:
    """Read with the sender's own parser, so that a URL accepted here is one the delivery can send to."""
    if any(char.isspace() for char in url) or control_character(url, allowed=""):
        raise invalid("must be a URL without spaces or control characters")
    try:
        target = addresses.checked(url, addresses.webhook_rules())
    except addresses.Unusable as unusable:
        if unusable.flaw is addresses.Flaw.PRIVATE:
            raise invalid(
                f"must not point to a loopback, private or other non-public address ({unusable.address}); "
                "set ASKUSER_WEBHOOK_ALLOW_PRIVATE=1 on the server to allow it"
            ) from None
        raise invalid(_CALLBACK_FLAWS[unusable.flaw]) from None
    if target.url.fragment:
        raise invalid("must not have a #fragment")
    return url


Line = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1), AfterValidator(_single_line)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1), AfterValidator(_multi_line)]
SESSION_KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$"
Key = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=128, pattern=SESSION_KEY_PATTERN)
]
CallbackUrl = Annotated[str, StringConstraints(strip_whitespace=True, max_length=2048), AfterValidator(_callback_url)]
QuestionId = Annotated[str, StringConstraints(strip_whitespace=True, max_length=64, pattern=r"^[a-z][a-z0-9_]*$")]
Label = Annotated[Line, StringConstraints(max_length=64), AfterValidator(_not_other)]
MAX_TITLE = 120
Title = Annotated[Line, StringConstraints(max_length=MAX_TITLE)]
Detail = Annotated[str, StringConstraints(strip_whitespace=False, max_length=MAX_DETAIL), AfterValidator(_detail)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)


class OptionIn(Strict):
    label: Label = Field(
        description='Short choice label (at most 64 characters). Append " (Recommended)" to the option you recommend.'
    )
    description: Annotated[Text, StringConstraints(max_length=200)] | None = Field(
        default=None, description="What choosing it means (at most 200 characters)."
    )


class QuestionIn(Strict):
    id: QuestionId = Field(description="snake_case key of this question in the answers, unique in the prompt.")
    header: Annotated[Line, StringConstraints(max_length=500)] = Field(
        description="Very short label shown as a chip; truncated to 12 characters."
    )
    question: Annotated[Text, StringConstraints(max_length=500)] = Field(
        description="The full question, one sentence, at most 500 characters."
    )
    options: list[OptionIn] = Field(
        min_length=2, max_length=4, description="2 to 4 distinct choices; never an Other option."
    )
    multiSelect: StrictBool = Field(default=False, description="Allow choosing several options.")
    detail: Detail | None = Field(
        default=None,
        description=(
            f"Optional plain text the user should see to decide (a command, a diff, a URL; at most {MAX_DETAIL} "
            "characters), shown verbatim in a monospace block under the question."
        ),
    )

    @functools.cached_property
    def short_header(self) -> str:
        # Read for the warnings and again for the row: split into graphemes once.
        return truncate_header(self.header)


class AskUserInput(Strict):
    """The ask_user tool's input: the questions and how long to wait."""

    questions: list[QuestionIn] = Field(min_length=1, max_length=MAX_QUESTIONS, description="1 to 3 questions.")
    timeoutSeconds: StrictInt = Field(
        default=DEFAULT_TIMEOUT,
        description=f"Seconds to wait, clamped to {MIN_TIMEOUT}–{MAX_TIMEOUT}; default {DEFAULT_TIMEOUT}.",
    )

    @property
    def timeout(self) -> int:
        return min(max(self.timeoutSeconds, MIN_TIMEOUT), MAX_TIMEOUT)

    def warnings(self) -> list[str]:
        notes = []
        for qi, question in enumerate(self.questions):
            if any(RECOMMENDED in o.label.casefold() for o in question.options[1:]):
                notes.append(f"questions[{qi}].options: put the recommended option first.")
            if question.short_header != question.header:
                notes.append(f"questions[{qi}].header: truncated to {question.short_header!r} (at most 12 characters).")
        if self.timeout != self.timeoutSeconds:
            notes.append(f"timeoutSeconds: {self.timeoutSeconds} was clamped to {self.timeout}.")
        return notes


class CreatePromptIn(AskUserInput):
    """POST /api/v1/prompts: the tool input plus where the call comes from."""

    session: Key = Field(description="The chat session key, chosen by the agent (e.g. support-42).")
    run_id: Key | None = Field(default=None, description="The agent run asking; generated when omitted.")
    run_kind: Literal["main", "subagent"] = Field(default="main", description="Only main runs may ask.")
    callback_url: CallbackUrl | None = Field(
        default=None,
        description=(
            "Where to POST the result when the prompt resolves, signed with the agent's webhook secret; "
            "a public address unless the server allows private ones."
        ),
    )
    title: Title | None = Field(
        default=None,
        description="Who is asking, in words the user recognises (e.g. claude-code · billing-service); "
        "names the session in the user's list. At most 120 characters.",
    )


class TypedQuestionIn(QuestionIn):
    """A question whose answer has a type (an MCP form's field): 0 to 4 options, and the
    ``rule`` an answer must keep (``typed_answer``). Only askuser's own hooks ask it."""

    options: list[OptionIn] = Field(default_factory=list, max_length=4)
    rule: dict[str, Any] = Field(default_factory=dict)


class TypedPromptIn(CreatePromptIn):
    # A list of a narrower kind of question; the API's own requests never carry one.
    questions: list[TypedQuestionIn] = Field(min_length=1, max_length=MAX_QUESTIONS)  # type: ignore[assignment]


class HookPromptIn(CreatePromptIn):
    """A coding agent's hook asks as the API does, with its tool's own question count."""

    questions: list[QuestionIn] = Field(min_length=1, max_length=HOOK_MAX_QUESTIONS)


_GRAPHEME = regex.compile(r"\X")


def truncate_header(header: str) -> str:
    """The first 12 user-perceived characters, never splitting an emoji or accent."""
    clusters = _GRAPHEME.findall(header)
    return "".join(clusters[:HEADER_LENGTH]).rstrip()


# --- errors ------------------------------------------------------------------

_TYPE_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "is not a known field",
    "string_type": "must be a string",
    "string_unicode": "must be valid Unicode text",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
    "literal_error": "must be one of {expected}",
    "string_pattern_mismatch": "{pattern_hint}",
    "string_too_long": "must be at most {max_length} characters",
    "string_too_short": "must not be blank",
    "too_short": "must have at least {min_length} item(s)",
    "too_long": "must have at most {max_length} item(s)",
}

_PATTERN_HINTS = {
    "^[a-z][a-z0-9_]*$": "must be snake_case: a lowercase letter, then lowercase letters, digits or underscores",
    SESSION_KEY_PATTERN: "must be letters, digits and . _ : @ - (starting with a letter or digit)",
}

_COUNT_MESSAGES = {
    "questions": f"must have 1 to {MAX_QUESTIONS} questions",
    "options": "must have 2 to 4 options",
}


def field_path(loc: tuple[int | str, ...] | list[int | str]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _message(error: Mapping[str, Any]) -> str:
    kind, ctx, loc = error["type"], error.get("ctx") or {}, error["loc"]
    if kind == "askuser":
        return str(error["msg"])
    if kind in ("too_short", "too_long") and loc and loc[-1] in _COUNT_MESSAGES:
        return f"{_COUNT_MESSAGES[loc[-1]]} (got {ctx.get('actual_length')})"
    if kind == "too_long" and isinstance(error.get("input"), str):
        return f"must be at most {ctx.get('max_length')} characters (got {len(error['input'])})"
    template = _TYPE_MESSAGES.get(kind)
    if template is None:
        return str(error["msg"])
    hint = _PATTERN_HINTS.get(str(ctx.get("pattern")), "has the wrong form")
    return template.format(pattern_hint=hint, **ctx)


class ContractError(Exception):
    """A request that breaks the contract; ``errors`` are ``{path, message}`` pairs."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        self.errors = errors
        super().__init__(self.sentence)

    @property
    def sentence(self) -> str:
        first = self.errors[0]
        more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        return f"{first['path']}: {first['message']}{more}."


def describe_errors(errors: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Pydantic errors as ``{path, message}`` pairs in our own words."""
    return [{"path": field_path(error["loc"]) or "body", "message": _message(error)} for error in errors]


def _duplicates(values: list[str], path: str) -> list[dict[str, str]]:
    errors: list[dict[str, str]] = []
    seen: dict[str, int] = {}
    for index, value in enumerate(values):
        folded = fold(value)
        if folded in seen:
            message = f"duplicates {path.format(seen[folded])} ({value!r}); each must be different"
            errors.append({"path": path.format(index), "message": message})
        seen.setdefault(folded, index)
    return errors


StrictModel = TypeVar("StrictModel", bound=Strict)


def validated(model: type[StrictModel], data: Any) -> StrictModel:
    """``data`` as ``model`` or ContractError naming every broken rule."""
    if not isinstance(data, dict):
        raise ContractError([{"path": "body", "message": "must be a JSON object"}])
    try:
        return model.model_validate(data)
    except PydanticValidationError as exc:
        raise ContractError(describe_errors(exc.errors())) from None


def parse_create(data: Any, model: type[CreatePromptIn] = CreatePromptIn) -> CreatePromptIn:
    """Validate a create body or raise ContractError naming every broken rule."""
    request = validated(model, data)
    errors = _duplicates([q.id for q in request.questions], "questions[{}].id")
    for qi, question in enumerate(request.questions):
        errors += _duplicates([o.label for o in question.options], f"questions[{qi}].options[{{}}].label")
    if errors:
        raise ContractError(errors)
    return request


def is_session_key(value: str) -> bool:
    """Whether ``value`` is a key a session can have (what Key accepts, once trimmed)."""
    return len(value) <= 128 and regex.fullmatch(SESSION_KEY_PATTERN, value) is not None


def error_body(code: str, detail: str, **extra: Any) -> dict[str, Any]:
    """Every API error: a machine code and a sentence saying what is wrong."""
    return {"error": code, "detail": detail, **extra}


# --- typed answers -------------------------------------------------------------
#
# A question may carry a rule its answer keeps (``TypedQuestionIn.rule``), a small
# JSON-schema-like description that the answer surfaces check before anything is
# recorded:
#   type: "string" | "number" | "integer"; required: bool (not skipped);
#   minLength, maxLength, format ("email" | "uri" | "date" | "date-time") for text;
#   minimum, maximum for numbers; values (with labels, as shown): the only answers
#   (a boolean's are true and false, shown Yes and No);
#   many: a list of them (minItems, maxItems).

YES, NO = "Yes", "No"
_INTEGER = regex.compile(r"[+-]?[0-9]+")
_NUMBER = regex.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_EMAIL = regex.compile(r"[^@\s]+@[^@\s.]+(?:\.[^@\s.]+)+")
_DATE = regex.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class Unfit(Exception):
    """An answer its question's rule refuses: ``message`` (English, a message id with
    ``%(header)s`` and ``params``) says what would fit."""

    def __init__(self, message: str, **params: Any) -> None:
        self.message, self.params = message, params
        super().__init__(message)


def typed_answer(rule: Mapping[str, Any], values: Sequence[str]) -> Any:
    """The answer ``values`` (option labels, typed text) as the rule's type: a string, a
    number, a boolean, a list of them for ``many``, None when skipped; Unfit if it breaks the rule."""
    if rule.get("many"):
        chosen = [_one(rule, value) for value in values]
        least, most = rule.get("minItems"), rule.get("maxItems")
        if values and isinstance(least, int) and len(chosen) < least:
            raise Unfit(gettext_noop("%(header)s: choose at least %(limit)s."), limit=least)
        if isinstance(most, int) and len(chosen) > most:
            raise Unfit(gettext_noop("%(header)s: choose at most %(limit)s."), limit=most)
        return chosen
    return _one(rule, values[0]) if values else None


def _one(rule: Mapping[str, Any], text: str) -> Any:
    if isinstance(rule.get("values"), list):
        return _choice(rule["values"], rule.get("labels") or rule["values"], text)
    kind = rule.get("type", "string")
    if kind in ("number", "integer"):
        return _number(rule, text, whole=kind == "integer")
    return _text(rule, text)


def _choice(values: list[Any], labels: list[str], text: str) -> Any:
    for value, label in zip(values, labels, strict=True):
        if fold(text) in (fold(label), fold(str(value))):
            return value
    raise Unfit(gettext_noop("%(header)s: choose one of: %(choices)s."), choices=", ".join(labels))


def _number(rule: Mapping[str, Any], text: str, *, whole: bool) -> int | float:
    text = text.strip().replace("_", "")
    if whole and not _INTEGER.fullmatch(text):
        raise Unfit(gettext_noop("%(header)s: type a whole number, like 42."))
    if not _NUMBER.fullmatch(text):
        raise Unfit(gettext_noop("%(header)s: type a number, like 42 or 2.5."))
    number: int | float = int(text) if _INTEGER.fullmatch(text) else float(text)
    if not math.isfinite(number):
        raise Unfit(gettext_noop("%(header)s: type a number, like 42 or 2.5."))
    least, most = rule.get("minimum"), rule.get("maximum")
    if isinstance(least, int | float) and number < least:
        raise Unfit(gettext_noop("%(header)s: type a number of at least %(limit)s."), limit=least)
    if isinstance(most, int | float) and number > most:
        raise Unfit(gettext_noop("%(header)s: type a number of at most %(limit)s."), limit=most)
    return number


_FORMATS = {
    "email": gettext_noop("%(header)s: type an email address, like name@example.com."),
    "uri": gettext_noop("%(header)s: type a full address, like https://example.com/page."),
    "date": gettext_noop("%(header)s: type a date as year-month-day, like 2026-12-31."),
    "date-time": gettext_noop("%(header)s: type a date and time, like 2026-12-31T17:30:00Z."),
}


def _text(rule: Mapping[str, Any], text: str) -> str:
    least, most = rule.get("minLength"), rule.get("maxLength")
    if isinstance(least, int) and len(text) < least:
        raise Unfit(gettext_noop("%(header)s: type at least %(limit)s characters."), limit=least)
    if isinstance(most, int) and len(text) > most:
        raise Unfit(gettext_noop("%(header)s: type at most %(limit)s characters."), limit=most)
    form = rule.get("format")
    if form in _FORMATS and not _formatted(form, text):
        raise Unfit(_FORMATS[form])
    return text


def _formatted(form: str, text: str) -> bool:
    if form == "email":
        return _EMAIL.fullmatch(text) is not None
    if form == "uri":
        parts = urlsplit(text)
        return bool(parts.scheme and (parts.netloc or parts.path)) and not any(c.isspace() for c in text)
    try:
        if form == "date":
            return _DATE.fullmatch(text) is not None and bool(date.fromisoformat(text))
        return "T" in text.upper() and bool(datetime.fromisoformat(text))
    except ValueError:
        return False


# --- results -----------------------------------------------------------------


def iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def pending_result(prompt_id: str, expires_at: datetime, extended: int = 0) -> dict[str, Any]:
    """A pending prompt: its deadline as it stands, and how often the person moved it."""
    return {"status": "pending", "id": prompt_id, "expires_at": iso(expires_at), "extended": extended}


def answered_result(
    prompt_id: str,
    answers: list[tuple[str, str, list[str], str, bool]],
    *,
    resolved_by: str | None,
    surface: str,
    resolved_at: datetime,
) -> dict[str, Any]:
    """``answers`` holds (question id, header, option labels, free text, skipped)."""
    values, details, skipped, summary = {}, {}, [], []
    for key, header, options, free_text, was_skipped in answers:
        values[key] = [*options, free_text] if free_text else list(options)
        details[key] = {"options": list(options), "free_text": free_text or None, "skipped": was_skipped}
        if was_skipped:
            skipped.append(key)
        summary.append(f"{header}: {summary_value(values[key], free_text, was_skipped)}")
    return {
        "status": "answered",
        "answers": {"answers": values},
        "id": prompt_id,
        "reason": None,
        "resolved_by": resolved_by,
        "surface": surface,
        "resolved_at": iso(resolved_at),
        "details": details,
        "skipped": skipped,
        "summary": summary,
    }


def summary_value(values: list[str], free_text: str, skipped: bool) -> str:
    if skipped:
        return wording.word("skipped", wording.for_agent)
    return ", ".join(f"“{value}”" if value == free_text else value for value in values)


def no_answer_result(
    prompt_id: str,
    questions: list[tuple[str, str]],
    *,
    reason: str,
    resolved_by: str | None,
    surface: str | None,
    resolved_at: datetime,
) -> dict[str, Any]:
    """``questions`` holds (question id, header). The same fields as an answer, so an agent
    reads ``details`` and ``skipped`` whatever the outcome; only a person skips a question."""
    word = wording.word(reason, wording.for_agent)
    skipped = reason == "skipped"
    return {
        "status": "no_answer",
        "id": prompt_id,
        "reason": reason,
        "resolved_by": resolved_by,
        "surface": surface,
        "resolved_at": iso(resolved_at),
        "details": {key: {"options": [], "free_text": None, "skipped": skipped} for key, _ in questions},
        "skipped": [key for key, _ in questions] if skipped else [],
        "summary": [f"{header}: {word}" for _, header in questions],
    }


def message_json(message: Any) -> dict[str, Any]:
    """A chat message as the agent API shows it."""
    return {
        "id": message.pk,
        "author": message.author,
        "text": message.text,
        "created_at": iso(message.created_at),
        "prompt": str(message.prompt_id) if message.prompt_id else None,
    }


# --- response documents (for the OpenAPI document; results are built above) ---


class Document(BaseModel):
    model_config = ConfigDict(extra="allow")


class AnswersOut(Document):
    answers: dict[str, list[str]]


class AnswerDetailOut(Document):
    options: list[str]
    free_text: str | None
    skipped: bool


class ResultOut(Document):
    """A prompt's state: pending, or the terminal result of SPEC 3.2."""

    status: Literal["pending", "answered", "no_answer"]
    id: str
    expires_at: str | None = Field(
        default=None,
        description="While pending: the deadline as it stands now; it moves when the person asks for more time.",
    )
    extended: int | None = Field(
        default=None,
        description="While pending: how many times the person asked for more time (each moves expires_at later).",
    )
    answers: AnswersOut | None = None
    reason: Literal["expired", "cancelled", "aborted", "skipped", "terminal", "decided"] | None = None
    resolved_by: str | None = None
    surface: str | None = None
    resolved_at: str | None = None
    details: dict[str, AnswerDetailOut] | None = None
    skipped: list[str] | None = None
    summary: list[str] | None = None


class CreatedOut(Document):
    id: str
    status: Literal["pending", "answered", "no_answer"]
    expires_at: str
    extended: int = Field(description="How many times the person asked for more time; 0 when just asked.")
    warnings: list[str]
    session: str
    run_id: str
    timeoutSeconds: int


class AbortedOut(Document):
    run_id: str
    status: Literal["aborted"]
    cancelled_prompt: str | None
    result: ResultOut | None


class MessageIn(Strict):
    text: str = Field(description="The message, at most 4000 characters.")
    title: Title | None = Field(default=None, description="Who is speaking, as for a prompt's title.")


class MessageOut(Document):
    id: int
    author: Literal["agent", "user", "system"]
    text: str
    created_at: str
    prompt: str | None


class MessagesOut(Document):
    messages: list[MessageOut]
    last_id: int


class FieldErrorOut(Document):
    path: str
    message: str


class ErrorOut(Document):
    error: str
    detail: str
    errors: list[FieldErrorOut] | None = None


# --- the tool definition -------------------------------------------------------

TOOL_NAME = "ask_user"

TOOL_DESCRIPTION = """\
Ask your user one to three structured questions and wait for the answers.

Use it only for decisions that belong to the user: a preference, a trade-off \
only they can weigh, an action with consequences they must own. Do not use it \
for routine confirmation, to ask permission to continue, or for facts you can \
find in the request, the code or a sensible default.

- Prefer a single question; ask at most three, and only when they belong together.
- Give 2 to 4 clear options. Put the option you recommend first and end its \
label with " (Recommended)".
- Never add an "Other" option: the user can always type their own answer.
- Keep `header` very short (12 characters); make `question` one clear sentence.
- When the user must see exact text to decide (the command to run, a diff, a URL), \
put it in the question's `detail` (plain text, at most 4,000 characters), not in `question`.
- The result is {"status": "answered", "answers": {"answers": {"<id>": ["<label or typed text>"]}}} \
or {"status": "no_answer"} when the user skipped, the question timed out or it was cancelled.
- After no_answer, continue with your best judgement and say which choice you made. \
Do not ask the same question again.
"""


@functools.cache
def _input_schema() -> dict[str, Any]:
    # Pydantic takes milliseconds to build it; it never changes while the process runs.
    return AskUserInput.model_json_schema()


def tool_definition() -> dict[str, Any]:
    schema = copy.deepcopy(_input_schema())
    return {
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "input_schema": schema,
        "result": {
            "answered": {"status": "answered", "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}}},
            "no_answer": {"status": "no_answer"},
        },
        "limits": {
            "questions": [1, MAX_QUESTIONS],
            "options": [2, 4],
            "header_length": HEADER_LENGTH,
            "detail_length": MAX_DETAIL,
            "timeout_seconds": {"default": DEFAULT_TIMEOUT, "min": MIN_TIMEOUT, "max": MAX_TIMEOUT},
        },
    }
