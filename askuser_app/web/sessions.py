"""Logins kept in the cache before the database (``SESSION_ENGINE``), with the
cache a shortcut only (askuser_app/runtime/caching.py).

Django's ``cached_db`` store guards its write to the cache when a session is
saved, but not the write that fills the cache after a miss, the look-up of
a new login's key, nor the forgetting at a logout: with Redis restarting,
every page whose login had to be read from the database failed with a 500
(tests/server/test_soak.py restarts Redis under load). Here a cache that fails
there is logged (``caching.warn``) and passed by: the login is the
database's, as if nothing were cached."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.sessions.backends import cached_db, db
from django.core.cache import caches

from askuser_app.runtime import caching

log = logging.getLogger("askuser")


class SessionStore(cached_db.SessionStore):
    def load(self) -> dict[str, Any]:
        try:
            return super().load()
        except Exception as exc:  # the cache's own errors (redis-py's) are not Django's to name
            caching.warn("The cache failed reading a login (%s); it is read from the database.", exc)
            return db.SessionStore.load(self)

    async def aload(self) -> dict[str, Any]:
        try:
            return await super().aload()
        except Exception as exc:
            caching.warn("The cache failed reading a login (%s); it is read from the database.", exc)
            return await db.SessionStore.aload(self)

    def exists(self, session_key: str) -> bool:
        try:
            return super().exists(session_key)
        except Exception as exc:
            caching.warn("The cache failed (%s); the login's key is looked up in the database.", exc)
            return db.SessionStore.exists(self, session_key)

    async def aexists(self, session_key: str) -> bool:
        try:
            return await super().aexists(session_key)
        except Exception as exc:
            caching.warn("The cache failed (%s); the login's key is looked up in the database.", exc)
            return await db.SessionStore.aexists(self, session_key)

    def delete(self, session_key: str | None = None) -> None:
        key = session_key or self.session_key
        db.SessionStore.delete(self, session_key)
        if key is not None:
            _forget(self.cache_key_prefix + key)

    async def adelete(self, session_key: str | None = None) -> None:
        key = session_key or self.session_key
        await db.SessionStore.adelete(self, session_key)
        if key is not None:
            try:
                await caches[settings.SESSION_CACHE_ALIAS].adelete(self.cache_key_prefix + key)
            except Exception as exc:
                _not_forgotten(exc)


def _forget(key: str) -> None:
    try:
        caches[settings.SESSION_CACHE_ALIAS].delete(key)
    except Exception as exc:
        _not_forgotten(exc)


def _not_forgotten(exc: Exception) -> None:
    # Deleted from the database already: the cache keeps it only until it runs out.
    log.error("The cache could not forget an ended login (%s); it runs out on its own.", exc)
