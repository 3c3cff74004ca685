"""``migrate <app> zero`` and back works for every app of ours, with data in the database, on the database the
suite runs on (issue 20, item 5).

The round trip runs in a subprocess (``tests/migrate_roundtrip.py``) against a throwaway database: a SQLite
file in ``tmp_path``, or a scratch PostgreSQL database on the test server. Each app is unapplied with the demo
book loaded, then migrated back; ``post_migrate`` handlers (search schema, curated library, literary base, loop
roster, append-only guards) must neither fail on the tables that are gone nor leave anything out afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from .live_gunicorn import database_env

ROOT = Path(__file__).resolve().parent.parent
APPS = ("discovery", "library", "approvals", "novelgraph", "loop", "agents")


def _pg_url(name: str) -> str:
    return database_env()["DATABASE_URL"].rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture
def scratch_env(tmp_path, db):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["NOVELGRAPH_VAR_DIR"] = str(tmp_path)
    if connection.vendor == "sqlite":
        env["NOVELGRAPH_SQLITE_PATH"] = str(tmp_path / "roundtrip.sqlite3")
        yield env
        return
    name = f"migrate_zero_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(_pg_url("postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    env["DATABASE_URL"] = _pg_url(name)
    try:
        yield env
    finally:
        with psycopg.connect(_pg_url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run(env, module: str, *args: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``python -m <module> <args>`` against the scratch database: the process and the JSON lines it printed."""
    result = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200
    )
    return result, [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_every_app_migrates_to_zero_and_back_with_data(scratch_env):
    result, steps = _run(scratch_env, "tests.migrate_roundtrip", *APPS)

    failed = [step for step in steps if not step["ok"]]
    assert not failed, json.dumps(failed, indent=1)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert [step["app"] for step in steps] == list(APPS)
    for step in steps:
        assert step["seeded after back"]["curated sources"] >= 1
        assert step["seeded after back"]["literary bases"] == 1
        assert step["seeded after back"]["roster entries"] >= 1


def test_the_decision_log_moves_to_its_stored_text_and_back_and_a_row_rewritten_before_keeps_failing(scratch_env):
    """Migration approvals.0011 on the demo book's log: back and forth, the log verifies as before; a rationale
    rewritten in its old column before the upgrade is still named after it (its text is built from the columns)."""
    result, lines = _run(scratch_env, "tests.migrate_log_storage")
    assert result.returncode == 0 and lines and lines[-1]["ok"], result.stdout[-2000:] + result.stderr[-3000:]
    report = lines[-1]
    assert report["before"]["ok"] and report["before"]["entries"] >= 2
    assert report["rewritten before the upgrade"]["ok"] is False
