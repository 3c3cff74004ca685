"""A book's access in one bare statement: the fast path under ``discovery.access.book_access``.

Why bare SQL: every API request and every page resolves its book here, and building and compiling the equivalent
queryset cost several times running the statement. The statement is written once per database vendor from the
models' own metadata, and its row becomes instances exactly as the ORM would make them (``novelgraph.core.rows``);
the rule of who may touch the book stays in ``discovery.access``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from novelgraph.core.auth import Principal
from novelgraph.core.errors import NotFound
from novelgraph.core.rows import RowModel, per_vendor

from .models import Book, Series


@dataclass(frozen=True)
class _BookLookup:
    """The one statement that loads a book for access, built once per database vendor.

    Every column of the book, of its series (a left join) and of its owner, and whether the caller edits it
    (an ``EXISTS`` on the editors table).
    """

    sql: str
    book: RowModel
    series: RowModel
    owner: RowModel


@per_vendor
def _book_lookup_for(connection) -> _BookLookup:
    qn = connection.ops.quote_name
    user_model = get_user_model()
    book, series, owner = RowModel(Book, connection), RowModel(Series, connection), RowModel(user_model, connection)
    editors = Book.editors.through._meta
    edits = (
        f"EXISTS (SELECT 1 FROM {qn(editors.db_table)} e WHERE e.{qn('book_id')} = b.{qn('id')}"
        f" AND e.{qn('user_id')} = %s)"
    )
    columns = book.columns("b", connection) + series.columns("s", connection) + owner.columns("u", connection)
    sql = (
        f"SELECT {', '.join(columns)}, {edits} FROM {qn(Book._meta.db_table)} b"
        f" LEFT JOIN {qn(Series._meta.db_table)} s ON s.{qn('id')} = b.{qn('series_id')}"
        f" JOIN {qn(user_model._meta.db_table)} u ON u.{qn(user_model._meta.pk.column)} = b.{qn('owner_id')}"
        f" WHERE b.{qn('id')} = %s"
    )
    return _BookLookup(sql, book, series, owner)


def load_book(principal: Principal, book_id: Any) -> tuple[Book, bool]:
    """The book with its series and owner, and whether the principal edits it, in one statement (404 for no
    such book)."""
    try:
        pk = book_id if isinstance(book_id, uuid.UUID) else uuid.UUID(str(book_id))
    except (ValueError, TypeError, AttributeError):
        raise NotFound("book not found") from None
    lookup = _book_lookup_for(connection)
    book_pk = Book._meta.pk.get_db_prep_value(pk, connection)
    user_pk = get_user_model()._meta.pk.get_db_prep_value(principal.user.pk, connection)
    with connection.cursor() as cursor:
        cursor.execute(lookup.sql, [user_pk, book_pk])
        row = cursor.fetchone()
    if row is None:
        raise NotFound("book not found")
    n_book, n_series = lookup.book.width, lookup.series.width
    book = lookup.book.instance(row[:n_book], connection)
    series_row = row[n_book : n_book + n_series]
    book.series = None if book.series_id is None else lookup.series.instance(series_row, connection)
    book.owner = lookup.owner.instance(row[n_book + n_series : -1], connection)
    book.viewer_edits = bool(row[-1])
    return book, book.viewer_edits
