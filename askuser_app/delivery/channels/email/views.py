"""The pages a mail links to, and the email half of the settings page.

``/chat/email/<token>/``: the signed link of a mail (``mails.py`` beside this one)
is the credential, so no login is needed, and a GET only shows: the question, the
option the link names with one button to confirm it, More time, and a link to the
prompt in the Control UI. Link scanners that fetch every URL in a mail change
nothing. The confirming POST carries the page's CSRF token. A link is good once:
the answer resolves the prompt, and every link of a resolved prompt only says how
it was resolved. Nothing here redirects, so no link can send a person elsewhere.

``/settings/email/``: the person's choice of when to be emailed, and ``section``, what the
settings page's email section shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_POST

from askuser_app.delivery import channels
from askuser_app.delivery.channels import links
from askuser_app.delivery.channels.chats import core
from askuser_app.delivery.channels.email import mails as mail
from askuser_app.delivery.channels.email.adapter import adapter
from askuser_app.domain import prefs, services
from askuser_app.domain.chars import ascii_int
from askuser_app.models import Prompt

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from askuser_app.runtime.http import LoggedInRequest

PRIVATE_HEADERS = {
    # The URL is a credential: never cached, never indexed, never sent to another site as a
    # Referer. (Not "no-referrer": a form's POST would then say "Origin: null", which CSRF refuses.)
    "Cache-Control": "no-store, private",
    "Referrer-Policy": "same-origin",
    "X-Robots-Tag": "noindex, nofollow",
}


def _page(request: HttpRequest, context: dict[str, Any], status: int = 200) -> HttpResponse:
    response = render(request, "askuser/email/page.html", context, status=status)
    for name, value in PRIVATE_HEADERS.items():
        response[name] = value
    return response


def _refused(request: HttpRequest, status: int, message: str) -> HttpResponse:
    return _page(request, {"refused": message}, status)


def _said(bad: links.BadLink) -> str:
    """Why a link is good for nothing, as a mail's link."""
    return {
        "expired": _("This link has expired. Open askuser to see your questions."),
        "invalid": _("This link is not valid. Use the link in the mail exactly as it was sent."),
        "gone": _("This question is no longer available."),
        "stranger": _("This link is not valid for this question. Use the link in your latest mail."),
    }[bad.why]


@require_http_methods(["GET", "POST"])
def email_page(request: HttpRequest, token: str) -> HttpResponse:
    """GET shows; POST ``action=answer`` confirms the link's option, ``action=more_time`` extends."""
    if not adapter.configured():
        raise Http404
    try:
        link = mail.read_token(token)
        prompt, owner = links.linked(link, mail.holds)
    except links.BadLink as bad:
        return _refused(request, bad.status, _said(bad))
    with translation.override(mail.owner_language(mail.preferences_of(owner))):
        return _respond(request, link, prompt, owner)


def _respond(request: HttpRequest, link: links.Link, prompt: Prompt, owner: User) -> HttpResponse:
    if prompt.is_overdue():
        services.result_expiring_if_overdue(prompt)
        prompt.refresh_from_db()
    choice = _choice(prompt, link)
    # A hook's prompt: an option link (from before its mails had none) shows the page, choosing nothing.
    if link.option is not None and choice is None and not prompt.hook_event:
        return _refused(request, 400, _("This link is not valid. Use the link in the mail exactly as it was sent."))
    if request.method != "POST":
        return _show(request, prompt, owner, choice)
    action = request.POST.get("action", "")
    if action == "answer" and choice is not None:
        key, label = choice
        try:
            prompt = services.answer(prompt, {key: [label]}, by=owner, surface="email")
        except services.AlreadyResolved as lost:
            return _show(request, lost.prompt, owner, choice, status=409)
        except services.InvalidAnswer as refused:
            return _show(request, prompt, owner, choice, notice=refused.for_person, status=422)
        return _show(request, prompt, owner, choice)
    if action == "more_time":
        try:
            extended = services.extend(prompt, by=owner, surface="email")
        except services.AlreadyResolved as lost:
            return _show(request, lost.prompt, owner, choice, status=409)
        except (services.Refused, services.Conflict) as refused:
            prompt.refresh_from_db()
            return _show(request, prompt, owner, choice, notice=refused.for_person, status=409)
        minutes = round((extended.prompt.expires_at - extended.previous).total_seconds() / 60)
        added = ngettext("%(minutes)s more minute.", "%(minutes)s more minutes.", minutes) % {"minutes": minutes}
        return _show(request, extended.prompt, owner, choice, notice=added)
    return _show(request, prompt, owner, choice, notice=_("Choose one of the buttons below."), status=400)


def _choice(prompt: Prompt, link: links.Link) -> tuple[str, str] | None:
    """The question key and option label the link names, when a link may choose it
    (``links.choosable``: never an option that allows what a hook asked)."""
    return links.choice(prompt, services.questions_of(prompt), link.option)


def _show(
    request: HttpRequest,
    prompt: Prompt,
    owner: User,
    choice: tuple[str, str] | None,
    *,
    notice: str = "",
    status: int = 200,
) -> HttpResponse:
    context: dict[str, Any] = {
        "prompt": prompt,
        "owner": owner,
        "choice": choice[1] if choice else "",
        "notice": notice,
    }
    context["prompt_url"] = core.prompt_url(prompt.pk)
    if prompt.is_pending:
        now = timezone.now()
        context |= mail.mail_context(prompt, owner, now)
        context["can_extend"] = services.can_extend(prompt, now)
    else:
        context["outcome"] = core.outcome(prompt)
    return _page(request, context, status)


# --- the settings page's email section ---------------------------------------------------------


@dataclass
class EmailSettings:
    """What ``askuser/settings/email.html`` shows."""

    address: str
    smtp: bool
    chosen: int  # seconds; 0 is off
    choices: list[tuple[int, str]] = field(default_factory=list)
    error: str = ""
    saved: bool = False


def choice_label(seconds: int) -> str:
    if not seconds:
        return _("Off")
    minutes = seconds // 60
    return ngettext("After %(minutes)s minute", "After %(minutes)s minutes", minutes) % {"minutes": minutes}


def email_settings(user: User, *, error: str = "", saved: bool = False, chosen: int | None = None) -> EmailSettings:
    preferences = prefs.of(user)
    after = prefs.email_after(user, preferences)
    if chosen is None:
        # What applies now; without an address that is off, whatever was stored.
        chosen = int(after.total_seconds()) if after is not None else (preferences.email_after or 0)
    return EmailSettings(
        address=user.email,
        smtp=settings.ASKUSER_EMAIL_SMTP,
        chosen=chosen,
        choices=[(seconds, choice_label(seconds)) for seconds in prefs.EMAIL_CHOICES],
        error=error,
        saved=saved,
    )


def section(request: LoggedInRequest) -> EmailSettings:
    """The settings page's email section, as the person left it."""
    return email_settings(request.user)


@login_required
@require_POST
def settings_email(request: LoggedInRequest) -> HttpResponse:
    """Save when to be emailed: one of ``prefs.EMAIL_CHOICES`` (0 is off)."""
    seconds = ascii_int(request.POST.get("email_after"))
    if seconds is None or seconds not in prefs.EMAIL_CHOICES:
        error = _("Choose Off or one of the delays listed.")
        state = email_settings(request.user, error=error)
        return _settings_response(request, state, status=422)
    prefs.choose_email_after(request.user, seconds)
    if not request.htmx:
        messages.success(request, _("Email settings saved."))
        return redirect("settings")
    return _settings_response(request, email_settings(request.user, saved=True))


def _settings_response(request: LoggedInRequest, state: EmailSettings, status: int = 200) -> HttpResponse:
    if request.htmx:
        return render(request, "askuser/settings/email.html", {"email": state}, status=status)
    context = {"preferences": prefs.of(request.user), **channels.sections(request), "email": state}
    return render(request, "askuser/settings.html", context, status=status)
