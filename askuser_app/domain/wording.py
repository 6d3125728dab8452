"""What happened to a prompt, and where, in words: one table for every reader.

The result summary and the 409 sentence an agent gets, the caption under a
summary in the Control UI, the admin and chat messages all say a prompt's
outcome with these entries, so they cannot drift apart.

Two audiences read them, and which one a caller writes for is explicit:

- ``for_agent``: English, always. Results and agent API errors are read by
  models and programs, and the contract is written in English.
- ``for_person``: the person's language (``gettext``). The Control UI, the
  admin and chat messages.

Each entry is written once, as its English message id; ``gettext_noop``
marks it for ``makemessages`` without translating it where it is defined.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone
from django.utils.translation import gettext, gettext_noop, ngettext, pgettext

Say = Callable[[str], str]


def for_agent(message: str) -> str:
    """The English words, untranslated: what agents receive."""
    return message


def for_person(message: str) -> str:
    """The words in the language of the person reading them."""
    return gettext(message)


@dataclass(frozen=True)
class Outcome:
    """One outcome in its three forms; ``%(…)s`` are filled in by ``caption``/``sentence``."""

    word: str  # a question's line in a summary: "Deploy: Skipped"
    caption: str  # under a summary: "Skipped on the web by alice"
    sentence: str  # to whoever tries to resolve it again: the 409 detail


OUTCOMES = {
    "answered": Outcome(
        word=gettext_noop("Answered"),
        caption=gettext_noop("Answered %(where)s%(by)s"),
        sentence=gettext_noop("This prompt was already answered %(where)s%(by)s at %(when)s."),
    ),
    "skipped": Outcome(
        word=gettext_noop("Skipped"),
        caption=gettext_noop("Skipped %(where)s%(by)s"),
        sentence=gettext_noop("This prompt was already skipped %(where)s%(by)s at %(when)s."),
    ),
    "expired": Outcome(
        word=gettext_noop("Expired"),
        caption=gettext_noop("Expired: no answer before the deadline"),
        sentence=gettext_noop("This prompt expired at %(when)s; answers are accepted only before the deadline."),
    ),
    "cancelled": Outcome(
        word=gettext_noop("Cancelled"),
        caption=gettext_noop("Cancelled %(canceller)s"),
        sentence=gettext_noop("This prompt was cancelled %(canceller)s at %(when)s."),
    ),
    "aborted": Outcome(
        word=gettext_noop("Cancelled"),
        caption=gettext_noop("Cancelled: the agent's run was aborted"),
        sentence=gettext_noop("This prompt was cancelled at %(when)s because the agent's run was aborted."),
    ),
    # A coding agent's hook stopped waiting; its own dialog at the terminal asks instead.
    "terminal": Outcome(
        word=gettext_noop("Asked at the terminal"),
        caption=gettext_noop("Asked at the terminal instead"),
        sentence=gettext_noop("This prompt was handed back to the agent's terminal at %(when)s; answer it there."),
    ),
    # A later event of the coding agent showed it had decided at its terminal: an answer here
    # would decide nothing, so none is taken.
    "decided": Outcome(
        word=gettext_noop("Decided at the terminal"),
        caption=gettext_noop("Decided at the terminal"),
        sentence=gettext_noop("Decided at the terminal at %(when)s; this answer was not recorded."),
    ),
}

# Where a prompt was resolved, as it follows the outcome: "answered on the web". A channel's
# words ("on Telegram", "by email") are declared in its folder, and added when the app is ready (``add_surfaces``).
SURFACES = {
    "web": gettext_noop("on the web"),
    "text": gettext_noop("by a text reply"),
    "api": gettext_noop("through the API"),
    "admin": gettext_noop("in the admin"),
}
ELSEWHERE = gettext_noop("elsewhere (%(surface)s)")  # a surface this table does not name
BY = gettext_noop(" by %(user)s")
CANCELLED_BY = gettext_noop("by %(user)s %(where)s")
CANCELLED_BY_AGENT = gettext_noop("by the agent")
STILL_PENDING = gettext_noop("This prompt is still pending.")


def add_surfaces(words: Mapping[str, str]) -> None:
    """More surfaces and their words, each its English message id (marked with ``gettext_noop``)."""
    SURFACES.update(words)


def outcome_of(status: str, reason: str) -> str | None:
    """The ``OUTCOMES`` key of a prompt's status and reason; None while it is pending."""
    if status == "answered":
        return "answered"
    return reason if reason in OUTCOMES else None


def word(outcome: str, say: Say) -> str:
    return say(OUTCOMES[outcome].word)


def where(surface: str, say: Say) -> str:
    if surface in SURFACES:
        return say(SURFACES[surface])
    return say(ELSEWHERE) % {"surface": surface} if surface else ""


def caption(outcome: str, surface: str, user: str | None, say: Say) -> str:
    """What happened, without when: "Answered by a text reply by alice"."""
    return say(OUTCOMES[outcome].caption) % _places(surface, user, say)


def sentence(outcome: str, surface: str, user: str | None, when: str, say: Say) -> str:
    """What happened, as a full sentence with its time."""
    return say(OUTCOMES[outcome].sentence) % {**_places(surface, user, say), "when": when}


def _places(surface: str, user: str | None, say: Say) -> dict[str, str]:
    place = where(surface, say)
    by = say(BY) % {"user": user} if user else ""
    # A person cancels in the admin; with nobody named, the agent cancelled through the API.
    canceller = say(CANCELLED_BY) % {"user": user, "where": place} if user else say(CANCELLED_BY_AGENT)
    return {"where": place, "by": by, "canceller": canceller}


# --- chat messages ---------------------------------------------------------------
# The one outcome line a chat message of a resolved prompt ends with. An answer
# names the declared option labels only: a person's own words may be private.
CHAT_ANSWERED = gettext_noop("Answered: %(answers)s —%(by)s %(where)s")
OWN_ANSWER = gettext_noop("own answer")
NOTHING_CHOSEN = gettext_noop("nothing")


def chat_outcome(
    outcome: str, surface: str, user: str | None, answers: list[tuple[str, list[str], bool]], say: Say
) -> str:
    """ "Answered: Production — by alice on Telegram", "Skipped on the web by alice", "Expired: …".

    ``answers``: per question its header, the option labels chosen, and whether
    it had an own answer; the header is named only when there are several."""
    if outcome != "answered":
        return caption(outcome, surface, user, say)
    parts = []
    for header, labels, own in answers:
        shown = ", ".join([*labels, *([say(OWN_ANSWER)] if own else [])]) or say(NOTHING_CHOSEN)
        parts.append(f"{header}: {shown}" if len(answers) > 1 else shown)
    by = say(BY) % {"user": user} if user else ""
    return say(CHAT_ANSWERED) % {"answers": "; ".join(parts), "by": by, "where": where(surface, say)}


# --- spans of time -----------------------------------------------------------
# Django's ``timeuntil`` and ``timesince`` have no Hindi translation of their
# units, so askuser says them with its own (askuser_app/locale).


def span(seconds: float) -> str:
    """A span of time in at most two units: days and hours, hours and minutes, or seconds under a minute."""
    seconds = max(0, int(seconds))
    if seconds >= 86400:
        days, hours = seconds // 86400, seconds % 86400 // 3600
        said_days = ngettext("%(num)d day", "%(num)d days", days) % {"num": days}
        if not hours:
            return said_days
        said = ngettext("%(num)d hour", "%(num)d hours", hours) % {"num": hours}
        return pgettext("days and hours", "%(days)s %(hours)s") % {"days": said_days, "hours": said}
    hours, minutes = seconds // 3600, seconds % 3600 // 60
    if not hours and not minutes:
        return ngettext("%(num)d second", "%(num)d seconds", seconds) % {"num": seconds}
    said = ngettext("%(num)d minute", "%(num)d minutes", minutes) % {"num": minutes}
    if not hours:
        return said
    said_hours = ngettext("%(num)d hour", "%(num)d hours", hours) % {"num": hours}
    if not minutes:
        return said_hours
    return pgettext("hours and minutes", "%(hours)s %(minutes)s") % {"hours": said_hours, "minutes": said}


def time_left(moment: datetime, now: datetime | None = None) -> str:
    """From ``now`` until ``moment``: "14 minutes"."""
    return span((moment - (now or timezone.now())).total_seconds())


def time_since(moment: datetime, now: datetime | None = None) -> str:
    """From ``moment`` until ``now``: "3 hours 2 minutes"."""
    return span(((now or timezone.now()) - moment).total_seconds())
