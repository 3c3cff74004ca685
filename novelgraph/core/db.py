"""Shared model base and database-level guards used by every app's migrations."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.validators import BaseValidator
from django.db import OperationalError, connections, migrations, models
from django.utils.deconstruct import deconstructible

T = TypeVar("T")


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

    One book, one lock order. A write transaction that locks rows of a book takes them in this order,
    and only in this order:

    1. the book row (``lock_row(Book, pk)``);
    2. its loop's meta row (``discovery.loop.services.base.lock_meta``, ``cost_charge``);
    3. its discovery session row (``discovery.services.sessions.locked_session``);
    4. then any item rows (a handoff, a claim, an approval, a run...).

    ``lock_meta`` and ``locked_session`` take the book row first themselves, so a transaction that holds the
    session never waits for the book behind one that holds the book and wants the session; a service that
    locks an item row before one of these takes the book first too (``handoff_return``, the agent run's
    transactions). Every such lock is ``FOR NO KEY UPDATE`` (``no_key=True``): it serialises the writers of
    the row and never waits on, nor blocks, the key-share lock that inserting a row referring to it takes.
    A deadlock that still happens is retried at the outermost transaction (``retried``), never a 500.
    """
    if connections["default"].vendor != "sqlite":
        # order_by("pk"): a model's default ordering may follow a nullable relation (a book's series),
        # and PostgreSQL refuses FOR UPDATE on the nullable side of an outer join.
        model.objects.select_for_update(no_key=True).filter(pk=pk).order_by("pk").values_list("pk").first()


# Deadlock detected, serialization failure: PostgreSQL aborted the transaction so that another could go on.
TRANSIENT_SQLSTATES = {"40P01", "40001"}
ATTEMPTS = 4


def transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a deadlock or serialization failure: the same transaction may be tried again."""
    return isinstance(exc, OperationalError) and getattr(exc.__cause__, "sqlstate", None) in TRANSIENT_SQLSTATES


def retried(write: Callable[[], T], *, using: str = "default") -> T:
    """``write()`` (one whole transaction), tried again when the database aborted it for a deadlock or a
    serialization failure (up to ``ATTEMPTS`` times). Inside an outer transaction it runs once: the outer
    transaction is aborted with it, so the outermost caller retries (the request, the worker)."""
    if connections[using].in_atomic_block:
        return write()
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return write()
        except OperationalError as exc:
            if not transient(exc) or attempt == ATTEMPTS:
                raise
            time.sleep(0.05 * attempt)
    raise AssertionError("unreachable")
