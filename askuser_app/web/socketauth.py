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

import uuid
from dataclasses import dataclass
from datetime import datetime
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model, load_backend
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS, connection
from django.utils.crypto import constant_time_compare

from askuser_app.models import Prompt, Session


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


# The socket open's one raw statement: a session page's session (the columns
# a page shows: its creation time, which none does, would cost a conversion
# per connect on SQLite, and is read if ever used), its owner's password hash
# (to verify the login's session hash) and what the page needs to catch up
# on (the pending prompt's id; anything new since the page's cursor). The ORM
# builds the same query (``ui.with_catch_up`` on the session joined to its
# owner) in about 4.8 ms, most of a connect's database work; the statement
# costs 0.25 ms (docs/PERFORMANCE.md, "Sockets"). PostgreSQL and SQLite both
# speak it; tests/web/test_socketauth.py compares what it reads with the ORM's
# reading on both databases, so a changed table or column fails there.
SESSION_PAGE = """
SELECT s.id, s.owner_id, s."key", s.title, s.agent_id, u.password AS owner_password,
  (SELECT p.id FROM askuser_app_prompt p WHERE p.session_id = s.id AND p.status = %(pending)s LIMIT 1) AS pending_id,
  (EXISTS (SELECT 1 FROM askuser_app_message m WHERE m.session_id = s.id AND m.created_at >= %(since)s)
   OR EXISTS (SELECT 1 FROM askuser_app_prompt p
              WHERE p.session_id = s.id AND p.status <> %(pending)s AND p.resolved_at >= %(since)s)) AS anything_new
FROM askuser_app_session s JOIN auth_user u ON u.id = s.owner_id
WHERE s."key" = %(key)s AND s.owner_id = %(owner)s AND u.is_active
"""


def open_socket(cookies: dict[str, str], key: str | None, since: datetime | None = None) -> Opened:
    """The socket's user and session; ``Opened(None)`` for no valid login.

    With Django's own backend and user model, a session page's user arrives
    with its session row, and the session with what ``ui.render_catch_up``
    reads for ``since``: one query for the login, one for the rest. With
    another backend, the backend reads the user and the session is read alone."""
    login = login_from(cookies)
    if login is None:
        return Opened(None)
    try:
        if key is not None and type(load_backend(login.backend)) is ModelBackend and get_user_model() is User:
            return _session_page(login, key, since)
        user = _user(login)
    except (ValueError, TypeError):  # a user id this user model does not take
        return Opened(None)
    if not verified(user, login):
        return Opened(None)
    session = Session.objects.select_related("agent").filter(owner=user, key=key).first() if key else None
    return Opened(user, session)


def _session_page(login: Login, key: str, since: datetime | None) -> Opened:
    # ModelBackend.get_user() refuses inactive users: so does the statement.
    when = connection.ops.adapt_datetimefield_value(since)
    params = {"pending": Prompt.Status.PENDING, "since": when, "key": key, "owner": int(login.user_id)}
    session = next(iter(Session.objects.raw(SESSION_PAGE, params)), None)
    if session is None:  # no such session: tell a stale login from a wrong address
        user = _user(login)
        return Opened(user if verified(user, login) else None)
    read = vars(session)
    # The owner as far as the statement read it; any other field is read when first used.
    owner = User.from_db(
        DEFAULT_DB_ALIAS, ["id", "password", "is_active"], [session.owner_id, read.pop("owner_password"), True]
    )
    if not verified(owner, login):
        return Opened(None)
    session.owner = owner
    # As the ORM reads them on either database: a UUID (SQLite gives its hex) and a boolean.
    read["pending_id"] = uuid.UUID(str(read["pending_id"])) if read["pending_id"] else None
    read["anything_new"] = bool(read["anything_new"])
    return Opened(owner, session)


def _user(login: Login) -> Any | None:
    return load_backend(login.backend).get_user(login.user_id)
