"""Count the SQL statements a database connection really runs, from the database driver's own trace.

Django's ``CaptureQueriesContext`` sees only what passes through Django's cursor wrapper; a statement run on
the DB-API connection itself (library search's FTS5 and PostgreSQL hot paths) is invisible to it. This helper
asks the driver instead:

- SQLite: ``sqlite3.Connection.set_trace_callback``, called by SQLite for every statement it starts.
- PostgreSQL: libpq's protocol trace (``psycopg``'s ``pgconn.trace``), which logs every message the client
  sends; a statement is a simple-protocol ``Query`` or an extended-protocol ``Execute``.

Both count statements the application sends, including ``BEGIN``/``COMMIT`` and savepoints (in a test wrapped
in a transaction, a service's ``atomic`` is a ``SAVEPOINT``/``RELEASE`` pair where production has
``BEGIN``/``COMMIT``: the same count). Work a trigger does inside the database is not a statement of ours.

    with sql_trace() as trace:
        client.get("/api/v1/me")
    assert len(trace) == 3, trace

A connection opened while the trace runs is traced from its first statement after Django's connection
setup (``connection_created``). On PostgreSQL, a connection closed while the trace runs loses what libpq had
not yet written out (the test client keeps one connection for the whole test, so this does not arise there).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.signals import connection_created

# Statements that can fire a trigger. SQLite reports each trigger program, and each statement inside it, as an
# extra trace event; Python 3.11 passes it the text of the statement that fired it, so an immediate repeat of
# a data-changing statement is its trigger (two identical writes in a row would count once: we issue none).
_MAY_FIRE_TRIGGERS = ("INSERT", "UPDATE", "DELETE", "REPLACE", "WITH")


class SqlTrace:
    """The statements seen, in order. ``len()`` is the count; ``str()`` lists them for a failure message."""

    def __init__(self, vendor: str):
        self.vendor = vendor
        self.statements: list[str] = []

    def __len__(self) -> int:
        return len(self.statements)

    def __iter__(self) -> Iterator[str]:
        return iter(self.statements)

    def __str__(self) -> str:
        lines = [f"{len(self.statements)} statements on {self.vendor}:"]
        lines += [f"  {i}. {sql[:300]}" for i, sql in enumerate(self.statements, 1)]
        return "\n".join(lines)

    __repr__ = __str__

    # --- SQLite -------------------------------------------------------------------

    def _sqlite_statement(self, sql: str) -> None:
        if sql.startswith("--"):
            return  # SQLite's own nested statement (an FTS5 index read, a trigger program on newer Pythons)
        if self.statements and sql == self.statements[-1] and sql[:7].upper().startswith(_MAY_FIRE_TRIGGERS):
            return  # a trigger program of the statement just counted, reported under its text
        self.statements.append(sql)

    # --- PostgreSQL -----------------------------------------------------------------

    # libpq prints strings between double quotes without escaping them, and Django quotes identifiers on
    # PostgreSQL, so a Parse's SQL is whatever lies between its name and its parameter count.
    _MESSAGE = re.compile(r"^F\t\d+\t(Query|Parse|Bind|Execute)\t ?(.*)$")
    _PARSE = re.compile(r'^"([^"]*)" "(.*)" \d+(?: \S+)*$')
    _BIND = re.compile(r'^"[^"]*" "([^"]*)"')

    def _pg_messages(self, text: str) -> None:
        """Statements from a libpq trace: each ``Query`` and each ``Execute`` the client (F) sent."""
        prepared: dict[str, str] = {}  # statement name ("" is the unnamed one) -> its SQL
        bound = ""
        for line in text.splitlines():
            message = self._MESSAGE.match(line)
            if not message:
                continue
            kind, rest = message.groups()
            if kind == "Query":
                self.statements.append(rest[1:-1] if rest.startswith('"') and rest.endswith('"') else rest)
            elif kind == "Parse" and (parse := self._PARSE.match(rest)):
                prepared[parse.group(1)] = parse.group(2)
            elif kind == "Bind" and (bind := self._BIND.match(rest)):
                name = bind.group(1)
                bound = prepared.get(name, f"<statement {name} prepared before the trace>")
            elif kind == "Execute":
                self.statements.append(bound)


@contextmanager
def sql_trace(using: str = DEFAULT_DB_ALIAS) -> Iterator[SqlTrace]:
    """Count the statements run on Django's connection ``using`` while the block runs."""
    connection = connections[using]
    connection.ensure_connection()
    trace = SqlTrace(connection.vendor)
    if connection.vendor == "sqlite":
        with _sqlite_tracing(connection, trace):
            yield trace
    elif connection.vendor == "postgresql":
        with _pg_tracing(connection, trace):
            yield trace
    else:  # pragma: no cover - NovelGraph runs on SQLite or PostgreSQL
        raise NotImplementedError(f"no statement trace for {connection.vendor}")


@contextmanager
def _sqlite_tracing(connection, trace: SqlTrace) -> Iterator[None]:
    traced = []

    def attach(dbapi_connection) -> None:
        dbapi_connection.set_trace_callback(trace._sqlite_statement)
        traced.append(dbapi_connection)

    def on_new_connection(sender, connection, **kwargs) -> None:
        if connection.alias == trace_alias:
            attach(connection.connection)

    trace_alias = connection.alias
    attach(connection.connection)
    connection_created.connect(on_new_connection, weak=False)
    try:
        yield
    finally:
        connection_created.disconnect(on_new_connection)
        for dbapi_connection in traced:
            dbapi_connection.set_trace_callback(None)


_pg_log = None


def _pg_trace_file():
    """One trace file per process, never closed: libpq writes through a C stream it opens on it and never
    closes, so the descriptor must stay this file's for the life of the process."""
    global _pg_log
    if _pg_log is None:
        _pg_log = tempfile.TemporaryFile()  # noqa: SIM115
    return _pg_log


@contextmanager
def _pg_tracing(connection, trace: SqlTrace) -> Iterator[None]:
    from psycopg import pq

    flags = pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE
    # Inside a transaction Django opened before the trace (a test's own), psycopg sends that BEGIN lazily,
    # before the next statement: it belongs to the enclosing block, not to the code traced.
    pending_begin = (
        not connection.get_autocommit() and connection.connection.info.transaction_status == pq.TransactionStatus.IDLE
    )
    fileno = _pg_trace_file().fileno()
    start = os.fstat(fileno).st_size
    traced = []

    def attach(dbapi_connection) -> None:
        dbapi_connection.pgconn.trace(fileno)
        dbapi_connection.pgconn.set_trace_flags(flags)
        traced.append(dbapi_connection)

    def on_new_connection(sender, connection, **kwargs) -> None:
        if connection.alias == trace_alias:
            attach(connection.connection)

    trace_alias = connection.alias
    attach(connection.connection)
    connection_created.connect(on_new_connection, weak=False)
    try:
        yield
    finally:
        connection_created.disconnect(on_new_connection)
        for dbapi_connection in traced:
            if not dbapi_connection.closed:
                dbapi_connection.pgconn.untrace()  # flushes what libpq buffered
        end = os.fstat(fileno).st_size
        trace._pg_messages(os.pread(fileno, end - start, start).decode("utf-8", "replace"))
        if pending_begin and trace.statements[:1] == ["BEGIN"]:
            del trace.statements[0]
