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
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from novelgraph.core.sealkey import first_round_key, key_id_of

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


def first_round_key_of_settings() -> str:
    """The key the first round derived from ``SECRET_KEY`` (``novelgraph.core.sealkey.first_round_key``)."""
    return getattr(settings, "DECISION_LOG_FIRST_ROUND_KEY", None) or first_round_key(settings.SECRET_KEY)


UNKEYED_SEAL_MISMATCH = (
    "seal does not match: the entry was sealed before seal keys had ids (the first round) and no key of the ring "
    "verifies it; put that round's key in NOVELGRAPH_SEAL_OLD_KEYS: its NOVELGRAPH_SEAL_KEY if one was set, "
    'otherwise "seal:" followed by the DJANGO_SECRET_KEY it ran with'
)


def current_key_id() -> str:
    return key_id_of(settings.DECISION_LOG_SEAL_KEY)


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
    # How many charters, claims and research items (decided by the log, or approved now) were checked against it.
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


def entry_text(fields: dict) -> str:
    """The canonical text of an entry: what the log stores (``DecisionLogEntry.entry``) and what its hash covers."""
    return canonical_bytes(fields).decode()


def _unlinked(entry: bytes, count: int) -> Verification:
    """Why the ``count``-th entry does not follow the one before it (the slow path: its text is parsed)."""
    try:
        sequence = json.loads(entry).get("sequence")
    except (ValueError, AttributeError):
        sequence = None
    if sequence != count:
        return Verification(False, count, count, f"expected sequence {count}, found {sequence}")
    return Verification(False, count, count, "prev_hash does not match the previous entry's hash")


def verify_rows(book_id, rows, *, checkpoint: int | None = None, pick=None) -> Verification:
    """Re-hash a chain from rows in sequence order and name the first entry that fails, by its place in the chain.

    ``rows`` yields tuples (prev_hash, entry, hash, seal, seal_key_id), the columns of
    ``approvals.selectors.VERIFY_COLUMNS``, in sequence order. ``entry`` is the stored canonical text (bytes, or
    str) and is hashed as it is: it is the only stored copy of what the entry says. ``prev_hash`` is the column
    the database generates from that text (``decision_log_verify`` checks that it still is). Each entry's text
    names its predecessor's hash, and the first entry's text names its book: so the chain is this book's, from
    its first entry on, and a deleted, replayed, reordered or foreign entry fails even though its hash and seal
    are its own. ``seal_key_id`` may be blank (entries sealed before the key ring): any key of the ring then
    verifies. The result carries the hash of entry ``checkpoint`` (the anchored tip) and of the newest entry.
    ``pick`` (optional): ``(test, into)``; each verified entry whose text ``test(text)`` accepts is appended to
    ``into`` as (sequence, text), so a later check reads what it needs from this one pass over the log.
    """
    expected_prev = GENESIS_HASH
    count = 0
    checkpoint_hash = None
    # One keyed HMAC state per key of the ring, copied per entry: HMAC-SHA256 without re-keying each time.
    ring = {kid: hmac.new(key.encode(), digestmod=hashlib.sha256) for kid, key in seal_keys().items()}
    current = next(iter(ring))
    sealer = ring[current]
    # Entries without a key id come first (the first round's, migration 0006): once an entry names its key,
    # none after it may go without, so the first round's derived key can never vouch for a new entry.
    first_round = hmac.new(first_round_key_of_settings().encode(), digestmod=hashlib.sha256)
    keyed = False
    head = ('{"book":' + json.dumps(str(book_id)) + ",").encode()
    sha256 = hashlib.sha256
    compare = hmac.compare_digest
    test, picked = pick if pick is not None else (None, None)
    for prev_hash, entry, stored_hash, stored_seal, kid in rows:
        count += 1
        if entry.__class__ is str:
            entry = entry.encode()
        if prev_hash != expected_prev:
            return _unlinked(entry, count)
        digest = sha256(entry).hexdigest()
        if digest != stored_hash:
            return Verification(False, count, count, "hash does not match the entry's content")
        # Every later entry names its predecessor's hash: the first one's book is the whole chain's.
        if count == 1 and not entry.startswith(head):
            return Verification(False, count, count, "the entry's text names another book")
        if kid == current:
            seal = sealer.copy()
            seal.update(digest.encode())
            sealed = compare(seal.hexdigest(), stored_seal)
        elif kid in ring:
            seal = ring[kid].copy()
            seal.update(digest.encode())
            sealed = compare(seal.hexdigest(), stored_seal)
        elif kid:
            return Verification(
                False,
                count,
                count,
                f"sealed by key {kid}, which is not in the seal key ring (NOVELGRAPH_SEAL_OLD_KEYS)",
            )
        elif keyed:
            return Verification(
                False, count, count, "an entry without a seal key id follows entries that have one: not written here"
            )
        else:  # sealed before the key ring recorded key ids: any key of the ring, or the first round's own key
            sealed = False
            for each in (*ring.values(), first_round):
                seal = each.copy()
                seal.update(digest.encode())
                sealed = sealed or compare(seal.hexdigest(), stored_seal)
            if not sealed:
                return Verification(False, count, count, UNKEYED_SEAL_MISMATCH)
        keyed = keyed or bool(kid)
        if not sealed:
            return Verification(False, count, count, "seal does not match: the hash was not written by this server")
        if count == checkpoint:
            checkpoint_hash = stored_hash
        if test is not None and test(entry):
            picked.append((count, entry))
        expected_prev = stored_hash
    return Verification(True, count, tip_hash=None if count == 0 else expected_prev, checkpoint_hash=checkpoint_hash)


def entry_sealed(entry: bytes | str, stored_hash: str, stored_seal: str, kid: str) -> bool:
    """Whether one entry's stored text hashes to its hash, sealed by a key of the ring (its chain's links are
    checked when its own book verifies): for reading a decision of another book's log on its own."""
    if isinstance(entry, str):
        entry = entry.encode()
    if hashlib.sha256(entry).hexdigest() != stored_hash:
        return False
    ring = seal_keys()
    keys = [ring[kid]] if kid in ring else ([] if kid else list(ring.values()))
    return any(hmac.compare_digest(seal_of(stored_hash, key), stored_seal) for key in keys)
