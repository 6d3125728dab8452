"""``manage.py linkchat telegram|slack|discord <platform user id> --user USERNAME`` (or ``--unlink``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from askuser_app.delivery import channels
from askuser_app.delivery.channels.chats import core
from askuser_app.models import ChatLink


class Command(BaseCommand):
    help = "Link a chat identity to a user by hand (no code), or unlink it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("channel", choices=channels.chat_apps())
        parser.add_argument("external_id", help="The person's user id on the platform.")
        parser.add_argument("--user", help="Username of the person whose questions go there.")
        parser.add_argument("--chat-id", default="", help="Where a direct message goes, when not the user id.")
        parser.add_argument("--handle", default="", help="Their name on the platform, for the links list.")
        parser.add_argument("--unlink", action="store_true", help="Forget the link instead.")

    def handle(self, channel: str, external_id: str, **options: Any) -> None:
        if options["unlink"]:
            deleted, _rows = ChatLink.objects.filter(channel=channel, external_id=external_id).delete()
            if not deleted:
                raise CommandError(f"No {channel} user {external_id} is linked.")
            self.stdout.write(f"Unlinked {channel} user {external_id}.")
            return
        username = options["user"]
        if not username:
            raise CommandError("Name the user with --user USERNAME (or give --unlink).")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username}; add them first with 'manage.py adduser {username}'.")
        core.link_by_hand(user, channel, external_id, chat_id=options["chat_id"], handle=options["handle"])
        self.stdout.write(f"Linked {channel} user {external_id} to {username}.")
