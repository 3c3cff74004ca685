"""Did a request write anything? The database's own count of written rows, read before and after.

SQLite counts every row inserted, updated or deleted on the connection (``total_changes``);
PostgreSQL counts them per table for the current transaction (``pg_stat_xact_user_tables``), and the
tests run inside one. Both see raw SQL and triggers too, and an UPDATE that changes nothing is still
a write. One statement per reading, so a matrix of a thousand calls can afford it.
"""

from __future__ import annotations

from django.db import connection


def rows_written() -> int:
    """How many rows this connection has inserted, updated or deleted so far."""
    connection.ensure_connection()
    if connection.vendor == "sqlite":
        return connection.connection.total_changes
    with connection.cursor() as cursor:
        cursor.execute("SELECT COALESCE(SUM(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_xact_user_tables")
        return int(cursor.fetchone()[0])
