"""``manage.py adduser USERNAME``: an ordinary person agents may ask, not an admin.

``createsuperuser`` would make them an admin of everyone's history; this makes a
login for the Control UI only (``--reviewer`` adds read access to the history in
the admin, through the Reviewers group).
"""

from __future__ import annotations

import getpass
import secrets
import sys
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from askuser_app.models import REVIEWERS

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class Command(BaseCommand):
    help = "Add a person who answers their agents' questions in the Control UI (not staff, not a superuser)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--email", default="", help="Their email address (optional).")
        parser.add_argument(
            "--reviewer", action="store_true", help="Also let them read the whole question history in /admin/."
        )
        parser.add_argument(
            "--noinput",
            "--no-input",
            action="store_false",
            dest="interactive",
            help="Do not ask for a password: generate one and print it once.",
        )

    def handle(self, username: str, email: str, reviewer: bool, interactive: bool, **options: Any) -> None:
        User = get_user_model()
        if User.objects.filter(username=username).exists():
            raise CommandError(f"A user {username!r} already exists; 'manage.py changepassword {username}' resets it.")
        user = User(username=username, email=email, is_staff=reviewer)
        asked = interactive and sys.stdin.isatty()
        password = self.ask_password(user) if asked else secrets.token_urlsafe(12)
        user.set_password(password)
        user.save()
        if reviewer:
            user.groups.add(Group.objects.get(name=REVIEWERS))
        role = "a reviewer of the question history" if reviewer else "answers in the Control UI"
        self.stdout.write(f"User {username!r} added ({role}).")
        if not asked:
            self.stdout.write(f"Their password (shown only now):\n\n    {password}\n")
        self.stdout.write(f"Next: manage.py createagent NAME --owner {username}")

    def ask_password(self, user: User) -> str:
        while True:
            password = getpass.getpass("Password: ")
            if password != getpass.getpass("Password (again): "):
                self.stderr.write("The two passwords differ; try again.")
                continue
            try:
                validate_password(password, user)
            except ValidationError as refused:
                self.stderr.write(" ".join(refused.messages))
                continue
            return password
