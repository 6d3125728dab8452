"""The delivery engine and its adapters (webhooks, channels/telegram|slack|discord|
email|push: askuser_app/delivery/): which channel layer a chat app's
events reach, so a test can say which mode it runs in."""

from __future__ import annotations

import pytest


@pytest.fixture
def scaled_layer(settings):
    """The scaled mode's channel layer as this process sees it: Redis, heard by every process.
    Nothing here reaches it (an unused port): for code that only asks which mode it runs in."""
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]},
        }
    }
    return settings


@pytest.fixture
def embedded_layer(settings):
    """The embedded mode's channel layer, on either tier: this process's memory alone."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "askuser_app.runtime.layers.InMemoryChannelLayer"}}
    return settings
