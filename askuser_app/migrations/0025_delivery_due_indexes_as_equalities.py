"""The delivery engine's due indexes, conditioned on equalities its reads repeat (models.LIVE_DELIVERY).

Their condition was ``state IN ('to_send', 'to_edit', 'maybe_sent')``; Django
binds a query's IN values as parameters, and SQLite then used none of them
(it matches a bound value only with an equality's literal). The same states,
as an OR of equalities in the same order as the engine's reads.
"""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('askuser_app', '0024_push_grace'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='delivery',
            name='delivery_due_idx',
        ),
        migrations.RemoveIndex(
            model_name='delivery',
            name='delivery_owner_due_idx',
        ),
        migrations.RemoveIndex(
            model_name='delivery',
            name='delivery_owner_host_due_idx',
        ),
        migrations.AddIndex(
            model_name='delivery',
            index=models.Index(condition=models.Q(('state', 'to_send'), ('state', 'to_edit'), ('state', 'maybe_sent'), _connector='OR'), fields=['next_attempt_at'], name='delivery_due_idx'),
        ),
        migrations.AddIndex(
            model_name='delivery',
            index=models.Index(condition=models.Q(('state', 'to_send'), ('state', 'to_edit'), ('state', 'maybe_sent'), _connector='OR'), fields=['owner', 'next_attempt_at'], name='delivery_owner_due_idx'),
        ),
        migrations.AddIndex(
            model_name='delivery',
            index=models.Index(condition=models.Q(('state', 'to_send'), ('state', 'to_edit'), ('state', 'maybe_sent'), _connector='OR'), fields=['owner', 'host', 'next_attempt_at'], name='delivery_owner_host_due_idx'),
        ),
    ]
