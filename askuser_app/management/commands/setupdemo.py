"""``manage.py setupdemo``: the demo login and agent token that ``make run`` prints."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from askuser_app import services
from askuser_app.agentauth import hash_token
from askuser_app.models import Agent, Session

DEMO_USER = "demo"
DEMO_PASSWORD = "demo"
DEMO_AGENT = "demo"
DEMO_SESSION = "demo"
WELCOME = (
    "Hi! I'm the demo agent. When I need a decision from you, my question appears right here, "
    "above the message box. Try the README's curl example to see it."
)


class Command(BaseCommand):
    help = "Create (once) the demo user and demo agent, and print how to use them."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="Where the server will listen.")

    def handle(self, url: str, **options) -> None:
        user = self.demo_user()
        token = self.demo_token(user)
        self.welcome(user)
        self.stdout.write(
            f"\naskuser is starting on {url}/\n"
            f"  Log in as:         {DEMO_USER} / {DEMO_PASSWORD}   (staff: {url}/admin/)\n"
            f"  Demo agent token:  {token}\n"
            f"                     (also in {self.token_path()}; export ASKUSER_TOKEN=$(cat {self.token_path()}))\n"
            f"  Demo agent:        .venv/bin/python manage.py demo_agent   (in a second terminal)\n"
        )

    def demo_user(self):
        User = get_user_model()
        user, created = User.objects.get_or_create(
            username=DEMO_USER, defaults={"is_staff": True, "is_superuser": True, "email": "demo@example.com"}
        )
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save(update_fields=["password"])
        return user

    def welcome(self, user) -> None:
        """A first message in the demo session, so there is a page to open."""
        if Session.objects.filter(owner=user, key=DEMO_SESSION).exists():
            return
        agent = Agent.objects.filter(owner=user, name=DEMO_AGENT, revoked_at=None).first()
        services.post_agent_message(agent, DEMO_SESSION, WELCOME)

    def token_path(self):
        return settings.DATA_DIR / "demo-agent-token"

    def demo_token(self, user) -> str:
        """The saved demo token while it still works, else a new one."""
        path = self.token_path()
        if path.exists():
            token = path.read_text().strip()
            if Agent.objects.filter(token_hash=hash_token(token), owner=user, revoked_at=None).exists():
                return token
        _, token = services.create_agent(DEMO_AGENT, user)
        path.write_text(token + "\n")
        path.chmod(0o600)
        return token
