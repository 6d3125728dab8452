"""The ``Notifier`` for mail: whom a prompt is mailed to, and sending it (the mail itself is ``mails``)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, ClassVar

from django.conf import settings
from django.contrib.auth import get_user_model

from askuser_app.delivery import engine
from askuser_app.delivery.channels.base import Card, Closed, News, Recipient, Ref
from askuser_app.delivery.channels.email.mails import compose, compose_news, deliver
from askuser_app.domain import prefs
from askuser_app.models import Preferences

if TYPE_CHECKING:
    from askuser_app.models import Prompt


class Email:
    """The ``Notifier`` for mail; on wherever Django can send mail (always: files by default)."""

    name: ClassVar[str] = "email"
    label: ClassVar[str] = "Email"

    def configured(self) -> bool:
        return bool(settings.EMAIL_BACKEND)

    def recipients(self, prompt: Prompt) -> list[Recipient]:
        return self.reaches(prompt.session.owner_id, when=True)

    def reaches(self, owner_id: int, *, when: bool = False) -> list[Recipient]:
        """The owner's address if they are emailed at all; ``when``: after the delay they chose
        (a prompt's mail), else at once (an agent's news)."""
        # One light query on the create path: the owner's address and choice, no model built for them.
        found = (
            get_user_model()
            .objects.filter(pk=owner_id, is_active=True)
            .values_list("email", "preferences__email_after")
            .order_by()[:1]
        )
        for address, chosen in found:
            if address:
                owner = get_user_model()(pk=owner_id, email=address)
                after = prefs.email_after(owner, Preferences(user_id=owner_id, email_after=chosen))
                if after is None:
                    return []
                return [Recipient(address, after if when else timedelta(0))]
        return []

    async def send(self, address: str, card: Card) -> Ref:
        mail = await engine.database.run(compose)(card.prompt_id, address)  # the engine's thread, not the requests'
        if mail is None:
            return {"not_sent": "no longer waiting for this address"}
        await engine.blocking(deliver, mail)
        return {"message_id": mail.message_id}

    async def tell(self, address: str, news: News) -> None:
        await engine.blocking(deliver, compose_news(news, address))

    async def edit(self, ref: Ref, closed: Closed) -> None:
        """A sent mail cannot change; its links now say how the prompt was resolved."""


adapter = Email()
