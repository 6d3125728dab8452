"""One-way reminders that a question waits: ``email/`` and ``push/`` (Web Push). A notifier is one
folder here, found by being here: the channel list, the app's urls, the template folders, the
settings page and ``domain.wording`` take it from this package, and nothing else names it.

To add one, make ``askuser_app/delivery/notifiers/<name>/`` with:

- ``__init__.py``: what it is, in its docstring, and ``folder = Folder(...)``: the environment
  variables it reads, its surface words, its place on the settings page, the models whose
  changes change whom it reaches, and what it makes when the app is ready (``Folder`` below).
  Declared here rather than in ``adapter.py`` because every start reads it (``apps.ready``),
  and an adapter loads its SDK (Web Push's import takes 0.15 s);
- ``adapter.py``: ``adapter``, its ``Notifier`` (``delivery/chats/base.py``), named ``<name>``:
  whom a prompt's message goes to, and sending it;
- ``urls.py`` (if it has routes): ``urlpatterns``, included at the site's root;
- ``views.py``: its views, and ``section(request)`` when it has a section on the settings page:
  what that section reads, under the notifier's name;
- ``templates/``: its templates, found as the project's own are (``TEMPLATES["DIRS"]``, from
  ``template_dirs``) and named like them, ``askuser/…``; ``askuser/settings/<name>.html`` is its
  section of the settings page.

Two things stay where the whole app keeps them: its settings are read in ``controlui/settings.py``
and listed on ``docs/CONFIGURATION.md`` (one page for every setting, and Django reads its own,
such as ``EMAIL_HOST``, only there), and a model it keeps goes in ``askuser_app/models.py`` with a
migration, where Django looks for models.

This module is plain Python at import, like ``runtime.datadir``: the settings ask for
``template_dirs`` before Django is set up. A folder's own modules are imported when first asked
for, by name. ``tests/delivery/test_notifier_folders.py`` adds a third notifier and sees it found.
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
    from askuser_app.delivery.chats.base import Notifier
    from askuser_app.runtime.http import LoggedInRequest


@dataclass(frozen=True)
class Folder:
    """What a notifier's folder declares of itself in its ``__init__``, as ``folder``."""

    # The environment variables it reads (in controlui/settings.py), each on docs/CONFIGURATION.md.
    settings: tuple[str, ...] = ()
    # Where a prompt was resolved, as an outcome says it ("Answered by email by alice"), marked
    # with ``gettext_noop``: ``domain.wording`` says it in either language. Empty when no one
    # answers through it.
    surface: str = ""
    # Its section's place on the settings page, among the notifiers' (lowest first); None: it has none.
    section: int | None = None
    # The models (``"askuser_app.PushSubscription"``) whose saves and deletes change whom it
    # reaches; a user's always do.
    watches: tuple[str, ...] = ()
    # What it makes when the app is ready, before any database connection (Web Push's key).
    when_ready: Callable[[], None] | None = None


@functools.cache
def names() -> tuple[str, ...]:
    """Every notifier, by its folder's name, in alphabetical order; found once per process."""
    return tuple(sorted(found.name for found in pkgutil.iter_modules(__path__) if found.ispkg))


def folders() -> dict[str, Folder]:
    """Each notifier's ``Folder``, by name."""
    return {name: cast(Folder, importlib.import_module(f"{__name__}.{name}").folder) for name in names()}


def adapter(name: str) -> Notifier:
    """The notifier's adapter, from its folder's ``adapter`` module."""
    return cast("Notifier", importlib.import_module(f"{__name__}.{name}.adapter").adapter)


def url_modules() -> list[str]:
    """The ``urls`` module of each notifier that has one, to include at the site's root."""
    return [f"{__name__}.{name}.urls" for name in names() if find_spec(f"{__name__}.{name}.urls") is not None]


def template_dirs() -> list[Path]:
    """The ``templates`` folder of each notifier that has one."""
    found = [Path(folder) / name / "templates" for folder in __path__ for name in names()]
    return [path for path in found if path.is_dir()]


def surfaces() -> dict[str, str]:
    """Each surface word a notifier declares, by the notifier's name, for ``domain.wording``."""
    return {name: folder.surface for name, folder in folders().items() if folder.surface}


def watched() -> list[str]:
    """The models whose changes change whom some notifier reaches."""
    return [model for folder in folders().values() for model in folder.watches]


def when_ready() -> None:
    """What each notifier makes when the app is ready."""
    for folder in folders().values():
        if folder.when_ready is not None:
            folder.when_ready()


def sections(request: LoggedInRequest) -> dict[str, Any]:
    """What the settings page shows of the notifiers: in ``notifier_sections`` the template of each
    one's section (``askuser/settings/<name>.html``) in their order, and under each one's name
    what its section reads (its ``views.section(request)``)."""
    placed = sorted((folder.section, name) for name, folder in folders().items() if folder.section is not None)
    shown: dict[str, Any] = {"notifier_sections": [f"askuser/settings/{name}.html" for _place, name in placed]}
    for _place, name in placed:
        shown[name] = importlib.import_module(f"{__name__}.{name}.views").section(request)
    return shown
