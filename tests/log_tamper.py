"""Editing a decision log behind the application's back, as the tamper tests do.

An entry's text (``DecisionLogEntry.entry``) is the only stored copy of what it says: the columns that show
it (``sequence``, ``rationale``, ``prev_hash``...) are generated from it by the database and cannot be written.
So an edit of what an entry says rewrites its text, and, where the attack needs it, its hash and seal.
"""

from __future__ import annotations

import json
from contextlib import contextmanager

from django.db import connection

from approvals.chain import canonical_bytes, entry_hash
from approvals.models import DecisionLogEntry
from novelgraph.core.db import install_append_only, remove_append_only

TABLE = DecisionLogEntry._meta.db_table


def book_param(book):
    """The book's id as the database stores it (SQLite keeps a UUID as 32 hex digits)."""
    return DecisionLogEntry._meta.get_field("book").get_db_prep_value(book.pk, connection)


@contextmanager
def guards_lifted():
    """Drop the append-only triggers for a tamper test; restore them afterwards."""
    remove_append_only(connection, [TABLE])
    try:
        with connection.cursor() as cursor:
            yield cursor
    finally:
        install_append_only(connection, [TABLE])


def entry_fields(book, sequence: int) -> dict:
    """The fields of entry ``sequence`` of ``book``, read from its stored text."""
    return json.loads(DecisionLogEntry.objects.values_list("entry", flat=True).get(book=book, sequence=sequence))


def write_entry(cursor, book, sequence: int, fields: dict, *, rehash: bool = False, seal: str | None = None) -> str:
    """Store ``fields`` as the text of entry ``sequence`` of ``book`` (in the recipe's canonical form, so only
    what changed differs). ``rehash`` also stores the text's SHA-256 as its hash; ``seal`` stores a seal. Returns
    the text's hash."""
    text = canonical_bytes(fields).decode()
    digest = entry_hash(fields)
    sets, params = ["entry = %s"], [text]
    if rehash:
        sets.append("hash = %s")
        params.append(digest)
    if seal is not None:
        sets.append("seal = %s")
        params.append(seal)
    cursor.execute(
        f"UPDATE {TABLE} SET {', '.join(sets)} WHERE book_id = %s AND sequence = %s",
        [*params, book_param(book), sequence],
    )
    assert cursor.rowcount == 1
    return digest


def rewrite_entry(cursor, book, sequence: int, **changes) -> str:
    """Change fields of entry ``sequence`` in its stored text, its hash and seal left as they were."""
    return write_entry(cursor, book, sequence, {**entry_fields(book, sequence), **changes})
