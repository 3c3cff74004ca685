"""Model instances from bare SQL rows, converted exactly as the ORM converts them.

For the two reads every API request makes (a key's lookup, a book's access) building and compiling the
equivalent querysets cost more than running their statements. Those statements are written
once per database vendor from the models' own metadata (``novelgraph.core.key_rows``,
``discovery.access_rows``) and their rows become instances here: the same values the ORM would give
(SQLite's datetimes made aware, UUIDs parsed, JSON decoded), with the converters looked up once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

from django.db import models

T = TypeVar("T")


def per_vendor(build: Callable[..., T]) -> Callable[..., T]:
    """``build(connection)`` runs once per database vendor; later calls return what it built (a statement's
    text and its ``RowModel``s depend on the vendor only)."""
    built: dict[str, T] = {}

    @functools.wraps(build)
    def get(connection) -> T:
        found = built.get(connection.vendor)
        if found is None:
            found = built[connection.vendor] = build(connection)
        return found

    return get


class RowModel:
    """The concrete columns of ``model`` and how to turn their raw values into an instance."""

    def __init__(self, model: type[models.Model], connection, fields: Sequence[models.Field] | None = None):
        self.model = model
        self.fields = tuple(fields if fields is not None else model._meta.concrete_fields)
        self.attnames = [f.attname for f in self.fields]
        self.width = len(self.fields)
        table = model._meta.db_table
        self._converters = []
        for field in self.fields:
            col = field.get_col(table)
            converters = connection.ops.get_db_converters(col) + field.get_db_converters(connection)
            self._converters.append((col, tuple(converters)))

    def columns(self, alias: str, connection) -> list[str]:
        """``alias.column`` for every field, quoted for ``connection``."""
        qn = connection.ops.quote_name
        return [f"{alias}.{qn(f.column)}" for f in self.fields]

    def convert(self, index: int, value, connection):
        """The raw value of field ``index`` as the ORM would give it."""
        col, converters = self._converters[index]
        for converter in converters:
            value = converter(value, col, connection)
        return value

    def instance(self, values: Sequence, connection) -> models.Model:
        """An instance from this model's raw column values (as loaded from the database: not "adding")."""
        converted = [
            self.convert(i, value, connection) if self._converters[i][1] else value for i, value in enumerate(values)
        ]
        return self.model.from_db(connection.alias, self.attnames, converted)
