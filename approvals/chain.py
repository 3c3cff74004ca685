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
import re
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


# Verification recomputes every entry's canonical bytes, so it builds them directly: the
# keys of CHAIN_FIELDS in sorted order, each string through the JSON encoder's own string
# escaper (the one ``json.dumps(ensure_ascii=False)`` uses), the detail through one cached
# sorted encoder. The result is byte-for-byte ``canonical_bytes`` (tests/test_foundation.py
# checks it); it avoids building a dict and a JSONEncoder per entry, which made verification
# 7x slower than hashing alone (see bench/RESULTS.md).
_encode_string = json.encoder.encode_basestring
_encode_sorted = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode
assert tuple(sorted(CHAIN_FIELDS)) == (
    "book",
    "decision",
    "detail",
    "gate",
    "prev_hash",
    "ratified_by",
    "rationale",
    "reversibility_class",
    "sequence",
    "subject_id",
    "subject_type",
    "ts",
), "verify_rows writes the canonical keys in this order"


_SQLITE_TS = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{6})?")


def _ts_text(ts: datetime | str) -> str:
    """``format_ts`` for the values a database returns: aware, or naive in UTC (Django's SQLite
    storage), or SQLite's stored text itself ("YYYY-MM-DD HH:MM:SS[.ffffff]", UTC)."""
    if ts.__class__ is str:
        # A changed ts cannot pass for another: the text lands inside the hashed bytes either way.
        if len(ts) == 26 and ts[10] == " ":
            return f"{ts[:10]}T{ts[11:]}Z"
        if _SQLITE_TS.fullmatch(ts) is None:
            return format_ts(datetime.fromisoformat(ts).replace(tzinfo=UTC))
        return f"{ts[:10]}T{ts[11:]}.000000Z"
    if ts.tzinfo is not None:
        if ts.utcoffset():
            ts = ts.astimezone(UTC)
        if ts.year >= 1000:
            return ts.isoformat(timespec="microseconds")[:26] + "Z"  # drop the "+00:00"
        return format_ts(ts)
    if ts.year >= 1000:
        return ts.isoformat(timespec="microseconds") + "Z"
    return format_ts(ts.replace(tzinfo=UTC))  # strftime's %Y does not pad years below 1000


def _detail_text(detail) -> str:
    """The canonical JSON of ``detail or {}``; ``detail`` is a value or its JSON text (a raw database read)."""
    if detail.__class__ is str:
        if detail == "{}":
            return detail
        detail = json.loads(detail)
    return _encode_sorted(detail) if detail else "{}"


def _stored_detail(detail) -> str:
    """The detail as stored, when it is text: written canonically, it needs no re-encoding.

    Only a first guess: if the hash does not match, verify_rows re-encodes it and tries
    again, so a row stored before canonical storage (or on PostgreSQL, whose jsonb
    reorders keys) verifies exactly as the recipe says.
    """
    return detail if detail.__class__ is str else _detail_text(detail)


def verify_rows(book_id, rows) -> Verification:
    """Recompute a chain from rows in sequence order and name the first entry that fails.

    ``rows`` yields tuples (sequence, ts, gate, decision, subject_type, subject_id,
    ratified_by, reversibility_class, rationale, detail, prev_hash, hash, seal); ``ts``
    may be aware or naive UTC and ``detail`` a value or its JSON text, so a raw cursor
    can feed it without the ORM's per-row conversions.
    """
    expected_prev = GENESIS_HASH
    expected_sequence = 1
    count = 0
    # One keyed HMAC state, copied per entry: the same HMAC-SHA256 without re-keying each time.
    sealer = hmac.new(settings.DECISION_LOG_SEAL_KEY.encode(), digestmod=hashlib.sha256)
    book_json = _encode_string(str(book_id))
    sha256 = hashlib.sha256
    compare = hmac.compare_digest
    enc = _encode_string
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
        # prev_hash equals the previous entry's verified hex hash (checked above): no escaping needed.
        canonical = (
            f'{{"book":{book_json},"decision":{enc(decision)},'
            f'"detail":{"{}" if detail == "{}" else _stored_detail(detail)},'
            f'"gate":{"null" if gate is None else enc(gate)},"prev_hash":"{prev_hash}",'
            f'"ratified_by":{enc(ratified_by)},"rationale":{enc(rationale)},'
            f'"reversibility_class":{enc(reversibility)},"sequence":{sequence},'
            f'"subject_id":{enc(subject_id)},"subject_type":{enc(subject_type)},"ts":"{_ts_text(ts)}"}}'
        )
        recomputed = sha256(canonical.encode()).hexdigest()
        if recomputed != stored_hash and detail.__class__ is str and detail != "{}":
            # Stored text not in canonical form: re-encode it as the recipe says.
            canonical = canonical.replace(f'"detail":{detail},', f'"detail":{_detail_text(detail)},', 1)
            recomputed = sha256(canonical.encode()).hexdigest()
        if recomputed != stored_hash:
            return Verification(False, count, sequence, "hash does not match the entry's content")
        seal = sealer.copy()
        seal.update(stored_hash.encode())
        if not compare(seal.hexdigest(), stored_seal):
            return Verification(
                False,
                count,
                sequence,
                "seal does not match: the hash was not written by this server",
            )
        expected_prev = stored_hash
        expected_sequence += 1
    return Verification(True, count)
