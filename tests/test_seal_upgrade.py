"""An upgrade from the first round keeps every decision log verifying, with no setting (issue 30, item 6).

The first round sealed with a key derived from SECRET_KEY (``"seal:" + SECRET_KEY``) and recorded no key id. The
upgrade runs in a subprocess (``tests/migrate_first_round.py``) against a throwaway database built at the first
round's migration state, with no seal key configured and no old keys named.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

import pytest
from django.test import override_settings

from approvals.chain import UNKEYED_SEAL_MISMATCH, verify_rows
from approvals.models import DecisionLogEntry
from approvals.selectors import VERIFY_COLUMNS
from approvals.services import decision_log_append

from .test_migrate_zero import _run, scratch_env  # noqa: F401  (the fixture)


def test_an_upgrade_from_the_first_round_keeps_every_log_verifying_without_any_setting(scratch_env):  # noqa: F811
    env = {k: v for k, v in scratch_env.items() if k not in {"NOVELGRAPH_SEAL_KEY", "NOVELGRAPH_SEAL_OLD_KEYS"}}
    env["DJANGO_SECRET_KEY"] = "the-first-round-ran-with-this-" + secrets.token_hex(8)
    result, lines = _run(env, "tests.migrate_first_round")
    assert result.returncode == 0 and lines, result.stdout[-2000:] + result.stderr[-3000:]
    report = lines[-1]
    assert report["seal key configured"] is False and report["old keys"] == 0
    assert len(report["books"]) == 2
    for verification in report["books"].values():
        assert verification["ok"], verification
        assert verification["entries"] == 3 and verification["anchored_sequence"] == 3
    # Half-way (the other apps migrated, the log's table not yet): no false "altered outside the migrations".
    assert report["checks half-way"] == []
    assert "not migrated yet" in report["verified half-way"] and "approvals.0011" in report["verified half-way"]
    assert "altered outside" not in report["migrate printed"] + report["verified half-way"]


def _rows_without_key_ids(book) -> list[tuple]:
    key_id_at = VERIFY_COLUMNS.index("seal_key_id")
    return [
        (*row[:key_id_at], "", *row[key_id_at + 1 :])
        for row in DecisionLogEntry.objects.filter(book=book).order_by("sequence").values_list(*VERIFY_COLUMNS)
    ]


@pytest.mark.django_db
def test_a_first_round_key_that_cannot_be_derived_any_more_gives_one_message_saying_what_to_set(book, author):
    old_secret = "the-secret-the-first-round-ran-with"
    with override_settings(DECISION_LOG_SEAL_KEY=f"seal:{old_secret}", DECISION_LOG_SEAL_OLD_KEYS=[]):
        decision_log_append(
            book=book, decision="approve", subject_type="note", subject_id="n", rationale="r", ratified_by_user=author
        )
    rows = _rows_without_key_ids(book)
    current = override_settings(DECISION_LOG_SEAL_KEY=secrets.token_hex(32), DECISION_LOG_SEAL_OLD_KEYS=[])
    with current, override_settings(DECISION_LOG_FIRST_ROUND_KEY=f"seal:{old_secret}"):
        assert verify_rows(book.pk, rows).ok, "the first round's key, derived from the same secret, verifies"
    with current, override_settings(DECISION_LOG_FIRST_ROUND_KEY="seal:a-new-secret"):
        result = verify_rows(book.pk, rows)
        assert not result.ok and result.reason == UNKEYED_SEAL_MISMATCH
        assert "NOVELGRAPH_SEAL_OLD_KEYS" in result.reason and "DJANGO_SECRET_KEY" in result.reason
    with (
        current,
        override_settings(
            DECISION_LOG_FIRST_ROUND_KEY="seal:a-new-secret", DECISION_LOG_SEAL_OLD_KEYS=[f"seal:{old_secret}"]
        ),
    ):
        assert verify_rows(book.pk, rows).ok, "setting what the message says is enough"


@pytest.mark.django_db
def test_the_first_round_key_never_vouches_for_an_entry_after_one_that_names_its_key(book, author):
    first_round = "seal:a-published-development-secret"
    with override_settings(DECISION_LOG_SEAL_KEY=secrets.token_hex(32), DECISION_LOG_FIRST_ROUND_KEY=first_round):
        for i in range(2):
            decision_log_append(
                book=book,
                decision="approve",
                subject_type="note",
                subject_id=f"n{i}",
                rationale="r",
                ratified_by_user=author,
            )
        rows = list(DecisionLogEntry.objects.filter(book=book).order_by("sequence").values_list(*VERIFY_COLUMNS))
        assert verify_rows(book.pk, rows).ok
        # Entry 2 rewritten as if the first round had sealed it: a blank key id after a keyed entry.
        key_id_at, seal_at, hash_at = (VERIFY_COLUMNS.index(c) for c in ("seal_key_id", "seal", "hash"))
        forged = list(rows[1])
        forged[key_id_at] = ""
        forged[seal_at] = hmac.new(first_round.encode(), forged[hash_at].encode(), hashlib.sha256).hexdigest()
        result = verify_rows(book.pk, [rows[0], tuple(forged)])
        assert not result.ok and result.first_bad_sequence == 2
