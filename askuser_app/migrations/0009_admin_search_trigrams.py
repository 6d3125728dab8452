"""Trigram indexes for the admin's search, on PostgreSQL only.

The admin searches for a word anywhere in a session key, a question's text or
header, an option label or a free-text answer (``icontains``: a case-blind
substring, the same on every database). On PostgreSQL, Django writes that as
``UPPER(column::text) LIKE UPPER('%word%')``, which a GIN index of the same
expression with ``gin_trgm_ops`` answers without reading every row. SQLite
keeps its plain scan: nothing here runs there.
"""

from django.db import migrations

# (index, table, column): each indexes UPPER(column), the expression icontains compares.
INDEXES = [
    ("session_key_trgm_idx", "askuser_app_session", "key"),
    ("question_text_trgm_idx", "askuser_app_question", "text"),
    ("question_header_trgm_idx", "askuser_app_question", "header_full"),
    ("option_label_trgm_idx", "askuser_app_option", "label"),
    ("answer_free_text_trgm_idx", "askuser_app_answer", "free_text"),
]


def create_indexes(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    # pg_trgm is a trusted extension (PostgreSQL 13+): the database's owner may create it.
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, table, column in INDEXES:
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin (UPPER({column}) gin_trgm_ops)")


def drop_indexes(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, _, _ in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("askuser_app", "0008_session_title"),
    ]

    operations = [
        migrations.RunPython(create_indexes, drop_indexes, elidable=False),
    ]
