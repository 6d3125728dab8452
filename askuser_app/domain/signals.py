"""What ``services`` announces to the parts that act on a change, without importing them.

The domain imports no other part of the app: the live pages and waits
(``runtime.realtime``), the delivery engine's kinds (``delivery``) and the
deadline loop (``server.expiry``) connect to these in ``apps.ready``.

Sent *inside* the transaction that makes the change, so that a receiver may
write rows that must commit with it (a message's delivery, a webhook's) and
must defer anything others can see (an announcement) with
``transaction.on_commit``.
"""

from __future__ import annotations

from django.dispatch import Signal

# ``prompt``: a prompt was stored, pending.
prompt_created = Signal()
# ``prompt``, ``result``: the one transition out of pending happened.
prompt_resolved = Signal()
# ``extended`` (``services.Extended``): a person moved the deadline.
prompt_extended = Signal()
# ``message``: a chat message was stored (an agent's, a person's, or askuser's own note).
message_created = Signal()
# ``message``, ``finished``: a coding agent's news for the person (a ``post_agent_note`` that
# tells): waiting for their input, or (``finished``) done, which they hear of only if they chose to.
agent_news = Signal()
# Sent after commit, with ``expires_at``: a prompt in this process has a new deadline.
deadline_added = Signal()
