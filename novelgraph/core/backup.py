"""Consistent copies of the database: SQLite's online backup API, or ``pg_dump`` on PostgreSQL.

``sqlite3.Connection.backup`` copies the database page by page through SQLite itself, so
the copy is a consistent snapshot even while the app keeps writing (WAL included), unlike
copying the file. ``pg_dump`` takes its snapshot in one repeatable-read transaction, so it is
consistent too; its custom format is restored with ``pg_restore --clean --if-exists`` (README).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.db import connections
from django.utils import timezone


class BackupUnsupported(Exception):
    """No backup can be taken here (an unsupported database, or PostgreSQL without ``pg_dump``)."""


def backup_dir() -> Path:
    return Path(getattr(settings, "NOVELGRAPH_BACKUP_DIR", settings.VAR_DIR / "backups"))


def default_backup_path(reason: str = "", extension: str = ".sqlite3") -> Path:
    stamp = timezone.now().strftime("%Y%m%dT%H%M%S%fZ")
    suffix = f"-{reason}" if reason else ""
    return backup_dir() / f"novelgraph-{stamp}{suffix}{extension}"


def database_backup(*, using: str = "default", output: Path | None = None, reason: str = "") -> Path:
    """A consistent copy of the database behind ``using``, whichever backend it is."""
    vendor = connections[using].vendor
    if vendor == "sqlite":
        return sqlite_backup(using=using, output=output, reason=reason)
    if vendor == "postgresql":
        return postgresql_backup(using=using, output=output, reason=reason)
    raise BackupUnsupported(f"no backup for a {vendor} database: NovelGraph runs on SQLite or PostgreSQL")


PG_DUMP_MISSING = (
    "pg_dump was not found on PATH: install the PostgreSQL client (the same major version as the "
    "server, e.g. `apt-get install postgresql-client`) or back up with "
    '`pg_dump --format=custom --file=novelgraph.dump "$DATABASE_URL"` from a machine that has it'
)


def postgresql_backup(*, using: str = "default", output: Path | None = None, reason: str = "") -> Path:
    """``pg_dump --format=custom`` of the PostgreSQL database behind ``using`` (default: var/backups/<timestamp>.dump).

    Refuses to overwrite an existing file; the dump is written beside it first and renamed when
    ``pg_dump`` succeeded, so a failed dump never leaves a file that looks like a backup.
    """
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        raise BackupUnsupported(PG_DUMP_MISSING)
    db = connections[using].settings_dict
    target = Path(output) if output else default_backup_path(reason, ".dump")
    if target.exists():
        raise FileExistsError(f"{target} already exists; choose another --output")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    env = {**os.environ}
    for variable, key in (("PGHOST", "HOST"), ("PGPORT", "PORT"), ("PGUSER", "USER"), ("PGPASSWORD", "PASSWORD")):
        if db.get(key):
            env[variable] = str(db[key])  # the password stays out of the command line
    command = [pg_dump, "--format=custom", f"--file={partial}", f"--dbname={db['NAME']}"]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"pg_dump failed (exit {result.returncode}): {result.stderr.strip()}")
    partial.rename(target)
    return target


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
    """pre_migrate: before migrations change an existing database, take a backup.

    Only when there is something to apply and the database already holds applied migrations
    (a fresh database, a test database and an up-to-date database are left alone). SQLite: the
    online backup API. PostgreSQL: ``pg_dump``; without ``pg_dump`` the migration goes on and
    says plainly, on stderr, that no backup was taken.
    """
    connection = connections[using]
    if connection.vendor not in {"sqlite", "postgresql"} or not plan:
        return
    if "django_migrations" not in connection.introspection.table_names():
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM django_migrations")
        if not cursor.fetchone()[0]:
            return
    speak = kwargs.get("verbosity", 1)
    try:
        path = database_backup(using=using, reason="pre-migrate")
    except BackupUnsupported as exc:
        sys.stderr.write(f"  WARNING: no backup was taken before migrating: {exc}\n")
        return
    stdout = kwargs.get("stdout")
    if stdout is not None and speak:
        stdout.write(f"  Backed up the database before migrating: {path}")
