"""Shared model base and database-level guards used by every app's migrations."""

from __future__ import annotations

import uuid

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.validators import BaseValidator
from django.db import connections, migrations, models
from django.utils.deconstruct import deconstructible


class TimeStampedModel(models.Model):
    """UUID primary key plus creation and update times."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class AppendOnlyRecord:
    """A model whose rows are never changed or deleted through the ORM (the database's triggers refuse it too):
    ``save()`` adds a row and refuses to update one (``append_only`` says why), ``delete()`` always refuses
    (``append_only_delete``, else the same words)."""

    append_only = "This record is append-only."
    append_only_delete = ""

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValidationError(self.append_only)
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValidationError(self.append_only_delete or self.append_only)


def enum_check(field: str, choices: type[models.TextChoices], name: str) -> models.CheckConstraint:
    """A CheckConstraint restricting ``field`` to the values of ``choices``."""
    return models.CheckConstraint(condition=models.Q(**{f"{field}__in": choices.values}), name=name)


def choices_check(field: str, choices: list[tuple[str, str]], name: str) -> models.CheckConstraint:
    """A CheckConstraint restricting ``field`` to the values of a list of (value, label) pairs."""
    return models.CheckConstraint(condition=models.Q(**{f"{field}__in": [value for value, _ in choices]}), name=name)


@deconstructible
class AboveValidator(BaseValidator):
    """``value > limit_value``: an exclusive lower bound (a budget or a share that must be positive), beside
    Django's inclusive ``MinValueValidator``. Input schemas read it with ``novelgraph.core.schemas.bounded``."""

    message = "Ensure this value is greater than %(limit_value)s."
    code = "above_value"

    def compare(self, a, b) -> bool:
        return a <= b


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


# Every table an app guards. Each app registers its own tables from its ``ready()`` and
# restores their guards after migrate and flush from its own ``post_migrate`` handler; the
# test suite lifts them around the flush of transactional tests.
APPEND_ONLY_TABLES: list[str] = []


def register_append_only(*tables: str) -> None:
    for table in tables:
        if table not in APPEND_ONLY_TABLES:
            APPEND_ONLY_TABLES.append(table)


def install_append_only(connection, tables: list[str] | None = None) -> None:
    """Guard ``tables`` (default: every registered table that exists)."""
    existing = set(connection.introspection.table_names())
    with connection.cursor() as cursor:
        for table in tables if tables is not None else APPEND_ONLY_TABLES:
            if table in existing:
                for statement in append_only_sql(connection.vendor, table):
                    cursor.execute(statement)


def remove_append_only(connection, tables: list[str] | None = None) -> None:
    existing = set(connection.introspection.table_names())
    with connection.cursor() as cursor:
        for table in tables if tables is not None else APPEND_ONLY_TABLES:
            if table in existing:
                for statement in drop_append_only_sql(connection.vendor, table):
                    cursor.execute(statement)


class AppendOnly(migrations.RunPython):
    """Migration operation: make ``table`` refuse UPDATE and DELETE on any backend."""

    def __init__(self, table: str):
        def forwards(apps, schema_editor):
            install_append_only(schema_editor.connection, [table])

        def backwards(apps, schema_editor):
            remove_append_only(schema_editor.connection, [table])

        super().__init__(forwards, backwards)


def tables_exist(using: str, *tables: str) -> bool:
    """True when every one of ``tables`` exists (a post_migrate handler has nothing to restore otherwise:
    a partial migrate, or ``migrate <app> zero``)."""
    return set(tables) <= set(connections[using].introspection.table_names())


def guard_tables_after_migrate(*tables: str):
    """A ``post_migrate`` receiver that restores the append-only guards of ``tables`` when they exist."""

    def receiver(sender, using: str = "default", **kwargs) -> None:
        install_append_only(connections[using], list(tables))

    return receiver


def lock_row(model: type[models.Model], pk) -> None:
    """Serialise writers of one row (a book: its chain head, its counters) for the rest of the transaction.

    PostgreSQL: the row's lock. SQLite: nothing more is needed, because every transaction begins
    IMMEDIATE and so already holds the database's write lock. Call inside ``transaction.atomic``.
    """
    if connections["default"].vendor != "sqlite":
        # order_by("pk"): a model's default ordering may follow a nullable relation (a book's series),
        # and PostgreSQL refuses FOR UPDATE on the nullable side of an outer join.
        model.objects.select_for_update().filter(pk=pk).order_by("pk").values_list("pk").first()
