"""The "Reviewers" group: staff in it may read the whole question history in the admin, and nothing more."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

REVIEWERS = "Reviewers"


def create_reviewers(apps, schema_editor):
    # Django makes permissions after all migrations ran; the group needs them now.
    create_permissions(global_apps.get_app_config("askuser_app"), verbosity=0, apps=apps)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=REVIEWERS)
    views = Permission.objects.filter(content_type__app_label="askuser_app", codename__startswith="view_")
    group.permissions.add(*views)


def remove_reviewers(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=REVIEWERS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("askuser_app", "0006_limits"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_reviewers, remove_reviewers)]
