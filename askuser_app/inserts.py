"""One INSERT for new rows of one model, with its SQL built once.

Django compiles an INSERT afresh for every ``save()`` and ``bulk_create()``;
on the create path that cost more CPU than the database's own work. The
services insert a prompt's rows through here instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Field, Model
from django.db.models.constants import OnConflict

# Per (model, row count, conflicts ignored): the INSERT's SQL, the fields it writes and those it returns.
_shapes: dict[tuple[type[Model], int, bool], tuple[str, list[Field[Any, Any]], list[Field[Any, Any]]]] = {}


def insert_rows(objs: Sequence[Model], *, ignore_conflicts: bool = False) -> int:
    """Insert new rows of one model in one statement, as ``bulk_create`` does.

    Django compiles an INSERT afresh for every call, and on the create path
    that costs more than the database's work; here the statement is built once
    per model and row count. Values still go through each field's
    ``pre_save`` and ``get_db_prep_save``, and the auto primary key is read
    back (RETURNING). Nothing else differs: no model here has save signals.

    With ``ignore_conflicts`` a row that would break a unique constraint is
    not inserted; returns how many rows were, which then needs a returned
    primary key to count (a single new row of a model with an auto key).
    """
    if not objs:
        return 0
    db = connections[DEFAULT_DB_ALIAS]
    model = type(objs[0])
    key = (model, len(objs), ignore_conflicts)
    shape = _shapes.get(key)
    if shape is None:
        meta, ops = model._meta, db.ops
        returning = list(meta.db_returning_fields)
        fields = [f for f in meta.concrete_fields if f not in returning]
        assert not ignore_conflicts or (returning and len(objs) == 1)
        on_conflict = OnConflict.IGNORE if ignore_conflicts else None
        row = "(" + ", ".join(["%s"] * len(fields)) + ")"
        sql = " ".join(
            part
            for part in (
                ops.insert_statement(on_conflict=on_conflict),
                ops.quote_name(meta.db_table),
                f"({', '.join(ops.quote_name(f.column) for f in fields)})",
                f"VALUES {', '.join([row] * len(objs))}",
                ops.on_conflict_suffix_sql(fields, on_conflict, None, None),
                ops.return_insert_columns(returning)[0],
            )
            if part
        )
        shape = _shapes[key] = sql, fields, returning
    sql, fields, returning = shape
    params = [f.get_db_prep_save(f.pre_save(obj, True), db) for obj in objs for f in fields]
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall() if returning else [()] * len(objs)
    for obj, values in zip(objs, rows, strict=False):
        for field, value in zip(returning, values, strict=True):
            setattr(obj, field.attname, value)
        obj._state.adding, obj._state.db = False, db.alias
    return len(rows)
