"""Every channel that reaches a person, one folder each, found by being here: the chat apps
(``telegram/``, ``slack/``, ``discord/``), where a person links an identity, and the notifiers
(``email/``, ``push/``), which name their own recipients. This package is the one registry: the
channel list, the app's urls, the template folders, the settings page, the linking page and
``domain.wording`` take every channel from it, and nothing else names one. ``base`` beside the
folders is the vocabulary they share (``Card``, ``Closed``, ``Reply``, the ``Adapter`` protocols);
``delivery/channels/chats/`` the machinery every chat app uses (linking, cards, replies, polling).

To add one, make ``askuser_app/delivery/channels/<name>/`` with:

- ``__init__.py``: what it is, in its docstring, and ``folder = Folder(...)``: the environment
  variables it reads, its surface words, its place in the channel list and on the settings page,
  whether a person links an identity on it, the models whose changes change whom it reaches, and
  what it makes when the app is ready (``Folder`` below). Declared here rather than in
  ``adapter.py`` because every start reads it (``apps.ready``), and an adapter loads its SDK (Web
  Push's import takes 0.15 s);
- ``adapter.py``: ``adapter``, named ``<name>``: a ``ChatApp`` (``base``; its inbound endpoints
  in its ``urlpatterns()``, mounted under ``/chat/<name>/`` and answering 404 while it is off) or
  a ``Notifier`` (whom a prompt's message goes to);
- ``urls.py`` (if it has routes of its own): ``urlpatterns``, included at the site's root;
- ``views.py``: its views, and ``section(request)`` when it has a section on the settings page:
  what that section reads, under the channel's name;
- ``templates/``: its templates, found as the project's own are (``TEMPLATES["DIRS"]``) and named
  like them, ``askuser/…``; ``askuser/settings/<name>.html`` is its section of the settings page.

Its settings are read in ``controlui/settings.py`` and listed on ``docs/CONFIGURATION.md`` (one
page for every setting; Django reads its own, such as ``EMAIL_HOST``, only there), and a model it
keeps goes in ``askuser_app/models.py`` with a migration, where Django looks for models.

A folder's modules are imported when first asked for, by name.
``tests/delivery/test_channel_folders.py`` adds a throwaway channel and sees it found everywhere.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from askuser_app.delivery.channels.base import Adapter, ChatApp, Notifier
    from askuser_app.runtime.http import LoggedInRequest


@dataclass(frozen=True)
class Folder:
    """What a channel's folder declares of itself in its ``__init__``, as ``folder``."""

    # The environment variables it reads (in controlui/settings.py), each on docs/CONFIGURATION.md.
    settings: tuple[str, ...] = ()
    # Where a prompt was resolved, as an outcome says it ("Answered on Telegram by alice"), marked
    # with ``gettext_noop``: ``domain.wording`` says it in either language. Empty when no one
    # answers through it.
    surface: str = ""
    # A person links an identity on it (a ``ChatApp``, listed on the linking page); otherwise it is
    # a ``Notifier`` and names its recipients itself.
    links: bool = False
    # Its place in the channel list (lowest first; equal places by name).
    place: int = 100
    # Its section's place on the settings page (lowest first); None: it has none.
    section: int | None = None
    # The models (``"askuser_app.PushSubscription"``) whose saves and deletes change whom it
    # reaches; a user's always do.
    watches: tuple[str, ...] = ()
    # What it makes when the app is ready, before any database connection (Web Push's key).
    when_ready: Callable[[], None] | None = None
    # A session its person muted (``Session.muted_at``) sends nothing through it: notifications
    # that would ring a device. A chat's messages and mail are kept, as the page is.
    heeds_mute: bool = False
    # Its messages are needless while one of the person's tabs is in sight (Web Push: the page
    # shows and notifies the question itself): the engine does not send them then
    # (``runtime.presence``), and records why.
    not_while_seen: bool = False


@functools.cache
def names() -> tuple[str, ...]:
    """Every channel, by its folder's name, in the order of their places; found once per process."""
    packages = [found.name for found in pkgutil.iter_modules(__path__) if found.ispkg]
    declared = {name: folder for name in packages if (folder := _declared(name)) is not None}
    return tuple(sorted(declared, key=lambda name: (declared[name].place, name)))


def _declared(name: str) -> Folder | None:
    # ``chats/``, the chat apps' shared machinery, is a folder here and no channel: it declares none.
    return cast("Folder | None", getattr(importlib.import_module(f"{__name__}.{name}"), "folder", None))


def _folder(name: str) -> Folder:
    return cast(Folder, importlib.import_module(f"{__name__}.{name}").folder)


def folders() -> dict[str, Folder]:
    """Each channel's ``Folder``, by name, in order."""
    return {name: _folder(name) for name in names()}


@functools.cache
def chat_apps() -> tuple[str, ...]:
    """The channels a person links an identity on, in order."""
    return tuple(name for name, folder in folders().items() if folder.links)


@functools.cache
def notifiers() -> tuple[str, ...]:
    """The channels that name their own recipients, in order."""
    return tuple(name for name, folder in folders().items() if not folder.links)


@functools.cache
def not_while_seen() -> tuple[str, ...]:
    """The channels whose messages are not sent while one of the person's tabs is in sight."""
    return tuple(name for name, folder in folders().items() if folder.not_while_seen)


def adapter(name: str) -> Adapter:
    """The channel's adapter, from its folder's ``adapter`` module."""
    return cast("Adapter", importlib.import_module(f"{__name__}.{name}.adapter").adapter)


def installed() -> dict[str, Adapter]:
    """Every channel's adapter, configured or not, in order."""
    return dict(_installed())


@functools.cache
def _installed() -> dict[str, Adapter]:
    # Once per process: every create and resolution asks which channels are on.
    return {name: adapter(name) for name in names()}


def configured() -> dict[str, Adapter]:
    """The configured adapters by name; an unconfigured channel is absent."""
    return {name: adapter for name, adapter in installed().items() if adapter.configured()}


def installed_chat_apps() -> dict[str, ChatApp]:
    return {name: cast("ChatApp", installed()[name]) for name in chat_apps()}


def configured_chat_apps() -> dict[str, ChatApp]:
    return {name: app for name, app in installed_chat_apps().items() if app.configured()}


def notifier(name: str) -> Notifier:
    return cast("Notifier", installed()[name])


def label_of(channel: str) -> str:
    found = installed().get(channel)
    return found.label if found is not None else channel.title()


def url_modules() -> list[str]:
    """The ``urls`` module of each channel that has one, to include at the site's root."""
    return [f"{__name__}.{name}.urls" for name in names() if find_spec(f"{__name__}.{name}.urls") is not None]


def surfaces() -> dict[str, str]:
    """Each surface word a channel declares, by the channel's name, for ``domain.wording``."""
    return {name: folder.surface for name, folder in folders().items() if folder.surface}


def heeding_mute() -> frozenset[str]:
    """The channels that send nothing for a muted session."""
    return frozenset(name for name, folder in folders().items() if folder.heeds_mute)


def mutable() -> bool:
    """Whether muting a session changes anything here: a channel that heeds it is configured."""
    return any(name in heeding_mute() for name in configured())


def watched() -> list[str]:
    """The models whose changes change whom some channel reaches."""
    return list(dict.fromkeys(model for folder in folders().values() for model in folder.watches))


def when_ready() -> None:
    """What each channel makes when the app is ready."""
    for folder in folders().values():
        if folder.when_ready is not None:
            folder.when_ready()


def sections(request: LoggedInRequest) -> dict[str, Any]:
    """What the settings page shows of the channels: in ``channel_sections`` the template of each
    one's section (``askuser/settings/<name>.html``) in their order, and under each one's name
    what its section reads (its ``views.section(request)``)."""
    placed = sorted((folder.section, name) for name, folder in folders().items() if folder.section is not None)
    shown: dict[str, Any] = {"channel_sections": [f"askuser/settings/{name}.html" for _place, name in placed]}
    for _place, name in placed:
        shown[name] = importlib.import_module(f"{__name__}.{name}.views").section(request)
    return shown


def template_dirs() -> list[Path]:
    """The ``templates`` folder of each channel that has one (``loader``)."""
    found = [Path(folder) / name / "templates" for folder in __path__ for name in names()]
    return [path for path in found if path.is_dir()]
