"""No secret in any log line: the configured tokens and keys replaced before a line is written.

Libraries log what they were given: httpx the URL of each request, and a
Telegram Bot API URL holds the bot token (``/bot<token>/sendMessage``); an
exception's text may quote a URL or a header. ``RedactSecrets`` is a filter on
the handler of ``settings.LOGGING``, so it sees every record of every logger
that reaches it, whatever its level, and replaces each secret the settings
hold (as written and as a URL would quote it) in the message, the traceback
and the stack.

Daphne's access log is not a logger: it writes each request's path itself.
``access_path`` is what it writes instead: a route whose path carries a
credential (``CREDENTIAL_ROUTES``: a mail's signed link, which answers a
question without a login) has that segment masked, a query string keeps its
names only, and the configured secrets are masked as everywhere else. The
link keeps its shape (``/chat/email/<token>/``), so a mail read without
JavaScript still works; the log, not the route, is what changes.
"""

from __future__ import annotations

import logging
import urllib.parse

from django.conf import settings

MASK = "[redacted]"
# Routes whose next path segment is a credential: a mail's signed link (delivery/channels/email/urls.py).
CREDENTIAL_ROUTES = ("/chat/email/",)


def configured() -> list[str]:
    """The secrets this process holds, longest first (one containing another is masked whole)."""
    found = [
        settings.TELEGRAM_BOT_TOKEN,
        settings.TELEGRAM_WEBHOOK_SECRET,
        settings.SLACK_BOT_TOKEN,
        settings.SLACK_SIGNING_SECRET,
        settings.SLACK_APP_TOKEN,
        settings.DISCORD_BOT_TOKEN,
        settings.ASKUSER_VAPID_PRIVATE_KEY,
        settings.EMAIL_HOST_PASSWORD,
    ]
    # Unset, the secret key is read from the data folder on use (a lazy value): nothing logs it.
    if isinstance(settings.SECRET_KEY, str):
        found.append(settings.SECRET_KEY)
    forms = {form for secret in found if secret for form in (secret, urllib.parse.quote(secret, safe=""))}
    return sorted(forms, key=len, reverse=True)


def access_path(path: str) -> str:
    """``path`` (and its query) as the access log may write it: no credential, no query value."""
    path, mark, query = path.partition("?")
    for route in CREDENTIAL_ROUTES:
        if path.startswith(route) and len(path) > len(route):
            _credential, slash, rest = path[len(route) :].partition("/")
            path = f"{route}{MASK}{slash}{rest}"
    names = "&".join(f"{pair.partition('=')[0]}={MASK}" for pair in query.split("&") if pair)
    return redact(path + mark + names, configured())


def redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        secrets = configured()
        if not secrets:
            return True
        message = record.getMessage()
        clean = redact(message, secrets)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            # What the formatter would write, masked first; it writes exc_text when set.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, secrets)
        return True
