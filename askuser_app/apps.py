from django.apps import AppConfig


class AskuserAppConfig(AppConfig):
    name = "askuser_app"
    verbose_name = "askuser"
    default_auto_field = "django.db.models.BigAutoField"
