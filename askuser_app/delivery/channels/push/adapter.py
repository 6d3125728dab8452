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

Each push is encrypted for its browser (aes128gcm) by ``pywebpush`` and
signed (VAPID) by ``py_vapid``, then POSTed as webhooks are
(``askuser_app/delivery/egress.py``): to the address checked after resolving the
endpoint's name, never following a redirect (a 3xx fails that device), with
no proxy from the environment, within a connect timeout of its own. An
endpoint must be https on the default port and, unless
``ASKUSER_PUSH_ALLOW_PRIVATE``, on a public address, read with the sender's
own parser when the browser subscribes and again before each push. A person
links at most ``ASKUSER_MAX_PUSH_DEVICES`` devices.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import email.utils
import functools
import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

import httpx
from asgiref.sync import async_to_sync
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from py_vapid import Vapid
from pywebpush import WebPusher

from askuser_app.delivery import egress, engine
from askuser_app.delivery.channels import links
from askuser_app.delivery.channels.base import Card, Closed, News, Permanent, Recipient, Ref, Temporary
from askuser_app.domain import addresses, prefs, services
from askuser_app.domain.chars import ascii_int
from askuser_app.models import Prompt, PushSubscription
from askuser_app.runtime import datadir

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger("askuser")

MAX_TITLE = 120
MAX_DETAIL = 120  # characters of a question's detail a notification shows
MAX_BODY = 600  # a push carries at most 4 KiB; notifications show a few lines anyway
TTL = 12 * 60 * 60  # a phone that is off gets it within this; a prompt rarely waits longer
VAPID_LIFETIME = 12 * 60 * 60  # how long a push service takes our signature (RFC 8292: at most a day)
TEST_TAG = "askuser-test"
GONE = (404, 410)
LAST_ERROR = 500  # characters of a failure kept on the device's row
COUNTED = frozenset({"prompt", "closed"})  # the pushes that carry the waiting count ("badge")


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
    """The signing key: ``ASKUSER_VAPID_PRIVATE_KEY``, else the one kept in the data folder."""
    return _vapid(settings.ASKUSER_VAPID_PRIVATE_KEY or datadir.vapid_key(settings.DATA_DIR))


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


def host_of(endpoint: str) -> str:
    """The push service's host:port, the unit the delivery engine shares an owner's pushes by
    (``addresses.host_key``: an endpoint stored before it was refused is pushed to never, and
    says so on its row, but every prompt of its owner is made)."""
    return addresses.host_key(endpoint)


def rules() -> addresses.Rules:
    """Where pushes may go: https on its own port, to public addresses (unless allowed)."""
    return addresses.Rules(
        "the push endpoint",
        frozenset({"https"}),
        "set ASKUSER_PUSH_ALLOW_PRIVATE=1 to allow",
        allow_private=settings.ASKUSER_PUSH_ALLOW_PRIVATE,
        own_port_only=True,
    )


def _refusal(endpoint: str) -> str | None:
    """Why the server will not push to ``endpoint`` (as far as the URL itself tells), or None."""
    try:
        addresses.checked(endpoint, rules())
    except addresses.Unusable as unusable:
        if unusable.flaw is addresses.Flaw.PRIVATE:
            return _("A push endpoint must be on a public address.")
        if unusable.flaw is addresses.Flaw.NOT_A_URL:
            return _("A push endpoint must be a valid https address.")
        if unusable.flaw is addresses.Flaw.SCHEME:
            return _("A push endpoint must be an https address.")
        return _("A push endpoint must be a plain https address: no user name, no port, no escaped characters.")
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
    a browser someone else used before is now this person's); Invalid past the device cap."""
    fields = {"user": user, "p256dh": subscription.p256dh, "auth": subscription.auth, "device": device_name(user_agent)}
    try:
        with transaction.atomic():
            # The person's row locked: two subscribes at once cannot both take the last place.
            get_user_model().objects.select_for_update().filter(pk=user.pk).first()
            _room_for(user, subscription.endpoint)
            saved, _made = PushSubscription.objects.update_or_create(endpoint=subscription.endpoint, defaults=fields)
    except IntegrityError:  # the same browser subscribing twice at once: the other request stored it
        saved = PushSubscription.objects.get(endpoint=subscription.endpoint)
    return saved


def _room_for(user: User, endpoint: str) -> None:
    """Invalid when ``user`` has as many devices as allowed and ``endpoint`` is not one of them."""
    most: int = settings.ASKUSER_MAX_PUSH_DEVICES
    mine = PushSubscription.objects.filter(user=user)
    if most and not mine.filter(endpoint=endpoint).exists() and mine.count() >= most:
        raise Invalid(
            ngettext(
                "You get notifications on %(count)d device already, the most this server allows. "
                "Remove a device first.",
                "You get notifications on %(count)d devices already, the most this server allows. "
                "Remove a device first.",
                most,
            )
            % {"count": most}
        )


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


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    if (seconds := ascii_int(value.strip())) is not None:
        return float(seconds)
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
    retry_after: float | None = None
    refused: bool = False  # not sent: the endpoint leads where pushes may not go
    timed_out: bool = False  # no answer in time: the engine pauses the push service

    @property
    def gone(self) -> bool:
        """404/410: the browser unsubscribed, or the subscription expired."""
        return self.status in GONE

    @property
    def temporary(self) -> bool:
        return not self.refused and (self.status is None or self.status == 429 or self.status >= 500)


def _sealed(row: PushSubscription, message: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """The message encrypted for this browser's keys (RFC 8291), and the headers that sign it
    (RFC 8292) for the push service's origin, read as the push is sent (Refused if it cannot be)."""
    endpoint = egress.readable(row.endpoint, rules()).url
    info = {"endpoint": row.endpoint, "keys": {"p256dh": row.p256dh, "auth": row.auth}}
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    body: bytes = WebPusher(info).encode(data, "aes128gcm")["body"]
    claims = {
        "sub": subject(),
        "aud": f"{endpoint.scheme}://{endpoint.netloc.decode('ascii')}",
        "exp": int(time.time()) + VAPID_LIFETIME,
    }
    signed: dict[str, str] = vapid().sign(claims)
    return body, {**signed, "Content-Encoding": "aes128gcm", "TTL": str(TTL)}


async def push(row: PushSubscription, message: dict[str, Any], *, timeout: float) -> Pushed:
    """One push to one subscription; any failure is a Pushed that says why."""
    limits = httpx.Timeout(timeout, connect=min(settings.ASKUSER_CONNECT_TIMEOUT, timeout))
    try:
        body, headers = _sealed(row, message)
        answer = await egress.post(row.endpoint, body, headers, rules(), limits)
    except egress.Refused as refused:
        return Pushed(False, None, str(refused), refused=True)
    except httpx.HTTPError as failed:
        error = f"the push service could not be reached: {type(failed).__name__}"
        return Pushed(False, None, error, timed_out=isinstance(failed, httpx.TimeoutException))
    except Exception as exc:  # a key that does not work, a library's surprise: this push fails, the others go on
        log.exception("A push to device %s failed.", row.pk)
        return Pushed(False, None, f"{type(exc).__name__}: {exc}")
    if answer.ok:
        return Pushed(True, answer.status)
    # A redirect is not followed: the device failed, as for any other status that is not 2xx.
    retry_after = _retry_after(answer.headers.get("Retry-After"))
    return Pushed(False, answer.status, f"the push service answered {answer.status}", retry_after=retry_after)


def _forget(row: PushSubscription) -> None:
    deleted, _rows = PushSubscription.objects.filter(pk=row.pk, endpoint=row.endpoint).delete()
    if deleted:
        log.info("Removed the push subscription of %s on %s: the push service no longer knows it.", row.user_id, row)


def _touch(row: PushSubscription) -> None:
    PushSubscription.objects.filter(pk=row.pk).update(last_used_at=timezone.now(), last_error="")


def _failed(row: PushSubscription, error: str) -> None:
    """Why the last push to this device failed, for staff (the person is told only that it did)."""
    PushSubscription.objects.filter(pk=row.pk).update(last_error=error[:LAST_ERROR])


def _pushed_or_raise(pushed: Pushed) -> None:
    if pushed.ok:
        return
    if pushed.gone:
        raise Permanent(f"{pushed.error}: the device no longer takes notifications; it was removed")
    if pushed.temporary:
        raise Temporary(pushed.error, retry_after=pushed.retry_after, timed_out=pushed.timed_out)
    raise Permanent(pushed.error)


def _time_for_one_push() -> float:
    # A little under the engine's own limit, so that the push gives up first and says why.
    seconds: float = settings.ASKUSER_CHAT_TIMEOUT
    return max(1.0, seconds - 1.0)


async def _push_to(subscription_id: int, message: dict[str, Any] | Card) -> PushSubscription | None:
    """Push ``message`` (a prompt's card: with this device's buttons) to one subscription; None
    when the subscription is gone already."""
    # On the engine's own thread: a push never waits for the thread that the requests share.
    row, prepared = await engine.database.run(ready)(subscription_id, message)
    if row is None:
        return None
    pushed = await push(row, prepared, timeout=_time_for_one_push())
    await engine.database.run(_noted)(row, pushed)
    _pushed_or_raise(pushed)
    return row


def _noted(row: PushSubscription, pushed: Pushed) -> None:
    """The device's row after a push: forgotten when gone, else when it last took one or why it failed."""
    if pushed.gone:
        _forget(row)
    elif pushed.ok:
        _touch(row)
    else:
        _failed(row, pushed.error)


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- buttons: answering, or muting the session, with one tap --------------------------------------

ANSWER_SALT = "askuser.push.answer"
MUTE_SALT = "askuser.push.mute"
MUTE = "mute"
MAX_PAYLOAD = 3993  # what a push carries: 4,096 bytes, less aes128gcm's header, tag and padding


def holder(row: PushSubscription) -> str:
    """What holds a button's token: the device it was pushed to."""
    return f"device-{row.pk}"


def holds(owner: User, held_by: str) -> bool:
    """A button's token is good while its device is still its owner's (removed, or moved to
    another person who signed in on that browser, it answers nothing)."""
    device = ascii_int(held_by.removeprefix("device-"))
    return device is not None and PushSubscription.objects.filter(pk=device, user=owner).exists()


@dataclass(frozen=True)
class Tap:
    """A notification's button: its id, its title, where the service worker posts its token."""

    action: str
    title: str
    url: str
    token: str


def taps_for(row: PushSubscription, prompt: Prompt) -> list[Tap]:
    """The prompt's buttons for this device: each option a tap may choose (``links.choosable``: a
    hook's prompt has none that allows), then Mute this session; the service worker keeps as
    many as the platform shows, in this order."""
    questions = services.questions_of(prompt)
    owner, held_by = row.user, holder(row)
    answer = reverse("push_answer")
    taps = [
        Tap(f"option-{index}", questions[0].options.all()[index].label, answer, _token(ANSWER_SALT, prompt, row, index))
        for index in links.choosable(prompt, questions)
    ]
    mute = links.make(MUTE_SALT, prompt.pk, owner, held_by)
    return [*taps, Tap(MUTE, _("Mute this session"), reverse("push_mute"), mute)]


def _token(salt: str, prompt: Prompt, row: PushSubscription, option: int) -> str:
    return links.make(salt, prompt.pk, row.user, holder(row), option)


def message_of(card: Card, taps: list[Tap] | None = None, *, hook: bool = False) -> dict[str, Any]:
    """What the service worker shows: the agent, the header, the question, where a click goes, and
    the buttons. A hook's prompt stays on screen until the person acts (``requireInteraction``):
    its agent waits at the terminal, and no button here allows it. No prompt rings twice
    (``renotify``: the page's own notification, or an earlier push, already did)."""
    first = card.questions[0] if card.questions else None
    header = first.header if first is not None else card.header
    question = first.text if first is not None else card.text
    more = len(card.questions) - 1
    body = question
    if first is not None and first.detail:  # the command or URL, cut short: the notification has little room
        body += "\n" + _clip(" ".join(first.detail.split()), MAX_DETAIL)
    if more > 0:
        body += "\n" + ngettext("and %(count)d more question", "and %(count)d more questions", more) % {"count": more}
    if hook:
        body += "\n" + _("To allow it, open askuser.")
    title = _("%(agent)s asks: %(header)s") % {"agent": card.agent, "header": header} if header else card.header
    answers = [tap for tap in taps or () if tap.action != MUTE]
    message = {
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
        "actions": [dataclasses.asdict(tap) | {"title": _clip(tap.title, MAX_TITLE)} for tap in taps or ()],
        # Said under the body when the platform shows fewer buttons than there are options.
        "more": _("More options in askuser.") if answers else "",
        # Said when a button's tap cannot reach the server.
        "unreachable": _("askuser could not be reached. Open it to answer.") if taps else "",
        "requireInteraction": hook,
        "renotify": False,
    }
    return _fitted(message)


def _size(message: dict[str, Any]) -> int:
    return len(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode())


def _fitted(message: dict[str, Any]) -> dict[str, Any]:
    """The message within what a push carries: its texts cut shorter (long lines in a script of
    three bytes a character) until it fits."""
    limit = MAX_BODY
    while _size(message) > MAX_PAYLOAD and limit > MAX_DETAIL // 4:
        limit //= 2
        message = {**message, "body": _clip(message["body"], limit), "question": _clip(message["question"], limit)}
    return message


def ready(subscription_id: int, message: dict[str, Any] | Card) -> tuple[PushSubscription | None, dict[str, Any]]:
    """The device, and what to push to it: a prompt's card with the buttons made for this device.
    A push about a prompt carries its owner's waiting count as it is now, as the push leaves (a
    closing push, the count without the prompt that resolved): the service worker's app badge."""
    row = PushSubscription.objects.select_related("user").filter(pk=subscription_id).first()
    if row is None:
        return row, message if isinstance(message, dict) else {}
    prepared = _prepared(row, message)
    if prepared.get("type") in COUNTED:
        prepared = {**prepared, "badge": Prompt.waiting_for(row.user_id).count()}
    return row, prepared


def _prepared(row: PushSubscription, message: dict[str, Any] | Card) -> dict[str, Any]:
    if not isinstance(message, Card):
        return message
    prompt = Prompt.objects.filter(pk=message.prompt_id).first()
    if prompt is None:
        return message_of(message)
    return message_of(message, taps_for(row, prompt), hook=links.asked_by_hook(prompt))


class PushAdapter:
    name: ClassVar[str] = "push"
    label: ClassVar[str] = "Web Push"

    def configured(self) -> bool:
        return bool(settings.ASKUSER_PUSH)

    def recipients(self, prompt: Prompt) -> list[Recipient]:
        """Each of the owner's devices, once the grace they chose has passed (``prefs.push_grace``):
        a prompt answered meanwhile is not pushed, nor one whose person has a tab in sight then."""
        # On every create: one indexed read (their choice joined), nothing more when the owner has no device.
        owned = PushSubscription.objects.filter(user_id=prompt.session.owner_id)
        found = owned.values_list("pk", "endpoint", "user__preferences__push_grace")
        return [Recipient(str(pk), prefs.push_grace(grace), host_of(endpoint)) for pk, endpoint, grace in found]

    def reaches(self, owner_id: int) -> list[Recipient]:
        owned = PushSubscription.objects.filter(user_id=owner_id)
        return [Recipient(str(pk), host=host_of(endpoint)) for pk, endpoint in owned.values_list("pk", "endpoint")]

    async def tell(self, address: str, news: News) -> None:
        if not address.isdigit():
            raise Permanent(f"not a push subscription: {address!r}")
        message = {
            "type": "news",
            "tag": news.tag,
            "title": _clip(news.title, MAX_TITLE),
            "body": _clip(news.text, MAX_BODY),
            "url": news.url,
        }
        if await _push_to(int(address), message) is None:
            raise Permanent("the device was removed before the notification was sent")

    async def send(self, address: str, card: Card) -> Ref:
        if not address.isdigit():
            raise Permanent(f"not a push subscription: {address!r}")
        if await _push_to(int(address), card) is None:
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


adapter = PushAdapter()


# --- "Send me a test notification" -------------------------------------------------------------


@dataclass(frozen=True)
class Tried:
    """What the person is told of one device: delivered or not, nothing of why (staff see that)."""

    device: str
    ok: bool


def send_test(user: User) -> list[Tried]:
    """A test notification to every device of ``user``, now, all at once; which took it."""
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
    results = async_to_sync(_push_each)(rows, message)
    for row, pushed in zip(rows, results, strict=True):
        _noted(row, pushed)
    return [Tried(row.device, pushed.ok) for row, pushed in zip(rows, results, strict=True)]


async def _push_each(rows: list[PushSubscription], message: dict[str, Any]) -> list[Pushed]:
    return list(await asyncio.gather(*(push(row, message, timeout=10.0) for row in rows)))
