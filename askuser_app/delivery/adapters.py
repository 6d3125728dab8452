"""Every channel's adapter, found where it lives: the chat apps' (``chats.core.installed``) and the
notifiers', one folder each (``notifiers``)."""

from __future__ import annotations

import functools

from askuser_app.delivery import notifiers
from askuser_app.delivery.chats import core
from askuser_app.delivery.chats.base import Adapter


def installed() -> dict[str, Adapter]:
    """Every adapter present, configured or not: the chat apps in ``CHANNELS`` order, then the
    notifiers in ``notifiers.names()`` order."""
    return dict(_installed())


@functools.cache
def _installed() -> dict[str, Adapter]:
    # Once per process: every create and resolution asks which channels are on.
    return {**core.installed(), **{name: notifiers.adapter(name) for name in notifiers.names()}}


def configured() -> dict[str, Adapter]:
    """The configured adapters by name; an unconfigured channel is absent."""
    return {name: adapter for name, adapter in installed().items() if adapter.configured()}


def label_of(channel: str) -> str:
    adapter = installed().get(channel)
    return adapter.label if adapter is not None else channel.title()
