"""One delivery engine: the chat outbox's rows become ``Delivery`` (``chat_id`` → ``address``: they
also hold email addresses, push devices and interaction tokens), their tries ``DeliveryAttempt``,
and ``WebhookHost`` becomes ``DeliveryHost`` (any kind's host backs off there). Every row now
names its owner and its host, which the engine shares attempts out by.

Renames keep every row; the view permissions the Reviewers group holds are renamed with their
models, so the group keeps reading the history. The owner is required once it is filled in.
"""

from urllib.parse import urlsplit

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import OuterRef, Subquery

RENAMED = [("chatmessage", "delivery"), ("chatattempt", "deliveryattempt"), ("webhookhost", "deliveryhost")]
NAMES = {
    "chatmessage": "chat message",
    "delivery": "delivery",
    "chatattempt": "chat attempt",
    "deliveryattempt": "delivery attempt",
    "webhookhost": "webhook host",
    "deliveryhost": "delivery host",
}
ACTIONS = ("add", "change", "delete", "view")


def _rename_permissions(apps, pairs):
    Permission = apps.get_model("auth", "Permission")
    for old, new in pairs:
        for action in ACTIONS:
            Permission.objects.filter(content_type__app_label="askuser_app", codename=f"{action}_{old}").update(
                codename=f"{action}_{new}", name=f"Can {action} {NAMES[new]}"
            )


def permissions_follow(apps, schema_editor):
    _rename_permissions(apps, RENAMED)


def permissions_go_back(apps, schema_editor):
    _rename_permissions(apps, [(new, old) for old, new in RENAMED])


def _push_host(endpoint):
    # As the push adapter names a push service's host (``notifiers/push/adapter.host_of``).
    parts = urlsplit(endpoint)
    try:
        return f"{parts.hostname}:{parts.port or 443}"
    except ValueError:  # a port such as "+443": never pushed to (``addresses.UNUSABLE_HOST``)
        return "unusable"


def owners_and_hosts(apps, schema_editor):
    Prompt = apps.get_model("askuser_app", "Prompt")
    Delivery = apps.get_model("askuser_app", "Delivery")
    WebhookDelivery = apps.get_model("askuser_app", "WebhookDelivery")
    PushSubscription = apps.get_model("askuser_app", "PushSubscription")
    owner = Subquery(Prompt.objects.filter(pk=OuterRef("prompt_id")).values("session__owner_id")[:1])
    Delivery.objects.update(owner_id=owner, host=models.F("channel"))
    WebhookDelivery.objects.update(owner_id=owner)
    live_pushes = Delivery.objects.filter(channel="push", state__in=["to_send", "to_edit"])
    endpoints = dict(PushSubscription.objects.values_list("pk", "endpoint"))
    for row in live_pushes.only("pk", "address"):
        endpoint = endpoints.get(int(row.address)) if row.address.isdigit() else None
        if endpoint:
            Delivery.objects.filter(pk=row.pk).update(host=_push_host(endpoint))
    if schema_editor.connection.vendor == "postgresql":
        # Check the new foreign keys now: PostgreSQL alters no table with checks still pending.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [
        ("askuser_app", "0013_hooks"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.RenameModel("ChatMessage", "Delivery"),
        migrations.RenameModel("ChatAttempt", "DeliveryAttempt"),
        migrations.RenameModel("WebhookHost", "DeliveryHost"),
        migrations.RenameField("delivery", "chat_id", "address"),
        migrations.RenameField("deliveryattempt", "message", "delivery"),
        migrations.RenameIndex("delivery", new_name="delivery_due_idx", old_name="chat_message_due_idx"),
        migrations.AlterModelOptions(
            name="delivery", options={"ordering": ["-created_at", "-id"], "verbose_name_plural": "deliveries"}
        ),
        migrations.AlterModelOptions(name="deliveryattempt", options={"ordering": ["delivery", "started_at", "id"]}),
        migrations.AlterField(
            model_name="delivery",
            name="prompt",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="deliveries", to="askuser_app.prompt"
            ),
        ),
        migrations.AlterField(
            model_name="delivery",
            name="link",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="deliveries",
                to="askuser_app.chatlink",
            ),
        ),
        migrations.AlterField(
            model_name="deliveryattempt",
            name="action",
            field=models.CharField(
                choices=[("send", "Send"), ("edit", "Edit"), ("notice", "Notice")], max_length=6
            ),
        ),
        migrations.AddField(
            model_name="delivery",
            name="owner",
            field=models.ForeignKey(
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="delivery",
            name="host",
            field=models.CharField(blank=True, editable=False, max_length=300),
        ),
        migrations.AddField(
            model_name="delivery",
            name="notice",
            field=models.TextField(blank=True, help_text="A one-off text sent instead of the prompt's card."),
        ),
        migrations.AddField(
            model_name="webhookdelivery",
            name="owner",
            field=models.ForeignKey(
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddIndex(
            model_name="delivery",
            index=models.Index(
                condition=models.Q(("state__in", ["to_send", "to_edit"])),
                fields=["owner", "next_attempt_at"],
                name="delivery_owner_due_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="webhookdelivery",
            index=models.Index(
                condition=models.Q(("status", "pending")),
                fields=["owner", "next_attempt_at"],
                name="webhook_owner_due_idx",
            ),
        ),
        migrations.RunPython(owners_and_hosts, migrations.RunPython.noop),
        *[
            migrations.AlterField(
                model_name=model,
                name="owner",
                field=models.ForeignKey(
                    editable=False,
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="+",
                    to=settings.AUTH_USER_MODEL,
                ),
            )
            for model in ("delivery", "webhookdelivery")
        ],
        migrations.RunPython(permissions_follow, permissions_go_back),
    ]
