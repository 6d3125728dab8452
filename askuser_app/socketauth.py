"""Who opens a live socket, and which of their sessions it follows, in one
database call.

Channels' ``AuthMiddlewareStack`` loads the login and the user in one hop and
the consumer looked the session up in another; a page opening its socket paid
for both. Here the login is read from Django's session store (its public
``SessionStore``), and the user comes joined to the session row the socket
follows, verified against the login's session hash as ``django.contrib.auth``
does for a request.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, load_backend
from django.contrib.auth.backends import ModelBackend
from django.db.models import QuerySet
from django.utils.crypto import constant_time_compare

from .models import Session


@dataclass
class Login:
    user_id: str
    backend: str
    session_hash: str


@dataclass
class Opened:
    """A socket's user, and its session for a session page (None for the list)."""

    user: Any | None
    session: Session | None = None


def login_from(cookies: dict[str, str]) -> Login | None:
    """The login a browser's session cookie holds, if any (one query, by key)."""
    key = cookies.get(settings.SESSION_COOKIE_NAME)
    if not key:
        return None
    store = import_module(settings.SESSION_ENGINE).SessionStore(key)
    try:
        login = Login(str(store[SESSION_KEY]), store[BACKEND_SESSION_KEY], store.get(HASH_SESSION_KEY) or "")
    except KeyError:
        return None
    return login if login.backend in settings.AUTHENTICATION_BACKENDS else None


def verified(user: Any, login: Login) -> bool:
    """The login still stands for ``user``: a password change ends it, as for a page."""
    if user is None or not login.session_hash:
        return False
    hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return any(constant_time_compare(login.session_hash, candidate) for candidate in hashes)


def open_socket(cookies: dict[str, str], key: str | None, sessions: QuerySet[Session] | None = None) -> Opened:
    """The socket's user and session; ``Opened(None)`` for no valid login.

    With Django's own backend, the user arrives joined to the session row:
    one query for the login, one for the user and the session, read from
    ``sessions`` (with what the caller annotates it with, e.g. the page's state)."""
    sessions = Session.objects.all() if sessions is None else sessions
    login = login_from(cookies)
    if login is None:
        return Opened(None)
    try:
        if key is not None and type(load_backend(login.backend)) is ModelBackend:
            return _joined(login, key, sessions)
        user = _user(login)
    except (ValueError, TypeError):  # a user id this user model does not take
        return Opened(None)
    if not verified(user, login):
        return Opened(None)
    session = sessions.select_related("agent").filter(owner=user, key=key).first() if key else None
    return Opened(user, session)


def _joined(login: Login, key: str, sessions: QuerySet[Session]) -> Opened:
    # ModelBackend.get_user() refuses inactive users: so does the join.
    session = (
        sessions.select_related("owner", "agent")
        # The session stores the id as a string, as Django's own get_user reads it;
        # the lookup converts it (the stubs want the int).
        .filter(key=key, owner_id=login.user_id, owner__is_active=True)  # type: ignore[misc]
        .first()
    )
    if session is None:  # no such session: tell a stale login from a wrong address
        user = _user(login)
        return Opened(user if verified(user, login) else None)
    return Opened(session.owner, session) if verified(session.owner, login) else Opened(None)


def _user(login: Login) -> Any | None:
    return load_backend(login.backend).get_user(login.user_id)
