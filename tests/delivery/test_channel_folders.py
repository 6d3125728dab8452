"""A channel is one folder, ``askuser_app/delivery/channels/<name>/``, chat app or notifier alike:
the one registry, the app's urls, the template folders, the settings page, the words for where a
prompt was resolved and the configuration page all find it there
(``askuser_app/delivery/channels/__init__.py``).

The last test adds a throwaway channel, a folder outside the checkout put on the channels
package's path, and a fresh process finds it everywhere, as it would a folder added here."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.template.loader import get_template
from django.test import Client
from django.urls import resolve, reverse
from django.utils import translation

from askuser_app.delivery import channels, messages
from askuser_app.delivery.channels.base import Notifier
from askuser_app.domain import prefs, wording
from askuser_app.models import PushSubscription
from askuser_app.runtime import caching
from tests.conftest import payload

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ROOT / "askuser_app" / "delivery" / "channels"


def test_the_channels_are_the_folders_of_the_channels_package_that_declare_one():
    on_disk = {path.parent.name for path in FOLDERS.glob("*/__init__.py")}

    assert set(channels.names()) == on_disk - {"chats"}
    assert channels.names() == ("telegram", "slack", "discord", "email", "push")
    assert channels.chat_apps() == ("telegram", "slack", "discord")
    assert channels.notifiers() == ("email", "push")


def test_the_channel_list_is_each_folders_adapter_under_its_name_in_their_places():
    installed = channels.installed()

    assert list(installed) == ["telegram", "slack", "discord", "email", "push"]
    for name in channels.chat_apps():
        assert installed[name].name == name
        assert callable(installed[name].how_to_link) and callable(installed[name].urlpatterns)  # a ChatApp
    for name in channels.notifiers():
        assert installed[name].name == name
        assert isinstance(installed[name], Notifier)


def test_every_channel_has_one_label_its_surface_words_and_its_settings_declared():
    assert {name: channels.label_of(name) for name in channels.names()} == {
        "telegram": "Telegram",
        "slack": "Slack",
        "discord": "Discord",
        "email": "Email",
        "push": "Web Push",
    }
    assert wording.where("slack", wording.for_agent) == "on Slack"
    assert {"TELEGRAM_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_PUBLIC_KEY"} <= {
        name for folder in channels.folders().values() for name in folder.settings
    }


def test_the_settings_import_nothing_of_the_delivery_to_find_the_channels():
    text = (ROOT / "controlui" / "settings.py").read_text()

    assert not re.findall(r"^(?:from|import) askuser_app\.delivery", text, re.MULTILINE)


def test_each_folders_routes_are_served_from_the_sites_root():
    assert resolve("/chat/email/a-token/").url_name == "email_page"
    assert resolve("/settings/email/").url_name == "settings_email"
    assert resolve("/settings/push/subscribe").url_name == "push_subscribe"
    assert resolve("/sw.js").url_name == "service_worker"
    assert reverse("email_page", args=["a-token"]) == "/chat/email/a-token/"
    assert resolve("/chat/discord/interactions").url_name == "discord_interactions"
    assert resolve("/chat/telegram/webhook").url_name == "telegram_webhook"
    assert channels.url_modules() == [
        "askuser_app.delivery.channels.email.urls",
        "askuser_app.delivery.channels.push.urls",
    ]


def test_each_folders_templates_are_found_as_the_projects_own(settings):
    [engine] = settings.TEMPLATES
    assert "askuser_app.delivery.channels.loader.Loader" in str(engine["OPTIONS"]["loaders"])
    for name in channels.names():
        templates = FOLDERS / name / "templates"
        for path in (p for p in templates.rglob("*") if p.is_file()):
            found = get_template(str(path.relative_to(templates)))
            assert Path(found.origin.name) == path


def test_each_section_on_the_settings_page_is_a_template_and_a_view_of_its_folder():
    for name, folder in channels.folders().items():
        if folder.section is not None:
            assert (FOLDERS / name / "templates" / "askuser" / "settings" / f"{name}.html").is_file()
            assert callable(importlib.import_module(f"askuser_app.delivery.channels.{name}.views").section)


@pytest.mark.django_db
def test_the_settings_page_shows_the_notifiers_sections_in_their_order(owner):
    client = Client()
    client.force_login(owner)

    page = client.get("/settings/").content.decode()

    order = [page.index(f'id="{section}"') for section in ("notifications", "push-settings", "settings-email")]
    assert order == sorted(order)
    assert page.index('id="settings-email"') < page.index('id="settings-agents"')


def test_a_folders_surface_words_reach_the_domains_wording_in_either_language():
    assert channels.surfaces() == {
        "telegram": "on Telegram",
        "slack": "on Slack",
        "discord": "on Discord",
        "email": "by email",
        "push": "from a notification",
    }
    assert wording.where("email", wording.for_agent) == "by email"
    with translation.override("hi"):
        assert wording.where("email", wording.for_person) == "ईमेल से"
        assert wording.where("email", wording.for_agent) == "by email"


def test_the_settings_a_folder_declares_are_read_by_the_settings_and_on_the_configuration_page():
    read = set(re.findall(r'\benv_\w+\("([A-Z_]+)"', (ROOT / "controlui" / "settings.py").read_text()))
    page = (ROOT / "docs" / "CONFIGURATION.md").read_text()

    declared = {name for folder in channels.folders().values() for name in folder.settings}

    assert {"EMAIL_HOST", "ASKUSER_PUSH", "ASKUSER_MAX_PUSH_DEVICES"} <= declared
    assert declared - read == set()
    assert {name for name in declared if f"`{name}`" not in page} == set()


def generation() -> str | None:
    return caching.read(messages.GENERATION_KEY).get(messages.GENERATION_KEY)


@pytest.mark.django_db
def test_saving_a_model_a_folder_watches_renews_whom_the_notifiers_reach(owner):
    before = generation()

    prefs.choose_email_after(owner, 300)
    chosen = generation()
    PushSubscription.objects.create(user=owner, endpoint="https://push.example/1", p256dh="k", auth="a")

    assert channels.watched() == ["askuser_app.Preferences", "askuser_app.PushSubscription"]
    assert len({before, chosen, generation()}) == 3


def test_with_push_turned_off_its_adapter_is_installed_but_not_configured(settings):
    settings.ASKUSER_PUSH = False

    assert "push" in channels.installed()
    assert "push" not in channels.configured()


# --- a throwaway channel ----------------------------------------------------------------------------

PAGER = {
    "__init__.py": """
        from django.conf import settings
        from django.utils.translation import gettext_noop
        from askuser_app.delivery.channels import Folder

        def leave_a_mark():
            (settings.DATA_DIR / "pager-ready").write_text("ready")

        folder = Folder(
            settings=(),
            surface=gettext_noop("by pager"),
            section=3,
            watches=("askuser_app.Preferences",),
            when_ready=leave_a_mark,
        )
    """,
    "adapter.py": """
        from askuser_app.delivery.channels.base import Recipient

        class Pager:
            name = "pager"
            label = "Pager"

            def configured(self):
                return True

            def recipients(self, prompt):
                return [Recipient("pager-of-alice")]

            def reaches(self, owner_id):
                return []

            async def send(self, address, card):
                return {}

            async def edit(self, ref, closed):
                pass

            async def tell(self, address, news):
                pass

        adapter = Pager()
    """,
    "urls.py": """
        from django.urls import path
        from . import views

        urlpatterns = [path("settings/pager/", views.beep, name="pager_beep")]
    """,
    "views.py": """
        from django.http import HttpResponse

        def beep(request):
            return HttpResponse("beep")

        def section(request):
            return {"beeps": 3}
    """,
    "templates/askuser/settings/pager.html": """
        <section class="card" id="pager-settings">Pager: {{ pager.beeps }} beeps</section>
    """,
}

SEEN_BY_A_FRESH_PROCESS = """
    import json, sys
    from askuser_app.delivery import channels
    channels.__path__.append(sys.argv[1])

    import django
    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment
    from askuser_app.domain import contract, services, wording
    from askuser_app.models import Delivery

    setup_test_environment()
    call_command("migrate", verbosity=0)
    alice = get_user_model().objects.create(username="alice")
    client = Client()
    client.force_login(alice)
    page = client.get("/settings/").content.decode()
    shown = ("push-settings", "settings-email", "pager-settings", "settings-agents")
    sections = [page.index(f'id="{name}"') for name in shown]
    agent, _token = services.create_agent("deployer", alice)
    services.ask(agent, contract.parse_create(json.loads(sys.argv[2])))
    print(json.dumps({
        "names": channels.names(),
        "installed": list(channels.installed()),
        "configured": "pager" in channels.configured(),
        "label": channels.label_of("pager"),
        "route": client.get("/settings/pager/").content.decode(),
        "section": page[page.index('id="pager-settings"'):].split("</section>")[0],
        "in_order": sections == sorted(sections),
        "sent_to": list(Delivery.objects.filter(channel="pager").values_list("address", flat=True)),
        "words": wording.where("pager", wording.for_agent),
        "ready": (settings.DATA_DIR / "pager-ready").read_text(),
    }))
"""


def test_a_throwaway_channel_folder_is_found_by_a_fresh_process_everywhere(tmp_path):
    for name, text in PAGER.items():
        path = tmp_path / "channels" / "pager" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")}
    env.update(ASKUSER_DATA_DIR=str(tmp_path / "data"), DJANGO_SETTINGS_MODULE="controlui.settings")

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(SEEN_BY_A_FRESH_PROCESS),
            str(tmp_path / "channels"),
            json.dumps(payload()),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["names"] == ["telegram", "slack", "discord", "email", "pager", "push"]
    assert seen["installed"] == seen["names"]
    assert seen["label"] == "Pager"
    assert seen["configured"] is True
    assert seen["route"] == "beep"
    assert seen["section"] == 'id="pager-settings">Pager: 3 beeps'
    assert seen["in_order"] is True
    assert seen["sent_to"] == ["pager-of-alice"]
    assert seen["words"] == "by pager"
    assert seen["ready"] == "ready"
