"""``/sw.js``, ``/push/…`` and ``/settings/push/…``: the service worker, its buttons' taps, and
this person's devices for Web Push and how long a new question waits before it is pushed to them.

The browser's side (``static/askuser/push.js``) posts JSON with the CSRF token
in a header; the list's Remove and the test button are plain forms, which
htmx upgrades to swap the settings partial in place; ``section`` is what that
partial shows, on the settings page too.

``/push/answer`` and ``/push/mute`` take what a notification's button carries, posted by the
service worker (``answerFromNotification`` in ``static/askuser/sw.js``) without cookies: a signed
token (``channels.links``, the check a mail's links have) is the credential, so these two, and
only for POST, need no CSRF token, and no session. An answer goes through ``services`` as every
surface's does (surface "push"); a mute through ``services.mute_session``. Each says, in the
owner's language, what happened or why not, with a status: 400 a token not ours or tampered
with, 403 another person's (or a device no longer theirs), 404 a prompt that is gone, 409 a
prompt resolved (the token's one use is spent) or a session muted already, 410 too old.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.staticfiles import finders
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from askuser_app.delivery.channels import links
from askuser_app.delivery.channels.chats.core import outcome
from askuser_app.delivery.channels.push import adapter as push
from askuser_app.domain import prefs, services
from askuser_app.domain.chars import ascii_int
from askuser_app.models import PushSubscription
from askuser_app.runtime import i18n

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from askuser_app.runtime.http import LoggedInRequest

MAX_SUBSCRIPTION = 8 * 1024  # an endpoint of at most 2 KiB and two short keys


def section(request: LoggedInRequest, tried: list[push.Tried] | None = None, **grace: Any) -> dict[str, Any]:
    """What ``askuser/settings/push.html`` shows: whether push is on here, the devices, how long a
    new question waits before it is pushed, a test's results."""
    on = push.adapter.configured()
    devices = list(PushSubscription.objects.filter(user=request.user)) if on else []
    shown = {"on": on, "public_key": push.public_key() if on else "", "devices": devices, "tried": tried}
    return shown | grace_choice(request.user, **grace)


def grace_label(seconds: int) -> str:
    if not seconds:
        return _("At once")
    if seconds % 60:
        return ngettext("After %(seconds)s second", "After %(seconds)s seconds", seconds) % {"seconds": seconds}
    minutes = seconds // 60
    return ngettext("After %(minutes)s minute", "After %(minutes)s minutes", minutes) % {"minutes": minutes}


def grace_choice(user: User, *, error: str = "", saved: bool = False) -> dict[str, Any]:
    """The person's grace as the select shows it: chosen, else the server's default."""
    chosen = prefs.of(user).push_grace
    seconds = round(prefs.push_grace(chosen).total_seconds())
    choices = [(choice, grace_label(choice)) for choice in prefs.push_grace_choices()]
    return {"grace": seconds, "grace_choices": choices, "grace_error": error, "grace_saved": saved}


def _partial(
    request: LoggedInRequest, tried: list[push.Tried] | None = None, status: int = 200, **grace: Any
) -> HttpResponse:
    shown = {"push": section(request, tried, **grace)}
    return HttpResponse(render_to_string("askuser/settings/push.html", shown, request=request), status=status)


def _refused(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _json(request: HttpRequest) -> Any:
    """The request's JSON body, or None for anything else."""
    if request.content_type != "application/json" or len(request.body) > MAX_SUBSCRIPTION:
        return None
    try:
        return json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        return None


@require_GET
@never_cache
def service_worker(request: HttpRequest) -> HttpResponse:
    """The service worker from the site's root, so its scope may be the whole Control UI."""
    found = finders.find("askuser/sw.js")
    if not isinstance(found, str):
        raise Http404
    with open(found, encoding="utf-8") as script:
        response = HttpResponse(script.read(), content_type="text/javascript; charset=utf-8")
    response["Service-Worker-Allowed"] = "/"
    return response


@login_required
@require_GET
def key(request: LoggedInRequest) -> JsonResponse:
    """The VAPID public key a browser subscribes with (for pages other than the settings page)."""
    if not push.adapter.configured():
        return _refused(_("Web Push is turned off on this server."), status=404)
    return JsonResponse({"public_key": push.public_key()})


@login_required
@require_POST
def subscribe(request: LoggedInRequest) -> JsonResponse:
    """POST ``PushSubscription.toJSON()``: this browser now gets the person's notifications."""
    if not push.adapter.configured():
        return _refused(_("Web Push is turned off on this server."), status=404)
    data = _json(request)
    if data is None:
        return _refused(_("Send the browser's subscription as JSON."))
    try:
        subscription = push.Subscription.of(data)
        saved = push.subscribe(request.user, subscription, request.headers.get("User-Agent", ""))
    except push.Invalid as refused:  # a bad subscription, or one device too many
        return _refused(str(refused))
    return JsonResponse({"id": saved.pk, "device": saved.device}, status=201)


@login_required
@require_POST
def unsubscribe(request: LoggedInRequest) -> HttpResponse:
    """POST ``{"endpoint": …}``: this browser no longer gets notifications."""
    data = _json(request)
    endpoint = data.get("endpoint") if isinstance(data, dict) else None
    if not isinstance(endpoint, str) or not endpoint:
        return _refused(_("Send the subscription's endpoint as JSON."))
    if not push.unsubscribe(request.user, endpoint):
        return _refused(_("This browser has no subscription of yours."), status=404)
    return HttpResponse(status=204)


@login_required
@require_POST
def remove(request: LoggedInRequest) -> HttpResponse:
    """The devices list's Remove: that device gets no more notifications."""
    device = ascii_int(request.POST.get("device"))
    removed = push.remove(request.user, device) if device is not None else None
    if removed is None:
        raise Http404
    if request.htmx:
        return _partial(request)
    messages.info(request, _("%(device)s gets no more notifications.") % {"device": removed.device or removed.pk})
    return redirect("settings")


@login_required
@require_POST
def test(request: LoggedInRequest) -> HttpResponse:
    """ "Send me a test notification": to every device of the person, now; the page says which got it
    (and nothing of why one did not: its status stays in the admin)."""
    if not push.adapter.configured():
        return _refused(_("Web Push is turned off on this server."), status=404)
    tried = push.send_test(request.user)
    if request.htmx:
        return _partial(request, tried)
    if not tried:
        messages.info(request, _("No device gets notifications yet."))
    for one in tried:
        if one.ok:
            messages.info(request, _("%(device)s: delivered.") % {"device": one.device})
        else:
            messages.error(request, _("%(device)s: this device could not be reached.") % {"device": one.device})
    return redirect("settings")


# --- a notification's buttons ------------------------------------------------------------------

MAX_TAP = 2048  # a token is about 150 characters


def _said(bad: links.BadLink) -> str:
    """Why a button is good for nothing, as a notification says it."""
    return {
        "expired": _("This button has expired. Open askuser to answer."),
        "invalid": _("This button is not valid. Open askuser to answer."),
        "gone": _("This question is no longer available."),
        "stranger": _("This notification is not for this device any more. Open askuser to answer."),
    }[bad.why]


def _tapped(status: int, message: str) -> JsonResponse:
    response = JsonResponse({"ok": status == 200, "message": message}, status=status)
    response["Cache-Control"] = "no-store"
    return response


def _tap(request: HttpRequest, salt: str) -> tuple[links.Link, Any, Any] | JsonResponse:
    """The link a button's token names, its prompt and owner; or the refusal to answer with."""
    data = _json(request) if len(request.body) <= MAX_TAP else None
    token = data.get("token") if isinstance(data, dict) else None
    if not push.adapter.configured():
        return _tapped(404, _("Web Push is turned off on this server."))
    try:
        link = links.read(salt, token if isinstance(token, str) else "")
        prompt, owner = links.linked(link, push.holds)
    except links.BadLink as bad:
        return _tapped(bad.status, _said(bad))
    return link, prompt, owner


@csrf_exempt  # the token is the credential: no cookie is sent, nor needed
@require_POST
def answer(request: HttpRequest) -> JsonResponse:
    """A notification's option button: that option answers the prompt, as its owner, once."""
    tapped = _tap(request, push.ANSWER_SALT)
    if isinstance(tapped, JsonResponse):
        return tapped
    link, prompt, owner = tapped
    with translation.override(i18n.of_owner(owner.pk)):
        if prompt.is_overdue():
            services.result_expiring_if_overdue(prompt)
            prompt.refresh_from_db()
        chosen = links.choice(prompt, services.questions_of(prompt), link.option)
        if not prompt.is_pending:
            return _tapped(409, services.AlreadyResolved(prompt).for_person)
        if chosen is None:
            return _tapped(400, _("This button is not valid. Open askuser to answer."))
        key, label = chosen
        try:
            answered = services.answer(prompt, {key: [label]}, by=owner, surface="push")
        except services.AlreadyResolved as lost:
            return _tapped(409, lost.for_person)
        except services.InvalidAnswer as refused:
            return _tapped(422, refused.for_person)
        return _tapped(200, outcome(answered))


@csrf_exempt  # the token is the credential: no cookie is sent, nor needed
@require_POST
def mute(request: HttpRequest) -> JsonResponse:
    """A notification's Mute this session: no more notifications of the prompt's session (it
    still may be, once the prompt resolved: what the person asked for holds); the session's
    page unmutes it."""
    tapped = _tap(request, push.MUTE_SALT)
    if isinstance(tapped, JsonResponse):
        return tapped
    _link, prompt, owner = tapped
    with translation.override(i18n.of_owner(owner.pk)):
        named = {"session": prompt.session.name}
        if not services.mute_session(prompt.session, by=owner):
            return _tapped(409, _("%(session)s is muted already.") % named)
        return _tapped(200, _("No more notifications from %(session)s. Its page unmutes it.") % named)


@login_required
@require_POST
def grace(request: LoggedInRequest) -> HttpResponse:
    """Save how long a new question waits before it is pushed (0: at once); within that time an
    answer, or a tab of the person's in sight, means no push."""
    seconds = ascii_int(request.POST.get("push_grace"))
    if seconds is None or seconds not in prefs.push_grace_choices():
        error = _("Choose one of the times listed.")
        if request.htmx:
            return _partial(request, status=422, error=error)
        messages.error(request, error)
        return redirect("settings")
    prefs.choose_push_grace(request.user, seconds)
    if request.htmx:
        return _partial(request, saved=True)
    messages.success(request, _("Notification settings saved."))
    return redirect("settings")
