"""Backups on PostgreSQL: the README's pg_dump / pg_restore round trip into a fresh database, and the
backup ``migrate`` takes first. PostgreSQL only (the SQLite side is tests/test_backup.py)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import uuid
from io import StringIO
from pathlib import Path

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from approvals.services import decision_log_append

from .live_gunicorn import database_env

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL only")


def _admin_url(name: str) -> str:
    """The test's PostgreSQL server, database ``name``."""
    return database_env()["DATABASE_URL"].rsplit("/", 1)[0] + f"/{name}"


def _scratch_database(name: str) -> str:
    with psycopg.connect(_admin_url("postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    return _admin_url(name)


def _drop_database(name: str) -> None:
    with psycopg.connect(_admin_url("postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def documented_restore_command() -> list[str]:
    """The restore command exactly as the README documents it."""
    readme = (ROOT / "README.md").read_text()
    (line,) = [line.strip() for line in readme.splitlines() if line.strip().startswith("pg_restore ")]
    assert "--clean" in line and "--if-exists" in line
    return shlex.split(line)


def _manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.django_db(transaction=True)
def test_the_documented_backup_and_restore_round_trip_into_a_fresh_database_verifies(book, author, tmp_path, settings):
    for i in range(5):
        decision_log_append(
            book=book,
            decision="approve",
            subject_type="charter",
            subject_id=f"subject-{i}",
            rationale=f"Reason {i} — with “quotes” and ünïcode",
            ratified_by_user=author,
            detail={"slot": i},
        )
    out = StringIO()
    call_command("backup", output=tmp_path / "novelgraph.dump", stdout=out)
    assert "Backed up the database to" in out.getvalue()

    name = f"restored_{uuid.uuid4().hex[:10]}"
    restored_url = _scratch_database(name)
    try:
        command = documented_restore_command()
        command = [f"--dbname={restored_url}" if a.startswith("--dbname=") else a for a in command]
        command[-1] = str(tmp_path / "novelgraph.dump")
        restore = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert restore.returncode == 0, restore.stderr

        with psycopg.connect(restored_url) as restored:
            (count,) = restored.execute(
                "SELECT COUNT(*) FROM approvals_decisionlogentry WHERE book_id = %s", [book.pk]
            ).fetchone()
            (title,) = restored.execute("SELECT title FROM discovery_book WHERE id = %s", [book.pk]).fetchone()
        assert (count, title) == (5, "The Tide Clock")

        # Step 3 of the README: point DATABASE_URL at the restored database and verify, with the same seal key.
        env = {**os.environ, "DATABASE_URL": restored_url, "NOVELGRAPH_SEAL_KEY": settings.DECISION_LOG_SEAL_KEY}
        verified = _manage(env, "verify_decision_log", "--book", str(book.pk))
        assert verified.returncode == 0, verified.stdout + verified.stderr

        # The same restore over a database that already holds everything also works (--clean --if-exists).
        again = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        # A different seal key does not verify: the key, not the dump, is what makes the log trustworthy.
        forged = _manage({**env, "NOVELGRAPH_SEAL_KEY": "another key"}, "verify_decision_log", "--book", str(book.pk))
        assert forged.returncode != 0
    finally:
        _drop_database(name)


def test_the_backup_command_says_when_pg_dump_is_missing(db, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH without the PostgreSQL client
    with pytest.raises(CommandError, match="pg_dump was not found"):
        call_command("backup", output=tmp_path / "x.dump", stdout=StringIO())
    assert not (tmp_path / "x.dump").exists()


def test_the_backup_command_never_overwrites_a_file(db, tmp_path):
    target = tmp_path / "exists.dump"
    target.write_text("precious")
    with pytest.raises(CommandError, match="already exists"):
        call_command("backup", output=target, stdout=StringIO())
    assert target.read_text() == "precious"


def test_migrate_on_an_existing_postgresql_database_takes_a_pg_dump_first_or_says_it_could_not(tmp_path):
    name = f"premigrate_{uuid.uuid4().hex[:10]}"
    url = _scratch_database(name)
    env = {**os.environ, "DATABASE_URL": url, "NOVELGRAPH_VAR_DIR": str(tmp_path)}
    backups = tmp_path / "backups"
    try:
        first = _manage(env, "migrate", "--noinput")
        assert first.returncode == 0, first.stdout + first.stderr
        assert not backups.exists(), "a fresh database has nothing to back up"

        without = _manage({**env, "PATH": str(tmp_path / "empty")}, "migrate", "novelgraph", "zero", "--noinput")
        assert without.returncode == 0, without.stdout + without.stderr
        assert "WARNING: no backup was taken before migrating: pg_dump was not found" in without.stderr
        assert not backups.exists()

        with_dump = _manage(env, "migrate", "--noinput")
        assert with_dump.returncode == 0, with_dump.stdout + with_dump.stderr
        assert "Backed up the database before migrating" in with_dump.stdout
        (dump,) = backups.iterdir()
        assert re.fullmatch(r"novelgraph-\d{8}T\d{6}\d+Z-pre-migrate\.dump", dump.name), dump.name
        listing = subprocess.run(["pg_restore", "--list", str(dump)], capture_output=True, text=True, timeout=120)
        assert listing.returncode == 0, listing.stderr
        assert "approvals_decisionlogentry" in listing.stdout
        assert "novelgraph_loginfailure" not in listing.stdout, "the dump is the database before the migration"

        unchanged = _manage(env, "migrate", "--noinput")
        assert unchanged.returncode == 0
        assert len(list(backups.iterdir())) == 1, "nothing to apply: no backup"
    finally:
        _drop_database(name)
