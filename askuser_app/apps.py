"""The app's configuration: the parts put together when the app is ready (``domain.effects`` installed,
the delivery engine's kinds registered, the notifiers' data prepared).

Imports inside ``ready`` are the ones Django asks for (models and what imports
them are loaded only once the app registry is ready), not a cycle dodged.
"""

from __future__ import annotations

from django.apps import AppConfig, apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.signals import setting_changed
from django.db.backends.signals import connection_created
from django.db.models.signals import post_delete, post_save


class AskuserAppConfig(AppConfig):
    name = "askuser_app"
    verbose_name = "askuser"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from askuser_app.delivery import channels, engine, messages, webhooks
        from askuser_app.domain import effects, wording
        from askuser_app.runtime.datadir import prepare, protect_sqlite_files
        from askuser_app.server import effects as assembled
        from askuser_app.staff import admin  # noqa: F401  # registers the history with Django admin

        # The kinds of row the delivery engine sends.
        engine.register(webhooks.KIND, messages.KIND)

        # What follows every change of ``services``: declared in ``domain.effects``, done by the
        # assembled server's one implementation.
        effects.install(assembled.Assembled())

        # Before any database connection: the SQLite file goes in the data folder, and what
        # each notifier keeps there (Web Push's key).
        prepare(settings.DATA_DIR)
        channels.when_ready()
        connection_created.connect(protect_sqlite_files, dispatch_uid="askuser-protect-sqlite-files")

        # Each channel folder's words for where a prompt was resolved ("by email"): the domain's
        # table holds them without importing delivery.
        wording.add_surfaces(channels.surfaces())

        for changed in (post_save, post_delete):
            # Whom the notifiers reach (an address, a choice, a device) is kept between creates:
            # read again when a user, or a model a notifier's folder watches, changes.
            for sender in (get_user_model(), *map(apps.get_model, channels.watched())):
                changed.connect(
                    messages.recipients_changed,
                    sender=sender,
                    dispatch_uid=f"askuser-recipients-{sender.__name__}-{changed is post_save}",
                )
        setting_changed.connect(messages.setting_changed, dispatch_uid="askuser-recipients-settings")
