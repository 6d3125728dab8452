"""What ``services`` announces to the modules that act on it, without importing them.

The deadline loop (``expiry``) runs ``services`` functions, so ``services``
cannot import it back; it sends these signals and the loop listens.
"""

from __future__ import annotations

from django.dispatch import Signal

# Sent after commit, with ``expires_at``: a prompt created in this process has a deadline.
deadline_added = Signal()
