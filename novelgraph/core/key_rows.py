"""A key's lookup in one bare statement: the fast path under ``novelgraph.core.auth.principal_for_key``.

Why bare SQL: every API request resolves its key here, and building and compiling the equivalent querysets cost
more than running the statement. It is written once per database vendor from the models' own metadata, and its
row becomes instances exactly as the ORM would make them (``novelgraph.core.rows``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model

from .models import ApiKey
from .rows import RowModel, per_vendor


@dataclass(frozen=True)
class KeyLookup:
    """The one statement that resolves a key, built once per database vendor.

    It reads every column of the key and of its owner, and the key's books folded into one text column by a
    correlated subquery (``group_concat`` / ``string_agg``; NULL for an unrestricted key), for an active owner
    and an unrevoked key.
    """

    sql: str
    key: RowModel
    user: RowModel
    last_used_index: int


@per_vendor
def key_lookup_for(connection) -> KeyLookup:
    qn = connection.ops.quote_name
    user_model = get_user_model()
    key = RowModel(ApiKey, connection)
    user = RowModel(user_model, connection)
    through = ApiKey.books.through._meta.db_table
    if connection.vendor == "postgresql":
        books = f"(SELECT string_agg(b.book_id::text, ',') FROM {qn(through)} b WHERE b.apikey_id = k.id)"
    else:
        books = f"(SELECT group_concat(b.book_id, ',') FROM {qn(through)} b WHERE b.apikey_id = k.id)"
    columns = key.columns("k", connection) + user.columns("u", connection) + [books]
    user_pk = qn(user_model._meta.pk.column)
    active = "u.is_active" if connection.vendor == "postgresql" else "u.is_active = 1"
    sql = (
        f"SELECT {', '.join(columns)} FROM {qn(ApiKey._meta.db_table)} k"
        f" JOIN {qn(user_model._meta.db_table)} u ON u.{user_pk} = k.{qn('owner_id')}"
        f" WHERE k.{qn('key_hash')} = %s AND k.{qn('revoked_at')} IS NULL AND {active}"
    )
    return KeyLookup(sql, key, user, key.attnames.index("last_used_at"))
