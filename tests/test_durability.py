"""Durability of decision-log writes on SQLite (issue 20, item 6).

SQLite in WAL mode with ``synchronous=NORMAL`` may roll back the last committed transactions on a
power loss; NovelGraph runs ``synchronous=FULL`` (settings.SQLITE_SYNCHRONOUS, README), which syncs
the WAL at every commit, so a decision the server acknowledged is on disk.

The simulation: a child process appends decisions and prints each acknowledged sequence; the test
copies the WAL, then the database file, at random moments mid-write (the files as they stand: a
crash snapshot), then kills the child with SIGKILL at a random point. Every copy must open, pass
``PRAGMA integrity_check``, verify as a chain, and hold every decision acknowledged before the copy
began. What it cannot show: file copies see what the OS was handed, not what reached the platter, so
the FULL-versus-NORMAL difference itself rests on SQLite's documented fsync at commit; the test pins
that every connection runs FULL.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from approvals.chain import verify_rows
from approvals.selectors import VERIFY_COLUMNS

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's synchronous setting and files")

WRITER = """
import sys, django
django.setup()
from django.db import connection
from approvals.services import decision_log_append
from discovery.models import Book
from django.contrib.auth import get_user_model
book = Book.objects.get(pk=sys.argv[1])
author = get_user_model().objects.get(pk=book.owner_id)
with connection.cursor() as cursor:
    cursor.execute("PRAGMA synchronous")
    print("synchronous", cursor.fetchone()[0], flush=True)
for i in range(100000):
    entry = decision_log_append(book=book, decision="approve", subject_type="note", subject_id=f"n{i}",
                                rationale=f"Decision {i}", ratified_by_user=author, detail={"i": i})
    print("acked", entry.sequence, flush=True)
"""


def _rows(path: Path, book_id) -> list[tuple]:
    """The book's ``VERIFY_COLUMNS`` read straight from a copy with sqlite3, as ``verify_rows`` takes them."""
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        columns = ", ".join(VERIFY_COLUMNS)
        return db.execute(
            f"SELECT {columns} FROM approvals_decisionlogentry WHERE book_id = ? ORDER BY sequence", [book_id.hex]
        ).fetchall()
    finally:
        db.close()


def test_the_app_connections_run_synchronous_full():
    assert settings.SQLITE_SYNCHRONOUS == "FULL"
    assert "PRAGMA synchronous=FULL;" in settings.DATABASES["default"]["OPTIONS"]["init_command"]


@pytest.mark.django_db(transaction=True)
def test_crash_snapshots_mid_write_open_verify_and_keep_every_acknowledged_decision(book, author, tmp_path):
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    live = tmp_path / "live.sqlite3"
    connection.ensure_connection()
    source = connection.connection  # the migrated test database with the book and its author, committed
    target = sqlite3.connect(live)
    source.backup(target)
    target.execute("PRAGMA journal_mode=WAL")
    target.close()

    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL"}}
    env.update(
        DJANGO_SETTINGS_MODULE="novelgraph.settings",
        NOVELGRAPH_SQLITE_PATH=str(live),
        NOVELGRAPH_SEAL_KEY=settings.DECISION_LOG_SEAL_KEY,
        NOVELGRAPH_ANCHOR_DIR=str(tmp_path / "anchors"),
    )
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(book.pk)], cwd=ROOT, env=env, stdout=subprocess.PIPE)
    os.set_blocking(child.stdout.fileno(), False)
    acked = 0
    buffer = ""

    def read_acks() -> None:
        nonlocal acked, buffer
        while True:
            try:
                chunk = os.read(child.stdout.fileno(), 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            buffer += chunk.decode()
        *lines, buffer = buffer.split("\n")
        for line in lines:
            if line.startswith("synchronous"):
                assert line.split()[1] == "2", "the writer's connection runs synchronous=FULL (2)"
            elif line.startswith("acked"):
                acked = int(line.split()[1])

    snapshots: list[tuple[Path, int]] = []
    try:
        deadline = time.monotonic() + 60
        while acked < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
            read_acks()
        assert acked >= 5, f"the writer never got going (seed {seed})"
        for n in range(6):
            time.sleep(rng.uniform(0.01, 0.3))
            read_acks()
            before = acked
            copy = tmp_path / f"snapshot-{n}.sqlite3"
            wal = Path(f"{live}-wal")
            if wal.exists():
                shutil.copyfile(wal, f"{copy}-wal")  # the WAL first: a checkpoint in between loses nothing
            shutil.copyfile(live, copy)
            snapshots.append((copy, before))
        time.sleep(rng.uniform(0.0, 0.2))
    finally:
        child.send_signal(signal.SIGKILL)  # the power cut, at a random point of a write
        child.wait(timeout=30)
    read_acks()
    if Path(f"{live}-wal").exists():
        shutil.copyfile(f"{live}-wal", tmp_path / "final.sqlite3-wal")
    shutil.copyfile(live, tmp_path / "final.sqlite3")
    snapshots.append((tmp_path / "final.sqlite3", acked))

    for copy, before in snapshots:
        rows = _rows(copy, book.pk)
        result = verify_rows(book.pk, rows)
        assert result.ok, f"{copy.name}: {result.reason} (seed {seed})"
        assert result.entries >= before, f"{copy.name} lost acknowledged decisions: {result.entries} < {before}"
    assert snapshots[-1][1] > 5
