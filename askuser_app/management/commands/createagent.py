"""``manage.py createagent NAME --owner USERNAME``: a new agent and its token, shown once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from askuser_app.domain import services


class Command(BaseCommand):
    help = "Create an agent for a user and print its API token (shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="A name for the agent, shown to its owner.")
        parser.add_argument("--owner", required=True, help="Username of the human the agent asks.")
        parser.add_argument("--quiet", action="store_true", help="Print only the token.")

    def handle(self, name: str, owner: str, quiet: bool, **options: Any) -> None:
        user = get_user_model().objects.filter(username=owner).first()
        if user is None:
            raise CommandError(f"No user {owner!r}; add them first with 'manage.py adduser {owner}'.")
        agent, token = services.create_agent(name, user)
        if quiet:
            self.stdout.write(token)
            return
        self.stdout.write(f"Agent {agent.name!r} for {owner} created. Its token (shown only now):\n\n    {token}\n")
        self.stdout.write(f"Its webhook signing secret (for callback_url deliveries):\n\n    {agent.webhook_secret}\n")
