"""A host's pause belongs to one owner (``DeliveryHost.owner``), and a message whose send may have
happened when its prompt resolved is ``maybe_sent``. Pauses are short-lived: those stored for
everyone are forgotten, and each owner's own build up again from their next timeouts."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def forget_shared_pauses(apps, schema_editor):
    apps.get_model("askuser_app", "DeliveryHost").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("askuser_app", "0015_agent_news"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(forget_shared_pauses, migrations.RunPython.noop),
        migrations.AlterField(model_name="deliveryhost", name="host", field=models.CharField(max_length=300)),
        migrations.AddField(
            model_name="deliveryhost",
            name="owner",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to=settings.AUTH_USER_MODEL
            ),
            preserve_default=False,
        ),
        migrations.AddConstraint(
            model_name="deliveryhost",
            constraint=models.UniqueConstraint(fields=("owner", "host"), name="one_pause_per_owner_and_host"),
        ),
        migrations.AlterField(
            model_name="delivery",
            name="state",
            field=models.CharField(
                choices=[
                    ("to_send", "To Send"),
                    ("sent", "Sent"),
                    ("to_edit", "To Edit"),
                    ("closed", "Closed"),
                    ("failed", "Failed"),
                    ("dropped", "Dropped"),
                    ("maybe_sent", "Maybe Sent"),
                ],
                default="to_send",
                max_length=10,
            ),
        ),
    ]
