"""Shared model base and database-level guards used by every app's migrations."""

from __future__ import annotations

import uuid

from django.core.exceptions import ImproperlyConfigured
from django.db import migrations, models


class TimeStampedModel(models.Model):
    """UUID primary key plus creation and update times."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


def enum_check(field: str, choices: type[models.TextChoices], name: str) -> models.CheckConstraint:
    """A CheckConstraint restricting ``field`` to the values of ``choices``."""
    return models.CheckConstraint(condition=models.Q(**{f"{field}__in": choices.values}), name=name)


# --- Append-only tables ------------------------------------------------------
# The scratchpad, the decision log and dossier snapshots refuse UPDATE and DELETE
# in the database itself, so neither the ORM, the admin nor raw SQL can rewrite
# history. (Row triggers do not fire on PostgreSQL TRUNCATE; that is a DDL-level
# operation reserved to the database owner, the same person who could drop the trigger.)

PG_FUNCTION = """
CREATE OR REPLACE FUNCTION novelgraph_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'append-only: % refuses %', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
"""


def append_only_sql(vendor: str, table: str) -> list[str]:
    if vendor == "postgresql":
        return [
            PG_FUNCTION,
            f'DROP TRIGGER IF EXISTS "{table}_append_only" ON "{table}";',
            f'CREATE TRIGGER "{table}_append_only" BEFORE UPDATE OR DELETE ON "{table}" '
            f"FOR EACH ROW EXECUTE FUNCTION novelgraph_refuse_change();",
        ]
    if vendor == "sqlite":
        return [
            f'CREATE TRIGGER IF NOT EXISTS "{table}_no_update" BEFORE UPDATE ON "{table}" '
            f"BEGIN SELECT RAISE(ABORT, 'append-only: {table} refuses UPDATE'); END;",
            f'CREATE TRIGGER IF NOT EXISTS "{table}_no_delete" BEFORE DELETE ON "{table}" '
            f"BEGIN SELECT RAISE(ABORT, 'append-only: {table} refuses DELETE'); END;",
        ]
    raise ImproperlyConfigured(f"NovelGraph runs on SQLite or PostgreSQL; no append-only triggers for {vendor}")


def drop_append_only_sql(vendor: str, table: str) -> list[str]:
    if vendor == "postgresql":
        return [f'DROP TRIGGER IF EXISTS "{table}_append_only" ON "{table}";']
    return [
        f'DROP TRIGGER IF EXISTS "{table}_no_update";',
        f'DROP TRIGGER IF EXISTS "{table}_no_delete";',
    ]


# Every table an AppendOnly migration guards; the test suite uses it to lift and
# restore the guards around the flush of transactional tests.
APPEND_ONLY_TABLES: list[str] = [
    "discovery_scratchpadentry",
    "discovery_contextdossier",
    "approvals_decisionlogentry",
]


def install_append_only(connection, tables: list[str] | None = None) -> None:
    with connection.cursor() as cursor:
        for table in tables or APPEND_ONLY_TABLES:
            for statement in append_only_sql(connection.vendor, table):
                cursor.execute(statement)


def remove_append_only(connection, tables: list[str] | None = None) -> None:
    with connection.cursor() as cursor:
        for table in tables or APPEND_ONLY_TABLES:
            for statement in drop_append_only_sql(connection.vendor, table):
                cursor.execute(statement)


class AppendOnly(migrations.RunPython):
    """Migration operation: make ``table`` refuse UPDATE and DELETE on any backend."""

    def __init__(self, table: str):
        assert table in APPEND_ONLY_TABLES, f"add {table} to APPEND_ONLY_TABLES"

        def forwards(apps, schema_editor):
            install_append_only(schema_editor.connection, [table])

        def backwards(apps, schema_editor):
            remove_append_only(schema_editor.connection, [table])

        super().__init__(forwards, backwards)


def restore_store_invariants(sender, using: str = "default", **kwargs) -> None:
    """``post_migrate``: the append-only guards and the rows data migrations seed are present.

    Runs after every ``migrate`` and after every ``flush`` (which empties all tables,
    seeded rows included, and on SQLite needs the guards lifted first). Idempotent,
    and it never overwrites what staff changed: missing rows are created, existing
    ones left alone.
    """
    import importlib

    from django.apps import apps
    from django.db import connections

    connection = connections[using]
    existing = set(connection.introspection.table_names())
    if not set(APPEND_ONLY_TABLES) <= existing or "loop_rosterentry" not in existing:
        return  # a partial migrate (or a rollback): nothing to restore yet
    install_append_only(connection)
    from discovery.models import KnowledgeBase
    from library.models import KnowledgeChunk, KnowledgeSource
    from library.seed import seed_curated_library

    seed_curated_library(KnowledgeBase, KnowledgeSource, KnowledgeChunk)
    importlib.import_module("discovery.loop.migrations.0002_roster").seed(apps, None, overwrite=False)
