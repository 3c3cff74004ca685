"""Verification rebuilds each entry's canonical bytes directly (for speed); they must be the recipe's, byte for byte."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from approvals.chain import GENESIS_HASH, chain_fields, entry_hash, seal_of, verify_rows
from approvals.selectors import decision_log_verify
from approvals.services import decision_log_append

AWKWARD_TEXT = [
    "plain",
    "naïve café, Zürich — “quoted” ‘single’",
    'a "double" quote and a \\ backslash',
    "tab\there, newline\nthere, nul\x00 and bell\x07",
    "line separator\u2028paragraph\u2029",
    "emoji 📚 and CJK 漢字",
    "",
]
DETAILS = [
    {},
    None,
    {"constraint": "keep the ending open"},
    {"z": 1, "a": [3, 2, {"y": None, "b": True}], "m": {"é": 1.5, "A": "x"}},
    '{"z": 1, "a": {"d": 2, "c": "naïve"}}',  # JSON text, as a raw database read returns it
    "{}",
    "null",
]
TIMES = [
    datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC),
    datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC),  # no microseconds
    datetime(2026, 3, 4, 10, 36, 7, 5, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    datetime(2026, 3, 4, 5, 6, 7, 5),  # naive UTC, as Django's SQLite backend stores it
    datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
]


def chain_of(book_id, variants):
    """Rows (as the verifier reads them) for a chain built with the recipe's own functions."""
    rows, prev = [], GENESIS_HASH
    for sequence, (ts, gate, text, detail) in enumerate(variants, start=1):
        value = json.loads(detail) if isinstance(detail, str) else detail
        aware = ts if ts.tzinfo else ts.replace(tzinfo=UTC)
        fields = chain_fields(
            book_id=book_id,
            sequence=sequence,
            ts=aware,
            gate=gate,
            decision="approve",
            subject_type="claim",
            subject_id=f"subject-{text[:5]}",
            ratified_by=f"author:{text[:8]}",
            reversibility_class="reversible",
            rationale=text or "because",
            detail=value,
            prev_hash=prev,
        )
        digest = entry_hash(fields)
        rows.append(
            [
                sequence,
                ts,
                gate,
                "approve",
                "claim",
                fields["subject_id"],
                fields["ratified_by"],
                "reversible",
                fields["rationale"],
                detail,
                prev,
                digest,
                seal_of(digest),
            ]
        )
        prev = digest
    return rows


def variants():
    out = []
    for index, text in enumerate(AWKWARD_TEXT):
        for detail in DETAILS:
            out.append((TIMES[index % len(TIMES)], (None, "G1.5", "G0")[index % 3], text, detail))
    for ts in TIMES:
        out.append((ts, None, "times", {"at": "ts"}))
    return out


def test_verification_accepts_every_entry_built_with_the_recipe(settings):
    book_id = "6a0e0b5e-1f7a-4a8e-9d1c-3f0c8f1e2a11"
    rows = chain_of(book_id, variants())

    result = verify_rows(book_id, rows)

    assert result.ok, result
    assert result.entries == len(rows)


@pytest.mark.parametrize("column", [2, 3, 4, 5, 6, 7, 8, 9])
def test_a_changed_field_anywhere_is_named_by_its_sequence(column):
    book_id = "6a0e0b5e-1f7a-4a8e-9d1c-3f0c8f1e2a11"
    rows = chain_of(book_id, variants())
    victim = rows[17]
    original = victim[column]
    victim[column] = {"tampered": True} if column == 9 else ("G2" if column == 2 else f"{original}!")

    result = verify_rows(book_id, rows)

    assert not result.ok
    assert result.first_bad_sequence == 18
    assert result.reason == "hash does not match the entry's content"


def test_a_shifted_timestamp_and_a_forged_seal_are_caught():
    book_id = "6a0e0b5e-1f7a-4a8e-9d1c-3f0c8f1e2a11"
    rows = chain_of(book_id, variants())
    rows[4][1] = rows[4][1] + timedelta(microseconds=1)
    assert verify_rows(book_id, rows).first_bad_sequence == 5

    rows = chain_of(book_id, variants())
    rows[6][12] = seal_of(rows[6][11], key="another server")
    result = verify_rows(book_id, rows)
    assert result.first_bad_sequence == 7
    assert "seal" in result.reason


def test_entries_appended_with_awkward_text_verify_from_the_database(book, author):
    for index, text in enumerate(AWKWARD_TEXT[:-1]):
        detail = DETAILS[index % len(DETAILS)]
        decision_log_append(
            book=book,
            decision="approve",
            subject_type="claim",
            subject_id=f"s{index}",
            rationale=text.replace("\x00", "") or "because",
            ratified_by_user=author,
            gate=(None, "G1.5")[index % 2],
            detail=json.loads(detail) if isinstance(detail, str) else detail,
        )

    result = decision_log_verify(book)

    assert result.ok, result
    assert result.entries == len(AWKWARD_TEXT) - 1
