"""A long question history made in seconds: ``fill`` writes it with
``INSERT … SELECT`` over a series of numbers (``generate_series`` on
PostgreSQL, a recursive ``WITH`` on SQLite; the ORM would take minutes for
100,000 prompts), and ``SEARCHES`` are what staff look for in it.

Every prompt has one or two questions with three options; most are answered,
one in seven with a free-text answer; the rest are expired or skipped. The
words come from small vocabularies, so a word matches a known share of rows.
"""

from __future__ import annotations

from importlib import import_module

from django.db import connection

# The migration's own statement writes the history's search_text (one for every prompt).
search_text = import_module("askuser_app.migrations.0026_prompt_search_text")

SESSIONS = 1000
# Searches of every kind the admin serves: a rare word, a common one, a session
# key, an option label, a free-text phrase, two words, one that matches nothing.
SEARCHES = ["harbor-41", "cluster", "fill-417", "eu-west-123", "release notes of 4242", "quartz migrate", "zzyzx-none"]
SERVICES = ["nimbus", "quartz", "harbor", "lumen", "cobalt", "vertex", "summit", "delta"]
ACTIONS = ["migrate", "deploy", "roll back", "restart", "scale", "archive"]
TARGETS = ["the new cluster", "staging first", "every region", "the old database", "a canary"]


def _array(words: list[str]) -> str:
    return "ARRAY[" + ", ".join(f"'{w}'" for w in words) + "]"


FILL = f"""
WITH s AS (
    INSERT INTO askuser_app_session (owner_id, key, title, agent_id, created_at)
    SELECT %(owner)s, 'fill-' || n, '', %(agent)s, now() - interval '91 days'
    FROM generate_series(1, {SESSIONS}) n
    RETURNING id, key
), r AS (
    INSERT INTO askuser_app_run (agent_id, run_id, session_id, kind, status, created_at)
    SELECT %(agent)s, 'run-' || s.key, s.id, 'main', 'active', now() - interval '91 days' FROM s
    RETURNING id, session_id
), numbered AS (
    SELECT r.id AS run_id, r.session_id, row_number() OVER (ORDER BY r.id) - 1 AS slot FROM r
), p AS (
    INSERT INTO askuser_app_prompt (
        id, agent_id, session_id, run_id, status, reason, created_at, timeout_seconds, expires_at,
        resolved_at, resolved_by_id, surface, warnings, result, idempotency_key, request_digest, callback_url,
        extended, hook_event, hook_kind, hook_tool_use, search_text
    )
    SELECT gen_random_uuid(), %(agent)s, numbered.session_id, numbered.run_id,
        CASE WHEN i %% 10 < 8 THEN 'answered' ELSE 'no_answer' END,
        CASE WHEN i %% 10 < 8 THEN '' WHEN i %% 10 = 8 THEN 'expired' ELSE 'skipped' END,
        now() - (i * interval '77 seconds'), 900, now() - (i * interval '77 seconds') + interval '900 seconds',
        now() - (i * interval '77 seconds') + interval '40 seconds',
        CASE WHEN i %% 10 = 8 THEN NULL ELSE %(owner)s END,
        CASE WHEN i %% 10 = 8 THEN '' ELSE 'web' END,
        '[]', '{{"status": "answered"}}', '', '', '', 0, '', '', '', ''
    FROM generate_series(1, %(count)s) i JOIN numbered ON numbered.slot = i %% {SESSIONS}
    RETURNING id, status, created_at
), q AS (
    INSERT INTO askuser_app_question (prompt_id, position, key, header, header_full, text, multi_select, detail, rule)
    SELECT p.id, k, 'q' || k, 'Step ' || k, 'Step ' || k || ' of rollout ' || (n %% 1000),
        'Should we ' || ({_array(ACTIONS)})[1 + (n + k) %% {len(ACTIONS)}]
        || ' ' || ({_array(SERVICES)})[1 + (n / 7 + k) %% {len(SERVICES)}] || '-' || (n %% 500)
        || ' to ' || ({_array(TARGETS)})[1 + (n / 3) %% {len(TARGETS)}] || '?',
        false, '', '{{}}'::jsonb
    FROM (SELECT p.*, row_number() OVER () AS n FROM p) p
    CROSS JOIN LATERAL generate_series(0, CASE WHEN p.n %% 4 = 0 THEN 1 ELSE 0 END) k
    RETURNING id, prompt_id
), o AS (
    INSERT INTO askuser_app_option (question_id, position, label, description)
    SELECT q.id, k, (ARRAY['Staging (Recommended)', 'Production', 'Canary in eu-west-' || q.id %% 300])[k + 1], ''
    FROM q CROSS JOIN generate_series(0, 2) k
)
INSERT INTO askuser_app_answer (question_id, "values", free_text, skipped)
SELECT q.id,
    CASE WHEN q.id %% 7 = 0 THEN jsonb_build_array('Wait for the release notes of ' || q.id)
        ELSE '["Production"]'::jsonb END,
    CASE WHEN q.id %% 7 = 0 THEN 'Wait for the release notes of ' || q.id ELSE '' END,
    false
FROM q JOIN p ON p.id = q.prompt_id WHERE p.status = 'answered'
"""


def _json(words: list[str]) -> str:
    return "'[" + ", ".join(f'"{w}"' for w in words) + "]'"


def _pick(words: list[str], index: str) -> str:
    return f"json_extract({_json(words)}, '$[' || (({index}) %% {len(words)}) || ']')"


# The same history on SQLite, statement by statement: the prompts' numbers first
# (``fill_prompt``), then each table from them, every word as on PostgreSQL.
SERIES = "WITH RECURSIVE series(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM series WHERE n < {count})"
AGO = "strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', {offset})"
SESSIONS_AGO = AGO.format(offset="'-91 days'")
PROMPT_AGO = AGO.format(offset="'-' || (n * 77) || ' seconds'")
FILL_SQLITE = [
    "CREATE TEMP TABLE fill_prompt (n integer PRIMARY KEY, id char(32), status text, created_at datetime)",
    SERIES.format(count=SESSIONS) + " INSERT INTO askuser_app_session (owner_id, key, title, agent_id, created_at)"
    f" SELECT %(owner)s, 'fill-' || n, '', %(agent)s, {SESSIONS_AGO} FROM series",
    "INSERT INTO askuser_app_run (agent_id, run_id, session_id, kind, status, created_at)"
    " SELECT %(agent)s, 'run-' || key, id, 'main', 'active', created_at FROM askuser_app_session"
    " WHERE owner_id = %(owner)s AND key LIKE 'fill-%%'",
    SERIES.format(count="%(count)s") + " INSERT INTO fill_prompt SELECT n, lower(hex(randomblob(16))),"
    " CASE WHEN n %% 10 < 8 THEN 'answered' ELSE 'no_answer' END,"
    f" {PROMPT_AGO} FROM series",
    """INSERT INTO askuser_app_prompt (
        id, agent_id, session_id, run_id, status, reason, created_at, timeout_seconds, expires_at,
        resolved_at, resolved_by_id, surface, warnings, result, idempotency_key, request_digest, callback_url,
        extended, hook_event, hook_kind, hook_tool_use, search_text
    )
    SELECT p.id, %(agent)s, s.id, r.id, p.status,
        CASE WHEN p.n %% 10 < 8 THEN '' WHEN p.n %% 10 = 8 THEN 'expired' ELSE 'skipped' END,
        p.created_at, 900, strftime('%%Y-%%m-%%d %%H:%%M:%%f', p.created_at, '+900 seconds'),
        strftime('%%Y-%%m-%%d %%H:%%M:%%f', p.created_at, '+40 seconds'),
        CASE WHEN p.n %% 10 = 8 THEN NULL ELSE %(owner)s END,
        CASE WHEN p.n %% 10 = 8 THEN '' ELSE 'web' END,
        '[]', '{"status": "answered"}', '', '', '', 0, '', '', '', ''
    FROM fill_prompt p
    JOIN askuser_app_session s ON s.owner_id = %(owner)s AND s.key = 'fill-' || (p.n %% """
    + str(SESSIONS)
    + """ + 1)
    JOIN askuser_app_run r ON r.session_id = s.id""",
    f"""INSERT INTO askuser_app_question (
        prompt_id, position, key, header, header_full, text, multi_select, detail, rule
    )
    SELECT p.id, k.k, 'q' || k.k, 'Step ' || k.k, 'Step ' || k.k || ' of rollout ' || (p.n %% 1000),
        'Should we ' || {_pick(ACTIONS, "p.n + k.k")} || ' ' || {_pick(SERVICES, "p.n / 7 + k.k")}
        || '-' || (p.n %% 500) || ' to ' || {_pick(TARGETS, "p.n / 3")} || '?',
        0, '', '{{}}'
    FROM fill_prompt p JOIN (SELECT 0 AS k UNION ALL SELECT 1) k ON k.k = 0 OR p.n %% 4 = 0
    ORDER BY p.n, k.k""",
    """INSERT INTO askuser_app_option (question_id, position, label, description)
    SELECT q.id, k.k, CASE k.k WHEN 0 THEN 'Staging (Recommended)' WHEN 1 THEN 'Production'
        ELSE 'Canary in eu-west-' || (q.id %% 300) END, ''
    FROM askuser_app_question q JOIN fill_prompt p ON p.id = q.prompt_id
    CROSS JOIN (SELECT 0 AS k UNION ALL SELECT 1 UNION ALL SELECT 2) k""",
    """INSERT INTO askuser_app_answer (question_id, "values", free_text, skipped)
    SELECT q.id,
        CASE WHEN q.id %% 7 = 0 THEN json_array('Wait for the release notes of ' || q.id) ELSE '["Production"]' END,
        CASE WHEN q.id %% 7 = 0 THEN 'Wait for the release notes of ' || q.id ELSE '' END,
        0
    FROM askuser_app_question q JOIN fill_prompt p ON p.id = q.prompt_id WHERE p.status = 'answered'""",
    "DROP TABLE fill_prompt",
]


def fill(owner_id: int, agent_id: int, count: int) -> None:
    """``count`` resolved prompts for the agent, over ``SESSIONS`` sessions of the owner,
    with their ``search_text`` as the migration that added it writes it."""
    params = {"owner": owner_id, "agent": agent_id, "count": count}
    mine = "agent_id = %(agent)s"
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            for statement in FILL_SQLITE:
                cursor.execute(statement, params)
            cursor.execute("ANALYZE")
            search_text.fill_search_text(connection, mine, params)
            return
        cursor.execute(FILL, params)
        cursor.execute("ANALYZE")  # the rows just added known: each prompt's are read through their indexes
        search_text.fill_search_text(connection, mine, params)
        # What autovacuum would do next: merge the rows just added into the
        # GIN indexes, drop the prompts' versions before their search_text and
        # count them, so that searches meet a settled history.
        cursor.execute(
            "SELECT gin_clean_pending_list(indexrelid) FROM pg_index JOIN pg_class ON oid = indexrelid"
            " WHERE relname LIKE '%%_trgm_idx'"
        )
        cursor.execute("VACUUM ANALYZE")


CLEAR = [
    "DELETE FROM askuser_app_answer WHERE question_id IN (SELECT q.id FROM askuser_app_question q {mine})",
    "DELETE FROM askuser_app_option WHERE question_id IN (SELECT q.id FROM askuser_app_question q {mine})",
    "DELETE FROM askuser_app_question WHERE id IN (SELECT q.id FROM askuser_app_question q {mine})",
    "DELETE FROM askuser_app_promptevent WHERE prompt_id IN ({prompts})",
    "DELETE FROM askuser_app_prompt WHERE agent_id IN {agents}",
    "DELETE FROM askuser_app_run WHERE agent_id IN {agents}",
    "DELETE FROM askuser_app_session WHERE owner_id = %(owner)s",
    "DELETE FROM askuser_app_agent WHERE owner_id = %(owner)s",
    "DELETE FROM auth_user WHERE id = %(owner)s",
]


def clear(owner_id: int) -> None:
    """Remove what ``fill`` made for the owner, and the owner (children first:
    Django's foreign keys cascade in Python, not in the database)."""
    agents = "(SELECT id FROM askuser_app_agent WHERE owner_id = %(owner)s)"
    mine = f"JOIN askuser_app_prompt p ON p.id = q.prompt_id WHERE p.agent_id IN {agents}"
    prompts = f"SELECT id FROM askuser_app_prompt WHERE agent_id IN {agents}"
    with connection.cursor() as cursor:
        for statement in CLEAR:
            cursor.execute(statement.format(mine=mine, agents=agents, prompts=prompts), {"owner": owner_id})
