from __future__ import annotations

from django.apps import AppConfig
from django.contrib.auth import get_user_model
from django.core.signals import setting_changed
from django.db.backends.signals import connection_created
from django.db.models.signals import post_delete, post_save


class AskuserAppConfig(AppConfig):
    name = "askuser_app"
    verbose_name = "askuser"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import i18n
        from .chat import outbox
        from .datadir import protect_sqlite_files
        from .models import Preferences, PushSubscription

        connection_created.connect(protect_sqlite_files, dispatch_uid="askuser-protect-sqlite-files")
        for changed in (post_save, post_delete):
            changed.connect(i18n.forget, sender=Preferences, dispatch_uid=f"askuser-language-{changed is post_save}")
            # Whom the notifiers reach (an address, a choice, a device) is kept between creates.
            for sender in (get_user_model(), Preferences, PushSubscription):
                changed.connect(
                    outbox.recipients_changed,
                    sender=sender,
                    dispatch_uid=f"askuser-recipients-{sender.__name__}-{changed is post_save}",
                )
        setting_changed.connect(outbox.setting_changed, dispatch_uid="askuser-recipients-settings")
