from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("askuser_app", "0018_prompt_hook_kind"),
    ]

    operations = [
        migrations.AddField(
            model_name="question",
            name="rule",
            field=models.JSONField(
                blank=True, default=dict, help_text="What its answer must be (an MCP form field's type and limits)."
            ),
        ),
    ]
