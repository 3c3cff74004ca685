"""Backups: a consistent copy of the SQLite database taken while the app runs, restorable, with its log intact.

PostgreSQL (pg_dump, pg_restore) is tests/test_backup_postgresql.py."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from approvals.chain import entry_text, verify_rows
from approvals.selectors import VERIFY_COLUMNS
from approvals.services import decision_log_append

ROOT = Path(__file__).resolve().parent.parent
sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite online backup API")


def _log(book, author, n: int) -> None:
    for i in range(n):
        decision_log_append(
            book=book,
            decision="approve",
            subject_type="charter",
            subject_id=f"subject-{i}",
            rationale=f"Reason {i} — with “quotes” and ünïcode",
            ratified_by_user=author,
            detail={"slot": i},
        )


def _restored_log(path: Path, book_id) -> list[tuple]:
    """Read the log of one book straight from a restored file (no Django connection involved): its
    ``VERIFY_COLUMNS``, as ``verify_rows`` takes them."""
    restored = sqlite3.connect(path)
    try:
        columns = ", ".join(VERIFY_COLUMNS)
        return restored.execute(
            f"SELECT {columns} FROM approvals_decisionlogentry WHERE book_id = ? ORDER BY sequence", [book_id.hex]
        ).fetchall()
    finally:
        restored.close()


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_backup_restores_into_a_fresh_file_with_a_verifiable_decision_log(book, author, tmp_path):
    _log(book, author, 5)
    out = StringIO()

    call_command("backup", output=tmp_path / "copy.sqlite3", stdout=out)

    assert "Backed up the database to" in out.getvalue()
    restored = tmp_path / "restored.sqlite3"
    restored.write_bytes((tmp_path / "copy.sqlite3").read_bytes())  # restore = copy the file into place
    rows = _restored_log(restored, book.pk)
    assert len(rows) == 5
    assert verify_rows(book.pk, rows).ok
    assert json.loads(rows[2][VERIFY_COLUMNS.index("entry")])["rationale"] == "Reason 2 — with “quotes” and ünïcode"
    with sqlite3.connect(restored) as check:
        # The generated columns come back with the file, computed from the text.
        (rationale,) = check.execute("SELECT rationale FROM approvals_decisionlogentry WHERE sequence = 3").fetchone()
        assert rationale == "Reason 2 — with “quotes” and ünïcode"
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert check.execute("PRAGMA journal_mode").fetchone()[0] == "delete", "one self-contained file"
        assert check.execute("SELECT COUNT(*) FROM discovery_book").fetchone()[0] == 1


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_tampered_restore_is_detected(book, author, tmp_path):
    """A copy edited outside the app, triggers dropped: its rationale column cannot be written (it is generated
    from the entry's text), and a rationale changed in the text, hash and seal left, is named by its sequence."""
    _log(book, author, 3)
    call_command("backup", output=tmp_path / "copy.sqlite3", stdout=StringIO())
    with sqlite3.connect(tmp_path / "copy.sqlite3") as copy:
        copy.execute("DROP TRIGGER approvals_decisionlogentry_no_update")
        with pytest.raises(sqlite3.OperationalError, match="cannot UPDATE generated column"):
            copy.execute("UPDATE approvals_decisionlogentry SET rationale = 'forged' WHERE sequence = 2")
        (text,) = copy.execute("SELECT entry FROM approvals_decisionlogentry WHERE sequence = 2").fetchone()
        forged = entry_text({**json.loads(text), "rationale": "forged"})
        copy.execute("UPDATE approvals_decisionlogentry SET entry = ? WHERE sequence = 2", [forged])
        assert copy.execute("SELECT rationale FROM approvals_decisionlogentry WHERE sequence = 2").fetchone() == (
            "forged",
        )

    result = verify_rows(book.pk, _restored_log(tmp_path / "copy.sqlite3", book.pk))

    assert not result.ok
    assert result.first_bad_sequence == 2
    assert result.reason == "hash does not match the entry's content"


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_the_default_backup_lands_in_var_backups_with_a_timestamp(book, settings, tmp_path):
    settings.NOVELGRAPH_BACKUP_DIR = tmp_path / "backups"
    call_command("backup", stdout=StringIO())
    (made,) = list((tmp_path / "backups").iterdir())
    assert made.name.startswith("novelgraph-20") and made.suffix == ".sqlite3"


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_backup_never_overwrites_an_existing_file(tmp_path):
    target = tmp_path / "exists.sqlite3"
    target.write_text("precious")
    with pytest.raises(CommandError, match="already exists"):
        call_command("backup", output=target, stdout=StringIO())
    assert target.read_text() == "precious"


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_backup_taken_while_another_connection_writes_is_consistent(book, author, tmp_path):
    """A writer in another thread keeps appending; every copy is a consistent, verifiable prefix of the log."""
    import threading

    from django.db import connections

    stop = threading.Event()

    def writer():
        try:
            i = 0
            while not stop.is_set() and i < 200:
                decision_log_append(
                    book=book,
                    decision="approve",
                    subject_type="charter",
                    subject_id=f"w{i}",
                    rationale="Written during the backup",
                    ratified_by_user=author,
                )
                i += 1
        finally:
            connections.close_all()

    thread = threading.Thread(target=writer)
    thread.start()
    copies = []
    try:
        for n in range(3):
            target = tmp_path / f"during-{n}.sqlite3"
            call_command("backup", output=target, stdout=StringIO())
            copies.append(target)
    finally:
        stop.set()
        thread.join()
    for copy in copies:
        assert verify_rows(book.pk, _restored_log(copy, book.pk)).ok


@pytest.mark.skipif(os.environ.get("DATABASE_URL", "") != "", reason="SQLite file; run once, in the SQLite pass")
def test_migrations_on_an_existing_sqlite_file_take_a_backup_first(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(NOVELGRAPH_VAR_DIR=str(tmp_path), NOVELGRAPH_SQLITE_PATH=str(tmp_path / "live.sqlite3"))
    backups = tmp_path / "backups"

    def manage(*args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    manage("migrate", "--noinput")
    assert not backups.exists(), "a fresh database has nothing to back up"

    manage("migrate", "novelgraph", "zero", "--noinput")
    assert len(list(backups.iterdir())) == 1, "unapplying is a change too"

    out = manage("migrate", "--noinput")
    (_first, second) = sorted(backups.iterdir())
    assert "Backed up the database before migrating" in out
    assert second.name.endswith("-pre-migrate.sqlite3")
    with sqlite3.connect(second) as copy:
        tables = {r[0] for r in copy.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "novelgraph_loginfailure" not in tables, "the copy is the database as it was before the migration"
    assert "approvals_decisionlogentry" in tables

    manage("migrate", "--noinput")
    assert len(list(backups.iterdir())) == 2, "nothing to apply: no backup"
