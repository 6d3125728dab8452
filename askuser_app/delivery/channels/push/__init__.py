"""Web Push: encrypting and sending a push to a person's devices (``adapter``), its buttons' taps
that answer or mute a session, and subscribing, testing and removing devices, with the settings
page's section for them (``views``, ``urls``, ``templates/``)."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext_noop

from askuser_app.delivery.channels import Folder
from askuser_app.runtime import datadir


def make_key() -> None:
    """The key that signs pushes, made in the data folder at start unless given: devices linked
    to it keep working across restarts."""
    if settings.ASKUSER_PUSH and not settings.ASKUSER_VAPID_PRIVATE_KEY:
        datadir.vapid_key(settings.DATA_DIR)


folder = Folder(
    settings=(
        "ASKUSER_PUSH",
        "ASKUSER_VAPID_PRIVATE_KEY",
        "ASKUSER_VAPID_PUBLIC_KEY",
        "ASKUSER_VAPID_SUBJECT",
        "ASKUSER_PUSH_ALLOW_PRIVATE",
        "ASKUSER_MAX_PUSH_DEVICES",
        "ASKUSER_PUSH_GRACE",
    ),
    surface=gettext_noop("from a notification"),  # a notification's button answered
    section=1,
    heeds_mute=True,
    # The person's devices, and how long their prompts wait before a push.
    watches=("askuser_app.PushSubscription", "askuser_app.Preferences"),
    not_while_seen=True,  # the page notifies itself
    when_ready=make_key,
)
