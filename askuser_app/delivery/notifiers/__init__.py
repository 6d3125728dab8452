"""One-way reminders that a question waits: ``email/`` and ``push/`` (Web Push), each a folder with
its adapter, its views, its templates and what it needs besides. A notifier is found by its folder
being here: the channel list (``delivery.adapters``), the app's urls, the template folders and the
settings page take it from this package.

A folder ``<name>/`` holds:

- ``__init__.py``: what it is, in its docstring, and ``folder = Folder(...)`` (below);
- ``adapter.py``: ``adapter``, its ``Notifier`` (``delivery/chats/base.py``), named ``<name>``;
- ``urls.py`` (if it has routes): ``urlpatterns``, included at the site's root;
- ``views.py``: its views, and ``section(request)`` when it has a section on the settings page:
  what that section reads, under the notifier's name;
- ``templates/``: its templates, found as the project's own are (``TEMPLATES["DIRS"]``, from
  ``template_dirs``) and named like them, ``askuser/…``; ``askuser/settings/<name>.html`` is its
  section of the settings page.

This module is plain Python at import, like ``runtime.datadir``: the settings ask for
``template_dirs`` before Django is set up. A folder's own modules are imported when first asked
for, by name.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
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

    # Its section's place on the settings page, among the notifiers' (lowest first); None: it has none.
    section: int | None = None


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


def sections(request: LoggedInRequest) -> dict[str, Any]:
    """What the settings page shows of the notifiers: in ``notifier_sections`` the template of each
    one's section (``askuser/settings/<name>.html``) in their order, and under each one's name
    what its section reads (its ``views.section(request)``)."""
    placed = sorted((folder.section, name) for name, folder in folders().items() if folder.section is not None)
    shown: dict[str, Any] = {"notifier_sections": [f"askuser/settings/{name}.html" for _place, name in placed]}
    for _place, name in placed:
        shown[name] = importlib.import_module(f"{__name__}.{name}.views").section(request)
    return shown
