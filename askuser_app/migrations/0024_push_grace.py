from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("askuser_app", "0023_session_mute"),
    ]

    operations = [
        migrations.AddField(
            model_name="preferences",
            name="push_grace",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
