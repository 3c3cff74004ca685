"""The decision log's hash recipe, in one place (documented in the README).

``hash = SHA-256(canonical(entry))`` where canonical is the JSON object of the
fields in ``CHAIN_FIELDS`` with keys sorted at every level, compact separators
(``,`` and ``:``), non-ASCII characters written as UTF-8 (not escaped); ``ts`` is
ISO 8601 UTC with microseconds and a ``Z``. The first entry's ``prev_hash`` is 64
zeros. ``seal = HMAC-SHA256(seal key, hash)``, hex, and ``seal_key_id`` names the key of the
ring that sealed it (not hashed: a wrong id only makes the seal fail to verify).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from novelgraph.sealkey import key_id_of

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


def seal_keys() -> dict[str, str]:
    """The key ring, id -> key: the current key (``NOVELGRAPH_SEAL_KEY``) first, then the older ones.

    New entries are sealed with the current key and record its id (``seal_key_id``); an entry
    sealed by an older key verifies with that key while it stays in the ring."""
    ring = {key_id_of(settings.DECISION_LOG_SEAL_KEY): settings.DECISION_LOG_SEAL_KEY}
    for key in getattr(settings, "DECISION_LOG_SEAL_OLD_KEYS", ()):
        ring.setdefault(key_id_of(key), key)
    return ring


def current_key_id() -> str:
    return key_id_of(settings.DECISION_LOG_SEAL_KEY)


def seal_matches(hash_hex: str, seal: str, key_id: str = "") -> bool:
    """Whether ``seal`` is the seal of ``hash_hex`` by the ring's key ``key_id`` (any ring key when blank)."""
    ring = seal_keys()
    keys = [ring[key_id]] if key_id in ring else ([] if key_id else list(ring.values()))
    return any(hmac.compare_digest(seal_of(hash_hex, key), seal) for key in keys)


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
    # The newest entry's hash, and the hash at ``verify_rows(checkpoint=...)`` (the anchored tip).
    tip_hash: str | None = None
    checkpoint_hash: str | None = None
    # The sequence the tip anchor outside the database records (None: no anchor for this book).
    anchored_sequence: int | None = None
    # How many approved charters, claims and research items were checked against the log.
    canon_checked: int = 0

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "entries": self.entries,
            "first_bad_sequence": self.first_bad_sequence,
            "reason": self.reason,
            "anchored_sequence": self.anchored_sequence,
            "canon_checked": self.canon_checked,
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


def _with_key_ids(rows):
    """Rows of 14 columns as they are (no per-row cost); rows of 13 (no ``seal_key_id``) with a blank one."""
    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return ()
    if len(first) == 14:
        return itertools.chain((first,), rows)
    return ((*row, "") for row in itertools.chain((first,), rows))


def verify_rows(book_id, rows, *, checkpoint: int | None = None) -> Verification:
    """Recompute a chain from rows in sequence order and name the first entry that fails.

    ``rows`` yields tuples (sequence, ts, gate, decision, subject_type, subject_id,
    ratified_by, reversibility_class, rationale, detail, prev_hash, hash, seal, seal_key_id);
    ``ts`` may be aware or naive UTC and ``detail`` a value or its JSON text, so a raw cursor
    can feed it without the ORM's per-row conversions. ``seal_key_id`` may be left out (13
    columns) or blank (entries sealed before the key ring): any key of the ring then verifies.
    The result carries the hash of entry ``checkpoint`` (the anchored tip) and of the newest entry.
    """
    expected_prev = GENESIS_HASH
    expected_sequence = 1
    count = 0
    checkpoint_hash = None
    # One keyed HMAC state per key of the ring, copied per entry: HMAC-SHA256 without re-keying each time.
    ring = {kid: hmac.new(key.encode(), digestmod=hashlib.sha256) for kid, key in seal_keys().items()}
    current = next(iter(ring))
    sealer = ring[current]
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
        kid,
    ) in _with_key_ids(rows):
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
        if kid == current:
            seal = sealer.copy()
            seal.update(stored_hash.encode())
            sealed = compare(seal.hexdigest(), stored_seal)
        elif kid in ring:
            seal = ring[kid].copy()
            seal.update(stored_hash.encode())
            sealed = compare(seal.hexdigest(), stored_seal)
        elif kid:
            return Verification(
                False,
                count,
                sequence,
                f"sealed by key {kid}, which is not in the seal key ring (NOVELGRAPH_SEAL_OLD_KEYS)",
            )
        else:  # sealed before the key ring recorded key ids: any key of the ring
            sealed = False
            for each in ring.values():
                seal = each.copy()
                seal.update(stored_hash.encode())
                sealed = sealed or compare(seal.hexdigest(), stored_seal)
        if not sealed:
            return Verification(
                False,
                count,
                sequence,
                "seal does not match: the hash was not written by this server",
            )
        if sequence == checkpoint:
            checkpoint_hash = stored_hash
        expected_prev = stored_hash
        expected_sequence += 1
    return Verification(True, count, tip_hash=None if count == 0 else expected_prev, checkpoint_hash=checkpoint_hash)
