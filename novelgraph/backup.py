"""Consistent copies of the SQLite database (the SQLite online backup API).

``sqlite3.Connection.backup`` copies the database page by page through SQLite itself, so
the copy is a consistent snapshot even while the app keeps writing (WAL included), unlike
copying the file. PostgreSQL is backed up with ``pg_dump`` (see the README).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from django.conf import settings
from django.db import connections
from django.utils import timezone


class BackupUnsupported(Exception):
    """The database is not SQLite: use the database's own tool."""


def backup_dir() -> Path:
    return Path(getattr(settings, "NOVELGRAPH_BACKUP_DIR", settings.VAR_DIR / "backups"))


def default_backup_path(reason: str = "") -> Path:
    stamp = timezone.now().strftime("%Y%m%dT%H%M%S%fZ")
    suffix = f"-{reason}" if reason else ""
    return backup_dir() / f"novelgraph-{stamp}{suffix}.sqlite3"


def sqlite_backup(*, using: str = "default", output: Path | None = None, reason: str = "") -> Path:
    """Copy the SQLite database behind ``using`` to ``output`` (default: var/backups/<timestamp>.sqlite3).

    Refuses to overwrite an existing file. The copy is checked with ``PRAGMA integrity_check``
    and switched to the rollback journal, so it is one self-contained file.
    """
    connection = connections[using]
    if connection.vendor != "sqlite":
        raise BackupUnsupported(
            f"the database is {connection.vendor}, not SQLite: back it up with pg_dump, e.g. "
            '`pg_dump --format=custom --file=novelgraph.dump "$DATABASE_URL"` (restore with pg_restore)'
        )
    target = Path(output) if output else default_backup_path(reason)
    if target.exists():
        raise FileExistsError(f"{target} already exists; choose another --output")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    connection.ensure_connection()
    destination = sqlite3.connect(partial)
    try:
        connection.connection.backup(destination, pages=1024)
        destination.execute("PRAGMA journal_mode=DELETE")
        verdict = destination.execute("PRAGMA integrity_check").fetchone()[0]
        if verdict != "ok":
            raise RuntimeError(f"the copy failed its integrity check: {verdict}")
    finally:
        destination.close()
    partial.rename(target)
    return target


def backup_before_migrate(sender, *, using: str = "default", plan=None, **kwargs) -> None:
    """pre_migrate: before migrations change an existing SQLite database, take a backup.

    Only when there is something to apply and the database already holds applied migrations
    (a fresh file, a test database and an up-to-date database are left alone).
    """
    connection = connections[using]
    if connection.vendor != "sqlite" or not plan:
        return
    if "django_migrations" not in connection.introspection.table_names():
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM django_migrations")
        if not cursor.fetchone()[0]:
            return
    path = sqlite_backup(using=using, reason="pre-migrate")
    stdout = kwargs.get("stdout")
    if stdout is not None and kwargs.get("verbosity", 1):
        stdout.write(f"  Backed up the database before migrating: {path}")
