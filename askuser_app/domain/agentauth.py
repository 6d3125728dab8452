"""Agent tokens: how they are made, stored (as a hash) and checked."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING

from django.db import connection
from django.utils import timezone

from askuser_app.models import Agent

if TYPE_CHECKING:
    from askuser_app.models import Agent

TOKEN_PREFIX = "au_"
# last_used_at is written at most this often, so reads stay reads.
TOUCH_EVERY = timedelta(seconds=60)


class Unauthorized(Exception):
    """A missing, unknown or revoked token (HTTP 401)."""


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    # Tokens are 256 random bits, so a fast hash is enough to make a leaked
    # table useless; a slow password hash would only slow every request.
    return hashlib.sha256(token.encode()).hexdigest()


def bearer_token(authorization: str | None) -> str:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Send your agent token as 'Authorization: Bearer <token>'.")
    return token.strip()


# Every agent request's first statement, written out: the ORM's ``get`` cost
# about 0.14 ms of CPU to build and read (the statement itself 0.02 ms), a
# tenth of a create (docs/PERFORMANCE.md, "The create's CPU halved"). It reads
# the row on every request, so a revoked or rotated token is refused at once
# in every process: no cache to forget. The agent is built with
# ``Model.from_db`` from the columns that need no conversion; its date columns
# are left deferred (nothing on an agent request reads them), and the two
# questions asked of them are asked in SQL: revoked, and touched within
# TOUCH_EVERY. tests/domain/test_agent_lookup.py fails if the table or its
# columns change under it.
AGENT_BY_TOKEN = (
    "SELECT id, name, owner_id, token_hash, token_prefix, webhook_secret, "
    "revoked_at IS NULL, (last_used_at IS NULL OR last_used_at < %s) "
    "FROM askuser_app_agent WHERE token_hash = %s"
)
AGENT_COLUMNS = ["id", "name", "owner_id", "token_hash", "token_prefix", "webhook_secret"]


def agent_for(authorization: str | None) -> Agent:
    """The active agent the Authorization header names, or Unauthorized."""

    token_hash = hash_token(bearer_token(authorization))
    now = timezone.now()
    touched_since = connection.ops.adapt_datetimefield_value(now - TOUCH_EVERY)
    with connection.cursor() as cursor:
        cursor.execute(AGENT_BY_TOKEN, [touched_since, token_hash])
        row = cursor.fetchone()
    if row is None:
        raise Unauthorized("Unknown agent token.")
    *columns, active, untouched = row
    if not active:
        revoked_at = Agent.objects.values_list("revoked_at", flat=True).get(token_hash=token_hash)
        raise Unauthorized(f"This agent token was revoked on {revoked_at:%Y-%m-%d at %H:%M} UTC.")
    agent = Agent.from_db(connection.alias, AGENT_COLUMNS, columns)
    if untouched:
        Agent.objects.filter(pk=agent.pk).update(last_used_at=now)
    return agent
