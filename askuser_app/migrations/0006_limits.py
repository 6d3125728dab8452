from urllib.parse import urlsplit

from django.db import migrations, models


def name_hosts_of_pending_deliveries(apps, schema_editor):
    """Deliveries still to send share out and back off by host like new ones."""
    WebhookDelivery = apps.get_model("askuser_app", "WebhookDelivery")
    for delivery in WebhookDelivery.objects.filter(status="pending", host=""):
        parts = urlsplit(delivery.url)
        try:
            delivery.host = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
        except ValueError:  # a port such as "+80": never sent to (``addresses.UNUSABLE_HOST``)
            delivery.host = "unusable"
        delivery.save(update_fields=["host"])


class Migration(migrations.Migration):
    dependencies = [
        ("askuser_app", "0005_admin_indexes"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="message",
            index=models.Index(fields=["agent", "created_at"], name="message_agent_created_idx"),
        ),
        migrations.CreateModel(
            name="WebhookHost",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("host", models.CharField(max_length=300, unique=True)),
                (
                    "timeouts",
                    models.PositiveIntegerField(default=0, help_text="Attempts in a row that got no answer in time."),
                ),
                ("paused_until", models.DateTimeField(blank=True, null=True)),
            ],
        ),
        migrations.AddField(
            model_name="webhookdelivery",
            name="host",
            field=models.CharField(blank=True, editable=False, max_length=300),
        ),
        migrations.AddIndex(
            model_name="webhookdelivery",
            index=models.Index(
                condition=models.Q(("status", "pending")),
                fields=["host", "next_attempt_at"],
                name="webhook_host_due_idx",
            ),
        ),
        migrations.RunPython(name_hosts_of_pending_deliveries, migrations.RunPython.noop),
    ]
