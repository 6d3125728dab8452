"""One-way reminders that a question waits: ``email/`` and ``push/`` (Web Push), each a folder with
its adapter, its views and what it needs besides. A notifier is found by its folder being here:
the channel list (``delivery.adapters``) and the app's urls take it from this package.

A folder ``<name>/`` holds ``adapter.py``, whose ``adapter`` is its ``Notifier``
(``delivery/chats/base.py``), named ``<name>``, and, if it has routes, ``urls.py``, whose
``urlpatterns`` are included at the site's root.

This module is plain Python at import: a folder's own modules are imported when first asked for,
by name.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from importlib.util import find_spec
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from askuser_app.delivery.chats.base import Notifier


@functools.cache
def names() -> tuple[str, ...]:
    """Every notifier, by its folder's name, in alphabetical order; found once per process."""
    return tuple(sorted(found.name for found in pkgutil.iter_modules(__path__) if found.ispkg))


def adapter(name: str) -> Notifier:
    """The notifier's adapter, from its folder's ``adapter`` module."""
    return cast("Notifier", importlib.import_module(f"{__name__}.{name}.adapter").adapter)


def url_modules() -> list[str]:
    """The ``urls`` module of each notifier that has one, to include at the site's root."""
    return [f"{__name__}.{name}.urls" for name in names() if find_spec(f"{__name__}.{name}.urls") is not None]
