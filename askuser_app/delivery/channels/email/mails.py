"""Email: a prompt left unanswered for a while is mailed to its owner, through the delivery engine.

``recipients`` runs in the creating transaction and names the owner's address
when their preferences say so (``prefs.email_after``): the ``Delivery`` waits
that long, and is dropped if the prompt resolves first. ``send`` runs on the
delivery engine: it reads the prompt again (a resolved one, or an owner who turned
mail off or changed address meanwhile, is never mailed), renders plain text
and HTML in the owner's language, and hands it to Django's mail backend (SMTP
with ``EMAIL_HOST``, else files in the data folder) on a thread. Mail cannot
be edited, so a resolution sends nothing more.

Each mail carries signed links (``make_token``) to the email page
(``askuser_app/delivery/channels/email/views.py``): one per option for a single single-select
question (``one_tap``), and one for More time. A prompt a coding agent's hook
asked (a permission: "Allow" runs a command) has no option links: its mail
links to its page, where the person reads it and answers with a click. A link names the prompt, the owner, a digest
of the address it was sent to and the option; it is the credential (no login
needed), so it is only ever read, never acted on, by a GET, and it dies with
the prompt, the owner's change of address, or its age cap.
"""

from __future__ import annotations

import hashlib
import smtplib
import uuid
from dataclasses import dataclass
from datetime import datetime
from email.utils import make_msgid
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import formats, timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from askuser_app.delivery.channels import links
from askuser_app.delivery.channels.base import News, Permanent, Temporary
from askuser_app.delivery.channels.chats.core import prompt_url
from askuser_app.domain import prefs, services, textreply, wording
from askuser_app.models import Preferences, Prompt
from askuser_app.runtime import i18n

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from askuser_app.models import Question

TOKEN_SALT = "askuser.chat.email.link"


def address_digest(address: str) -> str:
    """A short digest of an address: the link is bound to it without showing it in URLs and logs."""
    return hashlib.sha256(address.strip().lower().encode()).hexdigest()[:16]


def make_token(prompt_id: uuid.UUID, user: User, option: int | None = None) -> str:
    """A mail's signed link (``channels.links``), held by the address it is mailed to."""
    return links.make(TOKEN_SALT, prompt_id, user, address_digest(user.email), option)


def read_token(token: str) -> links.Link:
    """The link's content; ``links.BadLink`` for anything not signed for a mail, or too old."""
    return links.read(TOKEN_SALT, token)


def holds(owner: User, holder: str) -> bool:
    """A mail's link is good while its owner still has the address it was mailed to."""
    return address_digest(owner.email) == holder


def link_url(token: str) -> str:
    return settings.ASKUSER_PUBLIC_URL + reverse("email_page", args=[token])


# --- the mail ---------------------------------------------------------------------------


def owner_language(preferences: Preferences | None) -> str:
    """The owner's chosen language when the Control UI speaks it (``i18n.supported``), else the default."""
    return i18n.supported(preferences.language if preferences is not None else "") or settings.LANGUAGE_CODE


def preferences_of(user: User) -> Preferences | None:
    """The user's preferences, read by a ``select_related("preferences")`` (None when never saved)."""
    found: Preferences | None = getattr(user, "preferences", None)
    return found


def time_left(expires_at: datetime, now: datetime | None = None) -> str:
    """ "14 minutes", in the active language (the pages' own units: Django's have no Hindi)."""
    return wording.time_left(expires_at, now)


def deadline(expires_at: datetime) -> str:
    """The deadline's date and time, in the active language's format."""
    local = timezone.localtime(expires_at)
    return f"{formats.date_format(local, 'DATETIME_FORMAT')} {formats.date_format(local, 'T')}"


def one_tap(prompt: Prompt, rows: list[Question]) -> bool:
    """Whether a mail links each option: when a link may choose every one (``links.choosable``);
    a mail that linked some and not others would read as if the others were missing."""
    return bool(rows) and len(links.choosable(prompt, rows)) == len(rows[0].options.all())


def mail_context(prompt: Prompt, owner: User, now: datetime | None = None) -> dict[str, Any]:
    """What the mail (and the email page) shows of a pending prompt, in the active language."""
    rows = services.questions_of(prompt)
    questions = [textreply.TextQuestion.of(q) for q in rows]
    tap = one_tap(prompt, rows)
    shown = []
    for question in questions:
        options = [
            {
                "label": label,
                "description": description,
                "url": link_url(make_token(prompt.pk, owner, index)) if tap else "",
            }
            for index, (label, description) in enumerate(zip(question.options, question.descriptions, strict=False))
        ]
        shown.append(
            {
                "header": question.header,
                "text": question.text,
                "detail": question.detail,
                "multi": question.multi_select,
                "options": options,
            }
        )

    return {
        "agent": prompt.agent.name,
        "title": questions[0].header if len(questions) == 1 else questions_count(len(questions)),
        "questions": shown,
        "one_tap": tap,
        "time_left": time_left(prompt.expires_at, now),
        "deadline": deadline(prompt.expires_at),
        "prompt_url": prompt_url(prompt.pk),
        "more_time_url": link_url(make_token(prompt.pk, owner)) if services.can_extend(prompt, now) else "",
        "more_time_minutes": round(settings.ASKUSER_EXTEND_SECONDS / 60),
        "settings_url": settings.ASKUSER_PUBLIC_URL + reverse("settings"),
        "language": translation.get_language() or settings.LANGUAGE_CODE,
    }


def questions_count(count: int) -> str:
    return ngettext("%(count)d question", "%(count)d questions", count) % {"count": count}


@dataclass(frozen=True)
class Mail:
    message: EmailMultiAlternatives
    message_id: str


def _domain() -> str:
    return urlsplit(settings.ASKUSER_PUBLIC_URL).hostname or "askuser.invalid"


def compose(prompt_id: uuid.UUID, address: str) -> Mail | None:
    """The mail for a prompt still waiting, to its owner at ``address``; None when it should not go:
    the prompt resolved (or its deadline passed), the owner turned mail off or has another address."""
    prompt = Prompt.objects.select_related("agent", "session__owner__preferences").filter(pk=prompt_id).first()
    now = timezone.now()
    if prompt is None or not prompt.is_pending or prompt.is_overdue(now):
        return None
    owner = prompt.session.owner
    preferences = preferences_of(owner)
    if not owner.is_active or owner.email != address:
        return None
    if prefs.email_after(owner, preferences or Preferences(user=owner)) is None:
        return None
    with translation.override(owner_language(preferences)):
        context = mail_context(prompt, owner, now)
        subject = _("%(agent)s asks: %(title)s") % {"agent": context["agent"], "title": context["title"]}
        text = render_to_string("askuser/email/prompt.txt", context)
        html = render_to_string("askuser/email/prompt.html", context)
    message_id = make_msgid("askuser", domain=_domain())
    headers = {"Message-ID": message_id, "Auto-Submitted": "auto-generated", "X-Auto-Response-Suppress": "All"}
    message = EmailMultiAlternatives(" ".join(subject.split()), text, to=[address], headers=headers)
    message.attach_alternative(html, "text/html")
    return Mail(message, message_id)


def compose_news(news: News, address: str) -> Mail:
    """A coding agent's news as a short plain mail: the session, what the agent said, its page."""
    subject = " ".join(f"{news.title}: {news.text}".split())
    text = f"{news.title}\n\n{news.text}\n\n" + _("Open in askuser: %(url)s") % {"url": news.url} + "\n"
    message_id = make_msgid("askuser", domain=_domain())
    headers = {"Message-ID": message_id, "Auto-Submitted": "auto-generated", "X-Auto-Response-Suppress": "All"}
    cut = subject if len(subject) <= 150 else subject[:149] + "…"
    return Mail(EmailMultiAlternatives(cut, text, to=[address], headers=headers), message_id)


def _refusal(code: int, message: bytes | str) -> str:
    said = message.decode(errors="replace") if isinstance(message, bytes) else str(message)
    return f"{code} {said}".strip()


def deliver(mail: Mail) -> None:
    """Hand the mail to the backend; its failure as the delivery engine understands it."""
    try:
        mail.message.send(fail_silently=False)
    except smtplib.SMTPRecipientsRefused as refused:
        said = "; ".join(_refusal(code, text) for code, text in refused.recipients.values())
        if refused.recipients and all(400 <= code < 500 for code, _text in refused.recipients.values()):
            raise Temporary(f"The mail server deferred the recipient: {said}") from refused
        raise Permanent(f"The mail server refused the recipient: {said}") from refused
    except smtplib.SMTPResponseException as refused:  # sender refused, data refused, authentication failed
        said = _refusal(refused.smtp_code, refused.smtp_error)
        if 500 <= refused.smtp_code < 600:
            raise Permanent(f"The mail server refused the mail: {said}") from refused
        raise Temporary(f"The mail server deferred the mail: {said}") from refused
    except smtplib.SMTPNotSupportedError as unsupported:  # STARTTLS or AUTH the server does not offer
        raise Permanent(f"The mail server does not support this: {unsupported}") from unsupported
    except (smtplib.SMTPException, OSError) as failed:  # disconnected, refused connection, timeout, TLS
        raise Temporary(f"The mail server could not be reached: {type(failed).__name__}: {failed}") from failed
