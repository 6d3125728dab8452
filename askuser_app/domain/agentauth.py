"""Agent tokens: how they are made, stored (as a hash) and checked."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING

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


def agent_for(authorization: str | None) -> Agent:
    """The active agent the Authorization header names, or Unauthorized."""

    token = bearer_token(authorization)
    # token_hash is unique: a plain get, without first()'s ORDER BY.
    try:
        agent = Agent.objects.get(token_hash=hash_token(token))
    except Agent.DoesNotExist:
        raise Unauthorized("Unknown agent token.") from None
    if agent.revoked_at is not None:
        raise Unauthorized(f"This agent token was revoked on {agent.revoked_at:%Y-%m-%d at %H:%M} UTC.")
    now = timezone.now()
    if agent.last_used_at is None or now - agent.last_used_at > TOUCH_EVERY:
        Agent.objects.filter(pk=agent.pk).update(last_used_at=now)
    return agent
