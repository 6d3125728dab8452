"""Web Push: a notification on each of the person's devices, even with every askuser tab closed.

A browser that allows notifications subscribes through its service worker
(``static/askuser/sw.js``, served at ``/sw.js`` so that it covers the whole
Control UI) and posts its ``PushSubscription`` to ``/settings/push/subscribe``;
each subscription is a ``PushSubscription`` row, one per browser and device.
For each new prompt the delivery engine has one ``Delivery`` per subscription
of its owner (``recipients``), its host the push service's; the engine sends it here, encrypted for that browser
(aes128gcm, RFC 8291) and signed with the server's VAPID key (RFC 8292) by
``pywebpush``. When the prompt resolves, the same tag gets a "closed" push,
and the service worker closes the notification. A subscription the push
service no longer knows (404, 410) is deleted.

pywebpush is synchronous (``requests``), so every push runs on the delivery
engine's threads. Connecting (TCP and TLS) has ``ASKUSER_CONNECT_TIMEOUT``, the
answer the rest of ``ASKUSER_CHAT_TIMEOUT``; a push service that gives none in
time pauses (the engine's ``DeliveryHost``).
Push services are public: an endpoint must be https and, unless
``ASKUSER_PUSH_ALLOW_PRIVATE``, on a public address, checked when the browser
subscribes and again, after resolving, before each push.
"""

from __future__ import annotations

import base64
import binascii
import email.utils
import functools
import ipaddress
import json
import logging
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.urls import URLPattern
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from py_vapid import Vapid
from pywebpush import WebPushException, webpush

from askuser_app.delivery import engine
from askuser_app.delivery.chats.base import Card, Closed, Permanent, Recipient, Ref, Temporary
from askuser_app.domain.addresses import is_public, literal_address
from askuser_app.models import PushSubscription
from askuser_app.runtime.asyncdb import database_call

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from askuser_app.models import Prompt

log = logging.getLogger("askuser")

MAX_TITLE = 120
MAX_BODY = 600  # a push carries at most 4 KiB; notifications show a few lines anyway
TTL = 12 * 60 * 60  # a phone that is off gets it within this; a prompt rarely waits longer
TEST_TAG = "askuser-test"
GONE = (404, 410)


def host_of(endpoint: str) -> str:
    """The push service's host:port, the unit the delivery engine shares an owner's pushes by."""
    parts = urlsplit(endpoint)
    return f"{parts.hostname}:{parts.port or 443}"


def tag(prompt_id: Any) -> str:
    """The notification's tag; the page's own notifications use the same, so the two replace each other."""
    return f"askuser-{prompt_id}"


# --- keys --------------------------------------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@functools.cache
def _vapid(private_key: str) -> Vapid:
    try:
        if private_key.lstrip().startswith("-----BEGIN"):
            return Vapid.from_pem(private_key.encode())
        return Vapid.from_string(private_key)
    except (ValueError, TypeError, binascii.Error) as bad:
        raise ImproperlyConfigured(f"ASKUSER_VAPID_PRIVATE_KEY is not a P-256 private key: {bad}") from bad


def vapid() -> Vapid:
    return _vapid(settings.ASKUSER_VAPID_PRIVATE_KEY)


def public_key() -> str:
    """The VAPID public key as browsers take it (``applicationServerKey``): base64url, uncompressed point."""
    point = vapid().public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    derived = _b64url(point)
    given = settings.ASKUSER_VAPID_PUBLIC_KEY
    if given and given.rstrip("=") != derived:
        raise ImproperlyConfigured("ASKUSER_VAPID_PUBLIC_KEY is not the public key of ASKUSER_VAPID_PRIVATE_KEY.")
    return derived


def subject() -> str:
    """Who push services may write to about our pushes (VAPID ``sub``): the setting, else a
    mailto: at the public URL's host."""
    given: str = settings.ASKUSER_VAPID_SUBJECT
    return given or f"mailto:askuser@{urlsplit(settings.ASKUSER_PUBLIC_URL).hostname or 'localhost'}"


# --- subscriptions -----------------------------------------------------------------------------


class Invalid(Exception):
    """A subscription the server will not store; the message says why, for the person."""


def _refusal(endpoint: str) -> str | None:
    """Why the server will not push to ``endpoint`` (named literally), or None."""
    parts = urlsplit(endpoint)
    if parts.scheme != "https" or not parts.hostname:
        return _("A push endpoint must be an https address.")
    if settings.ASKUSER_PUSH_ALLOW_PRIVATE:
        return None
    host = parts.hostname
    address = literal_address(host)
    if host == "localhost" or host.endswith(".localhost") or (address is not None and not is_public(address)):
        return _("A push endpoint must be on a public address.")
    return None


def _key(text: Any, length: int, what: str) -> str:
    if not isinstance(text, str) or not text or len(text) > 200:
        raise Invalid(_("The subscription has no %(key)s key.") % {"key": what})
    try:
        raw = _unb64url(text)
    except (binascii.Error, ValueError) as bad:
        raise Invalid(_("The subscription's %(key)s key is not base64url.") % {"key": what}) from bad
    if len(raw) != length:
        raise Invalid(_("The subscription's %(key)s key has the wrong length.") % {"key": what})
    return text.rstrip("=")


@dataclass(frozen=True)
class Subscription:
    """A browser's ``PushSubscription.toJSON()``, checked."""

    endpoint: str
    p256dh: str
    auth: str

    @classmethod
    def of(cls, data: Any) -> Subscription:
        if not isinstance(data, dict):
            raise Invalid(_("Send the browser's subscription as a JSON object."))
        endpoint = data.get("endpoint")
        keys = data.get("keys")
        if not isinstance(endpoint, str) or not endpoint or len(endpoint) > 2048:
            raise Invalid(_("The subscription has no endpoint."))
        refusal = _refusal(endpoint)
        if refusal:
            raise Invalid(refusal)
        if not isinstance(keys, dict):
            raise Invalid(_("The subscription has no keys."))
        p256dh, auth = _key(keys.get("p256dh"), 65, "p256dh"), _key(keys.get("auth"), 16, "auth")
        try:
            ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), _unb64url(p256dh))
        except ValueError as bad:
            raise Invalid(_("The subscription's p256dh key is not a P-256 public key.")) from bad
        return cls(endpoint, p256dh, auth)


def subscribe(user: User, subscription: Subscription, user_agent: str) -> PushSubscription:
    """Store this browser's subscription for ``user`` (the same endpoint again updates it;
    a browser someone else used before is now this person's)."""
    fields = {"user": user, "p256dh": subscription.p256dh, "auth": subscription.auth, "device": device_name(user_agent)}
    try:
        with transaction.atomic():
            saved, _made = PushSubscription.objects.update_or_create(endpoint=subscription.endpoint, defaults=fields)
    except IntegrityError:  # the same browser subscribing twice at once: the other request stored it
        saved = PushSubscription.objects.get(endpoint=subscription.endpoint)
    return saved


def unsubscribe(user: User, endpoint: str) -> bool:
    """Forget this browser (by its endpoint); False when it was not the person's."""
    deleted, _rows = PushSubscription.objects.filter(user=user, endpoint=endpoint).delete()
    return bool(deleted)


def remove(user: User, subscription_id: int) -> PushSubscription | None:
    """Forget one of the person's devices, from the list; None when it is not theirs."""
    found = PushSubscription.objects.filter(user=user, pk=subscription_id).first()
    if found is not None:
        found.delete()
    return found


_BROWSERS = (("Edg/", "Edge"), ("OPR/", "Opera"), ("Firefox/", "Firefox"), ("Chrom", "Chrome"), ("Safari/", "Safari"))
_SYSTEMS = (
    ("Android", "Android"),
    ("iPhone", "iOS"),
    ("iPad", "iPadOS"),
    ("CrOS", "ChromeOS"),
    ("Windows", "Windows"),
    ("Mac OS X", "macOS"),
    ("Linux", "Linux"),
)


def device_name(user_agent: str) -> str:
    """ "Firefox on Android", as a person tells their devices apart."""
    browser = next((name for mark, name in _BROWSERS if mark in user_agent), "")
    system = next((name for mark, name in _SYSTEMS if mark in user_agent), "")
    if browser and system:
        return _("%(browser)s on %(system)s") % {"browser": browser, "system": system}
    return browser or system or _("A browser")


# --- sending ------------------------------------------------------------------------------------


def _check_address(endpoint: str) -> None:
    """Resolve the endpoint's host: every address must be public (unless allowed)."""
    if settings.ASKUSER_PUSH_ALLOW_PRIVATE:
        return
    refusal = _refusal(endpoint)
    if refusal:
        raise Permanent(refusal)
    host = urlsplit(endpoint).hostname or ""
    try:
        found = socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
    except OSError as failed:
        raise Temporary(f"the push service's name does not resolve: {failed}") from failed
    for info in found:
        if not is_public(ipaddress.ip_address(info[4][0])):
            raise Permanent(f"the push endpoint resolves to a private address ({info[4][0]})")


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@dataclass(frozen=True)
class Pushed:
    """What the push service said."""

    ok: bool
    status: int | None = None
    error: str = ""
    gone: bool = False  # 404/410: the browser unsubscribed, or the subscription expired
    retry_after: float | None = None
    timed_out: bool = False  # no answer in time

    @property
    def temporary(self) -> bool:
        return self.status is None or self.status == 429 or self.status >= 500


def push(row: PushSubscription, message: dict[str, Any], *, timeout: float | tuple[float, float]) -> Pushed:
    """One push to one subscription, synchronously (call it in a thread); ``timeout`` as requests
    takes it: for each step, or (connect, read)."""
    info = {"endpoint": row.endpoint, "keys": {"p256dh": row.p256dh, "auth": row.auth}}
    claims: dict[str, str | int] = {"sub": subject()}
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        _check_address(row.endpoint)
        response = webpush(info, data, vapid_private_key=vapid(), vapid_claims=claims, timeout=timeout, ttl=TTL)
    except WebPushException as refused:
        status = refused.status_code
        error = f"the push service answered {status}" if status else str(refused)
        return Pushed(False, status, error, gone=status in GONE, retry_after=_retry_after(refused.retry_after))
    except requests.RequestException as failed:
        error = f"the push service could not be reached: {type(failed).__name__}"
        return Pushed(False, None, error, timed_out=isinstance(failed, requests.Timeout))
    except Permanent as refused:
        return Pushed(False, 400, str(refused))
    except Temporary as failed:
        return Pushed(False, None, str(failed))
    status_code = response.status_code if isinstance(response, requests.Response) else None
    return Pushed(True, status_code)


def _forget(row: PushSubscription) -> None:
    deleted, _rows = PushSubscription.objects.filter(pk=row.pk, endpoint=row.endpoint).delete()
    if deleted:
        log.info("Removed the push subscription of %s on %s: the push service no longer knows it.", row.user_id, row)


def _touch(row: PushSubscription) -> None:
    PushSubscription.objects.filter(pk=row.pk).update(last_used_at=timezone.now())


def _pushed_or_raise(pushed: Pushed) -> None:
    if pushed.ok:
        return
    if pushed.gone:
        raise Permanent(f"{pushed.error}: the device no longer takes notifications; it was removed")
    if pushed.temporary:
        raise Temporary(pushed.error, retry_after=pushed.retry_after, timed_out=pushed.timed_out)
    raise Permanent(pushed.error)


def _time_for_one_push() -> tuple[float, float]:
    """(connect, read): a little under the engine's own limit, so that requests gives up first and says why."""
    seconds: float = max(1.0, settings.ASKUSER_CHAT_TIMEOUT - 1.0)
    return min(settings.ASKUSER_CONNECT_TIMEOUT, seconds), seconds


async def _push_to(subscription_id: int, message: dict[str, Any]) -> PushSubscription | None:
    """Push ``message`` to one subscription; None when the subscription is gone already."""
    row = await database_call(PushSubscription.objects.filter(pk=subscription_id).first)()
    if row is None:
        return None
    pushed = await engine.blocking(push, row, message, timeout=_time_for_one_push())
    if pushed.gone:
        await database_call(_forget)(row)
    elif pushed.ok:
        await database_call(_touch)(row)
    _pushed_or_raise(pushed)
    return row


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def message_of(card: Card) -> dict[str, Any]:
    """What the service worker shows: the agent, the header, the question, and where a click goes."""
    first = card.questions[0] if card.questions else None
    header = first.header if first is not None else card.header
    question = first.text if first is not None else card.text
    more = len(card.questions) - 1
    body = question
    if more > 0:
        body += "\n" + ngettext("and %(count)d more question", "and %(count)d more questions", more) % {"count": more}
    title = _("%(agent)s asks: %(header)s") % {"agent": card.agent, "header": header} if header else card.header
    return {
        "type": "prompt",
        "tag": tag(card.prompt_id),
        "title": _clip(title, MAX_TITLE),
        "body": _clip(body, MAX_BODY),
        "agent": card.agent,
        "header": _clip(header, MAX_TITLE),
        "question": _clip(question, MAX_BODY),
        "url": card.url,
        "prompt_id": str(card.prompt_id),
        "expires_at": card.expires_at.isoformat(),
    }


class PushAdapter:
    name: ClassVar[str] = "push"
    label: ClassVar[str] = "Web Push"

    def configured(self) -> bool:
        return bool(settings.ASKUSER_PUSH and settings.ASKUSER_VAPID_PRIVATE_KEY)

    def recipients(self, prompt: Prompt) -> list[Recipient]:
        # On every create: one indexed read, nothing more when the owner has no device.
        owned = PushSubscription.objects.filter(user_id=prompt.session.owner_id)
        return [Recipient(str(pk), host=host_of(endpoint)) for pk, endpoint in owned.values_list("pk", "endpoint")]

    async def send(self, address: str, card: Card) -> Ref:
        if not address.isdigit():
            raise Permanent(f"not a push subscription: {address!r}")
        if await _push_to(int(address), message_of(card)) is None:
            raise Permanent("the device was removed before the notification was sent")
        return {"subscription": int(address), "tag": tag(card.prompt_id)}

    async def edit(self, ref: Ref, closed: Closed) -> None:
        """The prompt resolved: the notification, wherever it still shows, closes."""
        subscription = ref.get("subscription")
        if not isinstance(subscription, int):
            return
        message = {"type": "closed", "tag": tag(closed.prompt_id), "url": closed.url, "outcome": closed.outcome}
        try:
            await _push_to(subscription, message)
        except Permanent:
            return  # nothing left to close on a device that is gone

    def how_to_link(self, code: str) -> str:
        return ""

    def urlpatterns(self) -> list[URLPattern]:
        return []  # its routes are the settings page's, under /settings/push/


adapter = PushAdapter()


# --- "Send me a test notification" -------------------------------------------------------------


@dataclass(frozen=True)
class Tried:
    device: str
    ok: bool
    error: str = ""


def send_test(user: User) -> list[Tried]:
    """A test notification to every device of ``user``, now, in parallel; what each push service said."""
    rows = list(PushSubscription.objects.filter(user=user))
    if not rows:
        return []
    message = {
        "type": "test",
        "tag": TEST_TAG,
        "title": "askuser",
        "body": _("Notifications reach this device."),
        "url": settings.ASKUSER_PUBLIC_URL + "/settings/",
        "sent_at": int(time.time()),
    }
    with ThreadPoolExecutor(max_workers=min(8, len(rows))) as pool:
        results = list(pool.map(lambda row: push(row, message, timeout=10.0), rows))
    tried = []
    for row, pushed in zip(rows, results, strict=True):
        if pushed.gone:
            _forget(row)
            tried.append(Tried(row.device, False, _("The browser no longer accepts notifications: removed.")))
        elif pushed.ok:
            _touch(row)
            tried.append(Tried(row.device, True))
        else:
            tried.append(Tried(row.device, False, pushed.error))
    return tried
