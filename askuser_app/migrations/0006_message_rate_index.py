from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("askuser_app", "0005_admin_indexes"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="message",
            index=models.Index(fields=["agent", "created_at"], name="message_agent_created_idx"),
        ),
    ]
