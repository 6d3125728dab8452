from __future__ import annotations

from django.apps import AppConfig
from django.db.backends.signals import connection_created


class AskuserAppConfig(AppConfig):
    name = "askuser_app"
    verbose_name = "askuser"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from .datadir import protect_sqlite_files

        connection_created.connect(protect_sqlite_files, dispatch_uid="askuser-protect-sqlite-files")
