"""Login throttling's second tier: one username guessed from many addresses.

django-axes locks one username from one address after ``ASKUSER_LOGIN_FAILURES``
wrong passwords (``AXES_LOCKOUT_PARAMETERS``); an attacker with many addresses
gets that many guesses from each. Here, after
``ASKUSER_LOGIN_FAILURES_PER_USERNAME`` wrong passwords for one username within
an hour, from any addresses, that username is locked out from every address
for the cool-off (``ASKUSER_LOGIN_COOLOFF_MINUTES``), with the same page as
axes' own lockout. The price: anyone who knows a username can lock that account
by failing often enough; the log line of each such lockout names the addresses
the failures came from.

The failures counted are axes' failure log (``AXES_ENABLE_ACCESS_FAILURE_LOG``):
one row per password checked and found wrong, with the client's address
(``proxies.for_request``). An attempt refused during a lockout checks no
password and adds no row (``AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT``
off), so a username is locked while its latest failure is within the cool-off
and it closed a run of that many failures within an hour. Rows older than any
such run are dropped with each new failure: the log holds the last hour or so.

This is axes' database handler with three methods extended, the way its
``AXES_HANDLER`` setting offers; ``axes_reset`` and its siblings lift this
tier too.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from axes.models import AccessFailureLog
from django.conf import settings
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone

log = logging.getLogger("askuser")

WINDOW = timedelta(hours=1)


class LoginHandler(AxesDatabaseHandler):
    """axes' database handler, with the username tier on top of its own."""

    def is_locked(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> bool:
        if super().is_locked(request, credentials):
            return True
        return username_locked(get_client_username(request, credentials), timezone.now())

    def user_login_failed(
        self, sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
    ) -> None:
        refused = request is not None and getattr(request, "axes_locked_out", False)
        super().user_login_failed(sender, credentials, request, **kwargs)
        if request is None or refused:
            return
        now = timezone.now()
        AccessFailureLog.objects.filter(attempt_time__lt=now - WINDOW - settings.AXES_COOLOFF_TIME).delete()
        username = get_client_username(request, credentials)
        if username_locked(username, now):
            log.warning(
                "login: username %r locked out from every address for %d minutes after %d wrong passwords "
                "within an hour, from %s",
                username,
                round(settings.AXES_COOLOFF_TIME.total_seconds() / 60),
                settings.ASKUSER_LOGIN_FAILURES_PER_USERNAME,
                addresses(username),
            )
            # As axes does when its own limit is reached: this very answer is the lockout page.
            request.axes_locked_out = True  # type: ignore[attr-defined]
            request.axes_credentials = credentials  # type: ignore[attr-defined]

    def reset_attempts(
        self, *, ip_address: str | None = None, username: str | None = None, ip_or_username: bool = False
    ) -> int:
        count: int = super().reset_attempts(ip_address=ip_address, username=username, ip_or_username=ip_or_username)
        if ip_or_username:
            failures = AccessFailureLog.objects.filter(Q(ip_address=ip_address) | Q(username=username))
        else:
            failures = AccessFailureLog.objects.all()
            failures = failures.filter(ip_address=ip_address) if ip_address else failures
            failures = failures.filter(username=username) if username else failures
        failures.delete()
        return count


def username_locked(username: str | None, now: datetime) -> bool:
    """Whether ``username``'s latest failures, as many as the limit, came within an hour,
    the last of them within the cool-off."""
    limit = settings.ASKUSER_LOGIN_FAILURES_PER_USERNAME
    if not username or not limit:
        return False
    run = list(_latest(username, limit).values_list("attempt_time", flat=True))
    return len(run) == limit and run[0] - run[-1] <= WINDOW and now - run[0] < settings.AXES_COOLOFF_TIME


def addresses(username: str) -> str:
    """Where the failures of a lockout came from, most first: ``203.0.113.7 (30), 198.51.100.2 (20)``."""
    latest = _latest(username, settings.ASKUSER_LOGIN_FAILURES_PER_USERNAME)
    counts = Counter(latest.values_list("ip_address", flat=True))
    return ", ".join(f"{address or 'no address'} ({count})" for address, count in counts.most_common())


def _latest(username: str, limit: int) -> Any:
    return AccessFailureLog.objects.filter(username=username).order_by("-attempt_time")[:limit]
