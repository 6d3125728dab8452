"""No secret in a log line: the logging configuration's filter masks every configured token."""

from __future__ import annotations

import io
import logging
import logging.config

import pytest
from django.conf import settings as django_settings

pytestmark = pytest.mark.backend_neutral

SECRETS = {
    "TELEGRAM_BOT_TOKEN": "123456:TEST-bot-token",
    "SLACK_BOT_TOKEN": "xoxb-1-slack-token",
    "SLACK_SIGNING_SECRET": "8f742231b10e8888abcd99yyyzzz85a5",
    "DISCORD_BOT_TOKEN": "discord.bot.token",
    "ASKUSER_VAPID_PRIVATE_KEY": "-----BEGIN PRIVATE KEY-----\nvapid\n-----END PRIVATE KEY-----",
}


@pytest.fixture
def written(settings):
    """The lines the configured console handler writes, for a logger of this test's own."""
    for name, value in SECRETS.items():
        setattr(settings, name, value)
    stream = io.StringIO()
    config = {**django_settings.LOGGING, "disable_existing_loggers": False}
    config["handlers"] = {"console": {**config["handlers"]["console"], "stream": stream}}
    del config["root"]
    config["loggers"] = {"secret-test": {"handlers": ["console"], "level": "DEBUG", "propagate": False}}
    logging.config.dictConfig(config)
    yield stream
    logging.getLogger("secret-test").handlers.clear()


def test_every_configured_secret_is_masked_in_messages_arguments_and_tracebacks(written):
    log = logging.getLogger("secret-test")
    token = SECRETS["TELEGRAM_BOT_TOKEN"]
    log.debug("HTTP Request: POST http://127.0.0.1/bot%s/getUpdates", token)
    log.info("quoted: /bot%s/x", token.replace(":", "%3A"))
    for name, value in SECRETS.items():
        log.warning(f"{name}={value}")
    try:
        raise ValueError(f"refused {SECRETS['SLACK_BOT_TOKEN']}")
    except ValueError:
        log.exception("failed")

    text = written.getvalue()
    assert "HTTP Request: POST http://127.0.0.1/bot[redacted]/getUpdates" in text
    assert "ValueError: refused [redacted]" in text
    for value in SECRETS.values():
        assert value not in text
    assert "TEST-bot-token" not in text and "%3A" not in text
