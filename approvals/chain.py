"""The decision log's hash recipe, in one place (documented in the README).

``hash = SHA-256(canonical(entry))`` where canonical is the JSON object of the
fields in ``CHAIN_FIELDS`` with keys sorted at every level, compact separators
(``,`` and ``:``), non-ASCII characters written as UTF-8 (not escaped); ``ts`` is
ISO 8601 UTC with microseconds and a ``Z``. The first entry's ``prev_hash`` is 64
zeros. ``seal = HMAC-SHA256(server secret, hash)``, hex.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

GENESIS_HASH = "0" * 64
CHAIN_FIELDS = (
    "book",
    "sequence",
    "ts",
    "gate",
    "decision",
    "subject_type",
    "subject_id",
    "ratified_by",
    "reversibility_class",
    "rationale",
    "detail",
    "prev_hash",
)


def format_ts(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical_bytes(fields: dict) -> bytes:
    ordered = {name: fields[name] for name in CHAIN_FIELDS}
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


def entry_hash(fields: dict) -> str:
    return hashlib.sha256(canonical_bytes(fields)).hexdigest()


def seal_of(hash_hex: str, key: str | None = None) -> str:
    secret = (key or settings.DECISION_LOG_SEAL_KEY).encode()
    return hmac.new(secret, hash_hex.encode(), hashlib.sha256).hexdigest()


def chain_fields(
    *,
    book_id,
    sequence,
    ts,
    gate,
    decision,
    subject_type,
    subject_id,
    ratified_by,
    reversibility_class,
    rationale,
    detail,
    prev_hash,
) -> dict:
    return {
        "book": str(book_id),
        "sequence": sequence,
        "ts": format_ts(ts),
        "gate": gate,
        "decision": decision,
        "subject_type": subject_type,
        "subject_id": str(subject_id),
        "ratified_by": ratified_by,
        "reversibility_class": reversibility_class,
        "rationale": rationale,
        "detail": detail or {},
        "prev_hash": prev_hash,
    }


@dataclass(frozen=True)
class Verification:
    ok: bool
    entries: int
    first_bad_sequence: int | None = None
    reason: str | None = None

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "entries": self.entries,
            "first_bad_sequence": self.first_bad_sequence,
            "reason": self.reason,
        }


def verify_rows(book_id, rows) -> Verification:
    """Recompute a chain from rows in sequence order and name the first entry that fails.

    ``rows`` yields tuples (sequence, ts, gate, decision, subject_type, subject_id,
    ratified_by, reversibility_class, rationale, detail, prev_hash, hash, seal).
    """
    expected_prev = GENESIS_HASH
    expected_sequence = 1
    count = 0
    secret = settings.DECISION_LOG_SEAL_KEY.encode()
    book = str(book_id)
    sha256 = hashlib.sha256
    hmac_new = hmac.new
    for (
        sequence,
        ts,
        gate,
        decision,
        subject_type,
        subject_id,
        ratified_by,
        reversibility,
        rationale,
        detail,
        prev_hash,
        stored_hash,
        stored_seal,
    ) in rows:
        count += 1
        if sequence != expected_sequence:
            return Verification(
                False,
                count,
                sequence,
                f"expected sequence {expected_sequence}, found {sequence}",
            )
        if prev_hash != expected_prev:
            return Verification(
                False,
                count,
                sequence,
                "prev_hash does not match the previous entry's hash",
            )
        fields = {
            "book": book,
            "sequence": sequence,
            "ts": format_ts(ts),
            "gate": gate,
            "decision": decision,
            "subject_type": subject_type,
            "subject_id": subject_id,
            "ratified_by": ratified_by,
            "reversibility_class": reversibility,
            "rationale": rationale,
            "detail": detail or {},
            "prev_hash": prev_hash,
        }
        recomputed = sha256(
            json.dumps(fields, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
        ).hexdigest()
        if recomputed != stored_hash:
            return Verification(False, count, sequence, "hash does not match the entry's content")
        if not hmac.compare_digest(hmac_new(secret, stored_hash.encode(), sha256).hexdigest(), stored_seal):
            return Verification(
                False,
                count,
                sequence,
                "seal does not match: the hash was not written by this server",
            )
        expected_prev = stored_hash
        expected_sequence += 1
    return Verification(True, count)
