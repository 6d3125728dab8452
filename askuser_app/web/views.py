"""The human's Control UI: sessions, the chat timeline, the docked panel, the composer.

Each view serves the full page, or, for HTMX requests, the partials that
changed; forms post without JavaScript too (then the view redirects back).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from askuser_app.delivery import channels
from askuser_app.domain import contract, prefs, services
from askuser_app.models import Prompt, Session
from askuser_app.runtime import i18n
from askuser_app.runtime.asyncdb import dropping_old_connections
from askuser_app.runtime.http import LoggedInRequest
from askuser_app.web import ui

if TYPE_CHECKING:
    pass


def own_session(request: HttpRequest, key: str) -> Session:
    if not contract.is_session_key(key):  # PostgreSQL would refuse to even look (a NUL byte)
        raise Http404
    return get_object_or_404(Session.objects.select_related("agent"), owner=request.user, key=key)


def own_prompt(request: HttpRequest, key: str, prompt_id: str) -> Prompt:
    """The prompt ``prompt_id`` of the user's session ``key``, with its session, in one query
    (the session's agent is read only if a panel shows a prompt again)."""
    if not contract.is_session_key(key):
        raise Http404
    owned = Prompt.objects.select_related("session")
    return get_object_or_404(owned, pk=prompt_id, session__owner=request.user, session__key=key)


@login_required
def sessions_list(request: LoggedInRequest) -> HttpResponse:
    everything = request.GET.get("all") == "1"
    cursor = ui.timeline_cursor()  # before reading: the socket sends the list again only if it changed
    context = {**ui.sessions_context(request.user, everything=everything), "cursor": cursor}
    return render(request, "askuser/sessions.html", context)


@login_required
def session_page(request: LoggedInRequest, key: str, *, error: str = "", status: int = 200) -> HttpResponse:
    session = own_session(request, key)
    cursor = ui.timeline_cursor()  # before reading: the socket catches up on anything after
    context = {**ui.panel_context(session, request.COOKIES, error=error), "items": ui.timeline(session)}
    context["cursor"] = cursor
    context["mutable"] = channels.mutable()
    return render(request, "askuser/session.html", context, status=status)


@login_required
@require_POST
def mute_session(request: LoggedInRequest, key: str) -> HttpResponse:
    """The session page's switch: ``muted=1`` mutes its notifications on the person's devices,
    ``muted=0`` unmutes them; the page shows every question either way."""
    session = own_session(request, key)
    services.mute_session(session, by=request.user, muted=request.POST.get("muted") != "0")
    if not request.htmx:
        return redirect("session", key=key)
    return render(request, "askuser/partials/mute.html", {"session": session})


@login_required
def inbox_page(request: LoggedInRequest, *, error: str = "", error_for: str = "", status: int = 200) -> HttpResponse:
    """Every question waiting for the person, across their sessions, answerable in place."""
    cursor = ui.timeline_cursor()  # before reading: the socket sends the inbox again only if it changed
    context = {**ui.inbox_context(request.user, error=error, error_for=error_for), "cursor": cursor}
    return render(request, "askuser/inbox.html", context, status=status)


def from_inbox(request: HttpRequest) -> bool:
    """Whether a panel's form was posted from the inbox (its answer goes back there)."""
    return request.POST.get("from") == "inbox"


def back_to_page(request: HttpRequest, key: str) -> HttpResponse:
    return redirect("inbox") if from_inbox(request) else redirect("session", key=key)


@login_required
def prompt_page(request: LoggedInRequest, prompt_id: str) -> HttpResponse:
    """``/p/<id>/``, the link in chat messages: the prompt in its session's page."""
    prompt = get_object_or_404(Prompt.objects.select_related("session"), pk=prompt_id, session__owner=request.user)
    anchor = "prompt-panel" if prompt.is_pending else f"item-prompt-{prompt.pk}"
    return redirect(reverse("session", args=[prompt.session.key]) + f"#{anchor}")


@login_required
@require_POST
def answer_prompt(request: LoggedInRequest, key: str, prompt_id: str) -> HttpResponse:
    """The panel's form: Submit answers every question at once; Skip all skips them."""
    prompt = own_prompt(request, key, prompt_id)
    session = prompt.session  # read with the prompt; the announcement after commit names its owner
    resolved = None
    notice = error = ""
    try:
        if request.POST.get("action") == "skip_all":
            resolved = services.skip_all(prompt, by=request.user, surface="web")
        else:
            answers = ui.answers_from_form(prompt, request.POST)
            resolved = services.answer(prompt, answers, by=request.user, surface="web")
    except services.AlreadyResolved as lost:
        notice = lost.for_person
    except services.InvalidAnswer as refused:
        error = refused.for_person
    inbox = from_inbox(request)
    if not request.htmx:
        if error and inbox:
            return inbox_page(request, error=error, error_for=str(prompt_id), status=422)
        if error:
            return session_page(request, key, error=error, status=422)
        if notice:
            messages.info(request, notice)
        return back_to_page(request, key)
    if error:
        return HttpResponse(ui.render_notice(error, target=ui.panel_error_target(prompt_id, inbox=inbox)), status=422)
    if inbox:  # the card leaves the inbox and its summary joins "just answered"
        return HttpResponse(ui.render_inbox(request.user, oob=True) + ui.render_notice(notice))
    if resolved is not None:  # this request resolved it: the summary is the prompt in hand
        return HttpResponse(ui.render_resolved(resolved) + ui.render_notice(notice))
    return HttpResponse(ui.render_closed(session, prompt_id) + ui.render_notice(notice))


@login_required
@require_POST
def extend_prompt(request: LoggedInRequest, key: str, prompt_id: str) -> HttpResponse:
    """More time: the prompt's deadline moves; a refusal is told in the panel and changes nothing."""
    prompt = own_prompt(request, key, prompt_id)
    session = prompt.session
    notice, resolved = "", False
    try:
        services.extend(prompt, by=request.user, surface="web")
    except services.AlreadyResolved as lost:
        notice, resolved = lost.for_person, True
    except (services.Refused, services.Conflict) as refused:
        notice = refused.for_person
    inbox = from_inbox(request)
    if not request.htmx:
        if notice:
            messages.info(request, notice)
        return back_to_page(request, key)
    if resolved and inbox:
        html = ui.render_inbox(request.user, oob=True) + ui.render_notice(notice)
    elif resolved:  # the panel closes; the page's notice and the summary say what happened
        html = ui.render_closed(session, str(prompt_id)) + ui.render_notice(notice)
    else:
        html = ui.render_deadline_change(session, str(prompt_id), request.COOKIES, inbox=inbox)
        html += ui.render_notice(notice, target=ui.panel_error_target(prompt_id, inbox=inbox))
    return HttpResponse(html)


@login_required
@require_POST
def post_message(request: LoggedInRequest, key: str) -> HttpResponse:
    """The composer: a chat message, read as the reply while a prompt is pending."""
    session = own_session(request, key)
    try:
        posted = services.post_user_message(session, request.user, request.POST.get("text", ""))
    except services.InvalidMessage as refused:
        if not request.htmx:
            messages.error(request, refused.for_person)
            return redirect("session", key=key)
        return HttpResponse(ui.render_notice(refused.for_person, target="composer-error"), status=422)
    if not request.htmx:
        return redirect("session", key=key)
    html = ui.render_appended([ui.message_item(m) for m in (posted.message, posted.note) if m is not None])
    if posted.answered is not None:
        html += ui.render_resolved(posted.answered)
    return HttpResponse(html + ui.render_notice("", target="composer-error"))


@login_required
def settings_page(request: LoggedInRequest) -> HttpResponse:
    """The person's settings: notifications, each notifier's (devices, email), coding agents,
    language, and a link to the chat apps."""
    preferences = prefs.of(request.user)
    context = {"preferences": preferences, **channels.sections(request)}
    return render(request, "askuser/settings.html", context)


@login_required
@require_POST
def settings_agents(request: LoggedInRequest) -> HttpResponse:
    """Save whether the person is told when a coding agent finishes: the box ticked or not."""
    asked = request.POST.get("tell_finished", "")
    if asked not in ("", "on"):
        context = {"preferences": prefs.of(request.user), **channels.sections(request)}
        context["agents_error"] = _("Tick the box or leave it empty.")
        return render(request, "askuser/settings.html", context, status=422)
    prefs.choose_tell_finished(request.user, asked == "on")
    messages.success(request, _("Coding agent settings saved."))
    return redirect(reverse("settings") + "#settings-agents")


@require_POST
def set_language(request: HttpRequest) -> HttpResponse:
    """The language switcher (the header's, the settings page's): kept with a logged-in
    person's preferences, and in the language cookie for pages before the login.
    "" follows the browser's language again; back to ``next`` when it is this site's."""
    asked = request.POST.get("language", "")
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        target = reverse("sessions")
    response = redirect(target)
    language = i18n.supported(asked)
    if asked and not language:  # not a language of ours: nothing changes
        return response
    if request.user.is_authenticated:
        i18n.choose(request.user, language)
    if language:
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            language,
            max_age=settings.LANGUAGE_COOKIE_AGE,
            samesite="Lax",
            httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
            secure=settings.LANGUAGE_COOKIE_SECURE,
        )
    else:
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME, samesite="Lax")
    return response


def locked_out(request: HttpRequest, response: HttpResponse | None = None, credentials: Any = None) -> HttpResponse:
    """A login refused by django-axes: too many wrong passwords for this user from this address."""
    context = {
        "limit": settings.AXES_FAILURE_LIMIT,
        "minutes": max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)),
    }
    return render(request, "registration/locked_out.html", context, status=429)


@dropping_old_connections
def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404: JSON for the agent API, the Control UI's page for people.

    A path no route matches is turned into this page by Django's ASGI handler on a thread
    of asyncio's own (``response_for_exception``, ``thread_sensitive=False``), where the page
    reads the person's login and user; no ``request_finished`` drops that connection there,
    so it is dropped here, or each such thread would keep one out of PostgreSQL's pool."""
    if request.path.startswith("/api/"):
        body = {
            "error": "not_found",
            "detail": f"No API endpoint {request.path}; see /api/v1/docs.",
        }  # English: the contract
        return JsonResponse(body, status=404)
    return render(request, "404.html", status=404)


# The installed app's colours: --accent and --bg of static/askuser/app.css (its light scheme).
THEME_COLOR = "#4f46e5"
BACKGROUND_COLOR = "#f5f6f8"


def _icon(name: str, size: int, purpose: str) -> dict[str, str]:
    """One of the PNGs tools/make_icons.py draws (``static/askuser/icons/``)."""
    return {"src": static(f"askuser/icons/{name}"), "sizes": f"{size}x{size}", "type": "image/png", "purpose": purpose}


@require_GET
def manifest(request: HttpRequest) -> JsonResponse:
    """The web app manifest, which makes the Control UI an installable app (a home screen icon, its
    own window; on iOS, Web Push at all). Public, as browsers fetch it without the login cookie;
    in the page's language (``?lang=``, as the page links it)."""
    language = i18n.supported(request.GET.get("lang")) or translation.get_language()
    with translation.override(language):
        app = {
            "id": "/",
            "name": "askuser",
            "short_name": "askuser",
            "description": _("Answer your agents' questions, also from your lock screen."),
            "lang": language,
            "dir": "rtl" if translation.get_language_bidi() else "ltr",
            "start_url": reverse("sessions"),
            "scope": "/",
            "display": "standalone",
            "theme_color": THEME_COLOR,
            "background_color": BACKGROUND_COLOR,
            "icons": [
                {
                    "src": static("askuser/icons/icon-192.png"),
                    "sizes": "192x192",
                    "type": "image/png",
                    "purpose": "any",
                },
                {
                    "src": static("askuser/icons/icon-512.png"),
                    "sizes": "512x512",
                    "type": "image/png",
                    "purpose": "any",
                },
                {
                    "src": static("askuser/icons/icon-maskable-512.png"),
                    "sizes": "512x512",
                    "type": "image/png",
                    "purpose": "maskable",
                },
            ],
            "shortcuts": [{"name": _("Inbox"), "url": reverse("inbox")}],
        }
    return JsonResponse(app, content_type="application/manifest+json", json_dumps_params={"ensure_ascii": False})
