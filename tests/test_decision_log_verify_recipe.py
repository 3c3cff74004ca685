"""Verification hashes each entry's stored text as it is (issue 19): a text built with the recipe verifies byte
for byte, whatever it says, and anything changed in it, or an entry moved, is named by its sequence."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from approvals.chain import (
    GENESIS_HASH,
    canonical_bytes,
    chain_fields,
    current_key_id,
    entry_hash,
    entry_text,
    format_ts,
    seal_of,
    verify_rows,
)
from approvals.selectors import VERIFY_COLUMNS, decision_log_verify
from approvals.services import decision_log_append

BOOK = "6a0e0b5e-1f7a-4a8e-9d1c-3f0c8f1e2a11"
OTHER_BOOK = "0b7c3d1e-2f4a-4b5c-8d6e-7f8091a2b3c4"
AWKWARD_TEXT = [
    "plain",
    "naïve café, Zürich — “quoted” ‘single’",
    'a "double" quote and a \\ backslash',
    "tab\there, newline\nthere, nul\x00 and bell\x07",
    "line separator\u2028paragraph\u2029",
    "emoji 📚 and CJK 漢字",
    # The verifier finds the entry's own prev_hash and sequence in its text: a rationale naming them is escaped.
    f'says "prev_hash":"{"f" * 64}" and "sequence":7,',
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
    # Keys of the recipe inside the detail (which the text holds before the entry's own prev_hash and sequence).
    {"prev_hash": "e" * 64, "sequence": 99, "book": OTHER_BOOK},
]
TIMES = [
    datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC),
    datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC),  # no microseconds
    datetime(2026, 3, 4, 10, 36, 7, 5, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    datetime(2026, 3, 4, 5, 6, 7, 5),  # naive UTC, as Django's SQLite backend stores it
    datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
]
ENTRY, HASH, SEAL = (VERIFY_COLUMNS.index(name) for name in ("entry", "hash", "seal"))


def chain_of(book_id, variants):
    """Rows as the verifier reads them (``VERIFY_COLUMNS``, in their order) for a chain built with the recipe's
    own functions; the entry's text alternates between bytes (the server's read) and str (a plain driver's)."""
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
        stored = entry_text(fields)
        assert stored.encode() == canonical_bytes(fields), "the stored text is exactly the hashed bytes"
        digest = entry_hash(fields)
        columns = {
            "sequence": sequence,
            "prev_hash": prev,
            "entry": stored.encode() if sequence % 2 else stored,
            "hash": digest,
            "seal": seal_of(digest),
            "seal_key_id": current_key_id(),
        }
        rows.append([columns[name] for name in VERIFY_COLUMNS])
        prev = digest
    return rows


def text_of(row) -> bytes:
    return row[ENTRY] if isinstance(row[ENTRY], bytes) else row[ENTRY].encode()


def fields_of(row) -> dict:
    return json.loads(row[ENTRY])


def with_text(row, fields: dict) -> None:
    """Store ``fields`` as the row's text (canonically, so only what changed differs), its hash and seal kept."""
    row[ENTRY] = entry_text(fields).encode()


def variants():
    out = []
    for index, text in enumerate(AWKWARD_TEXT):
        for detail in DETAILS:
            out.append((TIMES[index % len(TIMES)], (None, "G1.5", "G0")[index % 3], text, detail))
    for ts in TIMES:
        out.append((ts, None, "times", {"at": "ts"}))
    return out


def test_verification_accepts_every_entry_built_with_the_recipe():
    rows = chain_of(BOOK, variants())

    result = verify_rows(BOOK, rows)

    assert result.ok, result
    assert result.entries == len(rows)
    assert {type(row[ENTRY]) for row in rows} == {bytes, str}
    assert result.tip_hash == rows[-1][HASH] == hashlib.sha256(text_of(rows[-1])).hexdigest()


CHANGES = {
    "gate": "G2",
    "decision": "reject",
    "subject_type": "claim!",
    "subject_id": "subject-x!",
    "ratified_by": "author:mallory",
    "reversibility_class": "irreversible",
    "rationale": "because!",
    "detail": {"tampered": True},
}


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_a_changed_field_anywhere_is_named_by_its_sequence(field):
    """The text is the only copy of what an entry says: a field changed in it, hash and seal kept, fails."""
    rows = chain_of(BOOK, variants())
    victim = rows[17]
    fields = fields_of(victim)
    assert fields[field] != CHANGES[field]
    with_text(victim, {**fields, field: CHANGES[field]})

    result = verify_rows(BOOK, rows)

    assert not result.ok
    assert result.first_bad_sequence == 18
    assert result.reason == "hash does not match the entry's content"


def test_a_re_spaced_text_of_the_same_fields_is_named_by_its_sequence():
    """The text is hashed as it is, not re-encoded: the same fields in another JSON form do not match the hash."""
    rows = chain_of(BOOK, variants())
    rows[9][ENTRY] = json.dumps(fields_of(rows[9]), sort_keys=True, ensure_ascii=False, indent=1)

    result = verify_rows(BOOK, rows)

    assert (result.ok, result.first_bad_sequence) == (False, 10)
    assert result.reason == "hash does not match the entry's content"


def test_a_shifted_timestamp_and_a_forged_seal_are_caught():
    rows = chain_of(BOOK, variants())
    fields = fields_of(rows[4])
    shifted = datetime.strptime(fields["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC) + timedelta(microseconds=1)
    with_text(rows[4], {**fields, "ts": format_ts(shifted)})
    result = verify_rows(BOOK, rows)
    assert (result.first_bad_sequence, result.reason) == (5, "hash does not match the entry's content")

    rows = chain_of(BOOK, variants())
    rows[6][SEAL] = seal_of(rows[6][HASH], key="another server")
    result = verify_rows(BOOK, rows)
    assert result.first_bad_sequence == 7
    assert "seal" in result.reason


def test_a_rehashed_text_without_the_seal_key_is_caught_by_the_seal():
    rows = chain_of(BOOK, variants())
    fields = {**fields_of(rows[11]), "rationale": "rewritten, and hashed again"}
    with_text(rows[11], fields)
    rows[11][HASH] = entry_hash(fields)

    result = verify_rows(BOOK, rows)

    assert result.first_bad_sequence == 12
    assert result.reason == "seal does not match: the hash was not written by this server"


def test_a_genuine_entry_moved_to_another_place_in_the_chain_is_named():
    """A replay: entry 3, its own text, hash and seal, stands at place 20; its text still says where it belongs."""
    rows = chain_of(BOOK, variants())
    rows[19] = list(rows[2])

    result = verify_rows(BOOK, rows)

    assert not result.ok
    assert (result.entries, result.first_bad_sequence) == (20, 20)  # named by its place, not by what it says
    assert result.reason == "expected sequence 20, found 3"


def test_a_deleted_entry_is_named():
    rows = chain_of(BOOK, variants())
    del rows[9]

    result = verify_rows(BOOK, rows)

    assert not result.ok
    assert (result.entries, result.first_bad_sequence) == (10, 10)
    assert result.reason == "expected sequence 10, found 11"


def test_an_entry_spliced_from_a_fork_of_the_chain_is_named():
    """A genuine entry of the same book at its own sequence, but from a chain that forked earlier."""
    rows = chain_of(BOOK, variants())
    forked = variants()
    forked[1] = (*forked[1][:2], "the other branch", forked[1][3])
    fork = chain_of(BOOK, forked)
    assert fields_of(fork[4])["sequence"] == 5 and fork[4][HASH] != rows[4][HASH]
    rows[4] = list(fork[4])

    result = verify_rows(BOOK, rows)

    assert not result.ok
    assert (result.entries, result.first_bad_sequence) == (5, 5)
    assert result.reason == "prev_hash does not match the previous entry's hash"


def test_an_entry_of_another_book_is_named():
    """Another book's entry at the same place, with its own hash and seal. Its first entry follows the same
    genesis hash as ours, so only its text's book tells it apart; a later one also has another predecessor."""
    rows = chain_of(BOOK, variants())
    theirs = chain_of(OTHER_BOOK, variants())

    first = verify_rows(BOOK, [list(theirs[0]), *rows[1:]])
    later = verify_rows(BOOK, [*rows[:3], list(theirs[3]), *rows[4:]])

    assert (first.ok, first.first_bad_sequence, first.reason) == (False, 1, "the entry's text names another book")
    assert (later.ok, later.first_bad_sequence) == (False, 4)
    assert later.reason == "prev_hash does not match the previous entry's hash"


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
