"""The assembled server's ``domain.effects.Effects``: every part that acts on a change, in order.

Installed when the app is ready (``apps.py``). Each method is called inside the transaction of
its change (``services``): the rows that must commit with the change (a webhook's delivery,
every channel's message) are written here; what others see (the live pages and waits, the
deadline loop) leaves after the commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction

from askuser_app.delivery import messages, webhooks
from askuser_app.runtime import metrics, realtime
from askuser_app.server import expiry

if TYPE_CHECKING:
    from askuser_app.models import Message, Prompt


class Assembled:
    def prompt_created(self, prompt: Prompt) -> None:
        transaction.on_commit(lambda: realtime.prompt_created(prompt), robust=True)
        messages.prompt_created(prompt)  # a message to every channel that reaches the owner
        transaction.on_commit(lambda: expiry.loop.wake(prompt.expires_at), robust=True)

    def prompt_resolved(self, prompt: Prompt, result: dict[str, Any]) -> None:
        transaction.on_commit(lambda: realtime.prompt_resolved(prompt, result), robust=True)
        webhooks.prompt_resolved(prompt, result)
        messages.prompt_resolved(prompt)  # every channel's message of it edited to its outcome
        metrics.prompt_resolved(prompt, result)  # its time to answer, once it commits

    def prompt_extended(self, prompt: Prompt) -> None:
        transaction.on_commit(lambda: realtime.prompt_extended(prompt), robust=True)
        deadline = prompt.expires_at  # read now: the loop wakes for this change's deadline
        transaction.on_commit(lambda: expiry.loop.wake(deadline), robust=True)

    def message_created(self, message: Message) -> None:
        transaction.on_commit(lambda: realtime.message_created(message), robust=True)

    def agent_news(self, message: Message, *, finished: bool) -> None:
        messages.agent_news(message, finished=finished)  # to every channel that reaches the owner
