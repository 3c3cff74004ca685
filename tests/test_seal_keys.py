"""The seal key's life (issues 12.10 and 20.7): a random local key when none is set, a key ring, a deploy check."""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from approvals.chain import current_key_id, seal_of
from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_verify
from approvals.services import decision_log_append
from novelgraph.core.sealkey import key_id_of, local_seal_key

from .test_security_deploy import production_env

ROOT = Path(__file__).resolve().parent.parent
DEV_SECRET = "django-insecure-novelgraph-local-development-only"


def _log(book, author, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        decision_log_append(
            book=book,
            decision="approve",
            subject_type="note",
            subject_id=f"note-{i}",
            rationale=f"Reason {i}",
            ratified_by_user=author,
        )


# --- A random local key, kept under var/, never derived from the published secret -----------------------


def test_the_local_key_is_random_kept_in_var_readable_by_its_owner_and_stable(tmp_path):
    key = local_seal_key(tmp_path)
    assert len(key) == 64 and int(key, 16) >= 0
    assert local_seal_key(tmp_path) == key, "the second use reads the same key"
    mode = stat.S_IMODE(os.stat(tmp_path / "seal.key").st_mode)
    assert mode == 0o600
    (tmp_path / "elsewhere").mkdir()
    assert local_seal_key(tmp_path / "elsewhere") != key, "random, not derived from anything"


def _settings_in_subprocess(env: dict, expr: str) -> str:
    code = f"import django; django.setup(); from django.conf import settings as s; print({expr})"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_without_a_configured_key_the_server_generates_one_on_first_run(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "NOVELGRAPH_"))}
    env.update(NOVELGRAPH_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="novelgraph.settings")
    first = _settings_in_subprocess(env, "s.DECISION_LOG_SEAL_KEY")
    again = _settings_in_subprocess(env, "s.DECISION_LOG_SEAL_KEY")

    assert first == again == (tmp_path / "seal.key").read_text().strip()
    assert DEV_SECRET not in first and first != f"seal:{DEV_SECRET}"
    other = tmp_path / "other"
    other.mkdir()
    assert _settings_in_subprocess({**env, "NOVELGRAPH_VAR_DIR": str(other)}, "s.DECISION_LOG_SEAL_KEY") != first
    configured = _settings_in_subprocess(
        {**env, "NOVELGRAPH_SEAL_KEY": "from-the-environment"}, "s.DECISION_LOG_SEAL_KEY"
    )
    assert configured == "from-the-environment"


# --- The key ring -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_rotating_the_key_keeps_old_entries_verifying_while_the_old_key_stays_in_the_ring(book, author):
    old, new = secrets.token_hex(32), secrets.token_hex(32)
    with override_settings(DECISION_LOG_SEAL_KEY=old, DECISION_LOG_SEAL_OLD_KEYS=[]):
        _log(book, author, 2)
        assert decision_log_verify(book).ok
    with override_settings(DECISION_LOG_SEAL_KEY=new, DECISION_LOG_SEAL_OLD_KEYS=[old]):
        _log(book, author, 2, start=2)
        entries = list(DecisionLogEntry.objects.filter(book=book).order_by("sequence"))
        assert [e.seal_key_id for e in entries] == [key_id_of(old)] * 2 + [key_id_of(new)] * 2
        assert current_key_id() == key_id_of(new)
        assert entries[3].seal == seal_of(entries[3].hash, new)
        assert decision_log_verify(book).ok, decision_log_verify(book).reason
    with override_settings(DECISION_LOG_SEAL_KEY=new, DECISION_LOG_SEAL_OLD_KEYS=[]):
        result = decision_log_verify(book)
        assert not result.ok and result.first_bad_sequence == 1
        assert f"sealed by key {key_id_of(old)}, which is not in the seal key ring" in result.reason
    with override_settings(DECISION_LOG_SEAL_KEY=secrets.token_hex(32), DECISION_LOG_SEAL_OLD_KEYS=[old, new]):
        assert decision_log_verify(book).ok, "any key of the ring verifies what it sealed"


@pytest.mark.django_db
def test_an_entry_sealed_before_the_ring_verifies_with_any_key_of_the_ring(book, author):
    """Old logs: entries written before key ids were recorded have a blank id (migration 0006)."""
    old = secrets.token_hex(32)
    with override_settings(DECISION_LOG_SEAL_KEY=old, DECISION_LOG_SEAL_OLD_KEYS=[]):
        _log(book, author, 2)
    from approvals.chain import verify_rows
    from approvals.selectors import VERIFY_COLUMNS

    key_id_at = VERIFY_COLUMNS.index("seal_key_id")
    rows = [
        (*row[:key_id_at], "", *row[key_id_at + 1 :])
        for row in DecisionLogEntry.objects.filter(book=book).order_by("sequence").values_list(*VERIFY_COLUMNS)
    ]
    assert rows and all(row[key_id_at] == "" for row in rows)
    with override_settings(DECISION_LOG_SEAL_KEY=secrets.token_hex(32), DECISION_LOG_SEAL_OLD_KEYS=[old]):
        assert verify_rows(book.pk, rows).ok
    with override_settings(DECISION_LOG_SEAL_KEY=secrets.token_hex(32), DECISION_LOG_SEAL_OLD_KEYS=[]):
        assert verify_rows(book.pk, rows).reason.startswith("seal does not match")


@pytest.mark.django_db
def test_the_verify_command_fails_when_the_sealing_key_left_the_ring(book, author):
    old = secrets.token_hex(32)
    with override_settings(DECISION_LOG_SEAL_KEY=old, DECISION_LOG_SEAL_OLD_KEYS=[]):
        _log(book, author, 1)
    other = override_settings(DECISION_LOG_SEAL_KEY=secrets.token_hex(32), DECISION_LOG_SEAL_OLD_KEYS=[])
    with other, pytest.raises(CommandError):
        call_command("verify_decision_log", "--book", str(book.pk), stdout=StringIO())
    with override_settings(DECISION_LOG_SEAL_KEY=secrets.token_hex(32), DECISION_LOG_SEAL_OLD_KEYS=[old]):
        call_command("verify_decision_log", "--book", str(book.pk), stdout=StringIO())


# --- The deploy check ------------------------------------------------------------------------------------


def test_check_deploy_warns_when_no_seal_key_is_configured_in_production(tmp_path):
    env = production_env(tmp_path)
    del env["NOVELGRAPH_SEAL_KEY"]
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "novelgraph.W004" in result.stdout + result.stderr
    assert "No seal key is configured" in result.stdout + result.stderr
