"""The app's configuration: where the parts are connected to the signals they act on.

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
        from askuser_app.delivery import engine, messages, notifiers, webhooks
        from askuser_app.domain import signals, wording
        from askuser_app.runtime import metrics, realtime
        from askuser_app.runtime.datadir import prepare, protect_sqlite_files
        from askuser_app.staff import admin  # noqa: F401  # registers the history with Django admin

        # The kinds of row the delivery engine sends.
        engine.register(webhooks.KIND, messages.KIND)

        # What a change sets off, in this order: the live pages and waits hear of it
        # after commit; the webhook and the messages' deliveries are written with it.
        for signal, receivers in (
            (signals.prompt_created, [realtime.on_prompt_created, messages.on_prompt_created]),
            (
                signals.prompt_resolved,
                [
                    realtime.on_prompt_resolved,
                    webhooks.on_prompt_resolved,
                    messages.on_prompt_resolved,
                    metrics.on_prompt_resolved,
                ],
            ),
            (signals.prompt_extended, [realtime.on_prompt_extended]),
            (signals.message_created, [realtime.on_message_created]),
            (signals.agent_news, [messages.on_agent_news]),
        ):
            for receiver in receivers:
                signal.connect(receiver, dispatch_uid=f"askuser-{receiver.__module__}.{receiver.__name__}")

        # Before any database connection: the SQLite file goes in the data folder, and what
        # each notifier keeps there (Web Push's key).
        prepare(settings.DATA_DIR)
        notifiers.when_ready()
        connection_created.connect(protect_sqlite_files, dispatch_uid="askuser-protect-sqlite-files")

        # Each notifier folder's words for where a prompt was resolved ("by email"): the domain's
        # table holds them without importing delivery.
        wording.add_surfaces(notifiers.surfaces())

        for changed in (post_save, post_delete):
            # Whom the notifiers reach (an address, a choice, a device) is kept between creates:
            # read again when a user, or a model a notifier's folder watches, changes.
            for sender in (get_user_model(), *map(apps.get_model, notifiers.watched())):
                changed.connect(
                    messages.recipients_changed,
                    sender=sender,
                    dispatch_uid=f"askuser-recipients-{sender.__name__}-{changed is post_save}",
                )
        setting_changed.connect(messages.setting_changed, dispatch_uid="askuser-recipients-settings")
