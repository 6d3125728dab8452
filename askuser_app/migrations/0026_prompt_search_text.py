"""Staff's search reads one column of the prompt (``Prompt.search_text``), not five of four tables.

Every prompt already asked gets its text here, from its session key, its
questions, their options and its free-text answers (``fill_search_text``, the
same lines the service writes for a new prompt). On PostgreSQL one trigram
index of that column replaces the four of migration 0009 on questions,
options and answers (the session key's stays: the sessions' and runs' lists
search it).
"""

from django.db import migrations, models

# Each prompt's lines in the order the service writes them: the session key, each
# question's header, text and option labels, then each free-text answer.
LINES = """
    SELECT 0 AS part, 0 AS question, 0 AS item, key AS line FROM askuser_app_session
    WHERE id = askuser_app_prompt.session_id
    UNION ALL SELECT 1, position, 0, header_full FROM askuser_app_question WHERE prompt_id = askuser_app_prompt.id
    UNION ALL SELECT 1, position, 1, text FROM askuser_app_question WHERE prompt_id = askuser_app_prompt.id
    UNION ALL SELECT 1, q.position, 2 + o.position, o.label
    FROM askuser_app_option o JOIN askuser_app_question q ON q.id = o.question_id
    WHERE q.prompt_id = askuser_app_prompt.id
    UNION ALL SELECT 2, q.position, 0, a.free_text
    FROM askuser_app_answer a JOIN askuser_app_question q ON q.id = a.question_id
    WHERE q.prompt_id = askuser_app_prompt.id AND a.free_text <> ''
"""
FILL = {
    "postgresql": f"UPDATE askuser_app_prompt SET search_text = (SELECT string_agg(line, chr(10) "
    f"ORDER BY part, question, item) FROM ({LINES}) lines) WHERE {{where}}",
    # SQLite's group_concat keeps the order of an ordered subquery.
    "sqlite": f"UPDATE askuser_app_prompt SET search_text = (SELECT group_concat(line, char(10)) "
    f"FROM ({LINES} ORDER BY part, question, item)) WHERE {{where}}",
}

# (index, table, column) of migration 0009 that the one on search_text replaces.
REPLACED = [
    ("question_text_trgm_idx", "askuser_app_question", "text"),
    ("question_header_trgm_idx", "askuser_app_question", "header_full"),
    ("option_label_trgm_idx", "askuser_app_option", "label"),
    ("answer_free_text_trgm_idx", "askuser_app_answer", "free_text"),
]
INDEX = "prompt_search_trgm_idx"


def fill_search_text(connection, where: str = "TRUE", params: dict | None = None) -> None:
    """Write ``search_text`` of the prompts ``where`` selects from their rows (bench/history.py fills its
    history with this too)."""
    with connection.cursor() as cursor:
        cursor.execute(FILL[connection.vendor].format(where=where), params)


def forwards(apps, schema_editor) -> None:
    connection = schema_editor.connection
    fill_search_text(connection, "1 = 1")
    if connection.vendor == "postgresql":
        for name, _, _ in REPLACED:
            schema_editor.execute(f"DROP INDEX IF EXISTS {name}")
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON askuser_app_prompt USING gin (UPPER(search_text) gin_trgm_ops)"
        )


def backwards(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")
        for name, table, column in REPLACED:
            schema_editor.execute(
                f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin (UPPER({column}) gin_trgm_ops)"
            )


class Migration(migrations.Migration):
    dependencies = [
        ("askuser_app", "0025_delivery_due_indexes_as_equalities"),
    ]

    operations = [
        migrations.AddField(
            model_name="prompt",
            name="search_text",
            field=models.TextField(
                blank=True,
                editable=False,
                help_text=(
                    "The session key, each question's header, text and option labels, then each free-text answer,"
                    " a line each."
                ),
            ),
        ),
        migrations.RunPython(forwards, backwards, elidable=False),
    ]
