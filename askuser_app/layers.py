"""The in-memory channel layer of the embedded mode, without its quadratic sweep."""

from __future__ import annotations

import time
from typing import Any

from channels.layers import InMemoryChannelLayer as StockInMemoryChannelLayer


class InMemoryChannelLayer(StockInMemoryChannelLayer):
    """Channels' in-memory layer sweeps every channel and group for expired
    messages on each send and receive, so with thousands of open sockets each
    call costs thousands of steps. Expiry is measured in seconds, so sweeping
    at most once a second keeps its meaning at a constant cost per call."""

    SWEEP_EVERY = 1.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._swept_at = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._swept_at >= self.SWEEP_EVERY:
            self._swept_at = now
            super()._clean_expired()
