from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("askuser_app", "0021_delivery_news_bound"),
    ]

    operations = [
        migrations.AddField(
            model_name="preferences",
            name="push_grace",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
