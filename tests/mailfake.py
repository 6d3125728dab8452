"""A real SMTP server on 127.0.0.1 (aiosmtpd), for the email tests: it keeps what it receives,
and answers RCPT or DATA with a chosen refusal when told to."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from tests.servers import free_port


class Inbox:
    """aiosmtpd's handler: the received mails, in order."""

    def __init__(self) -> None:
        self.mails: list[EmailMessage] = []
        self.refuse_rcpt = ""  # e.g. "550 5.1.1 No such user"; empty accepts
        self.refuse_mail = ""  # the same for MAIL FROM, e.g. "553 5.7.1 Sender not allowed"
        self.rcpt_tries = 0
        self.changed = threading.Condition()
        self.port = 0

    async def handle_MAIL(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:
        if self.refuse_mail:
            return self.refuse_mail
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:
        with self.changed:
            self.rcpt_tries += 1
            self.changed.notify_all()
        if self.refuse_rcpt:
            return self.refuse_rcpt
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        mail = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(mail, EmailMessage)
        with self.changed:
            self.mails.append(mail)
            self.changed.notify_all()
        return "250 Message accepted for delivery"

    def wait_for(self, count: int = 1, timeout: float = 15) -> list[EmailMessage]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.mails) >= count, timeout), f"{len(self.mails)} mails"
            return list(self.mails)

    def wait_for_tries(self, count: int, timeout: float = 15) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.rcpt_tries >= count, timeout), f"{self.rcpt_tries} tries"


@pytest.fixture
def smtp_server() -> Iterator[Inbox]:
    inbox = Inbox()
    inbox.port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=inbox.port)
    controller.start()
    yield inbox
    controller.stop()


def parts(mail: EmailMessage) -> tuple[str, str]:
    """The plain text and the HTML of a mail."""
    plain, html = mail.get_body(("plain",)), mail.get_body(("html",))
    assert plain is not None and html is not None
    return str(plain.get_content()), str(html.get_content())  # type: ignore[attr-defined]
