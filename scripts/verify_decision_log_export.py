#!/usr/bin/env python3
"""Re-verify a NovelGraph decision-log export (JSON Lines) without NovelGraph.

Standard library only. For every line, in order, it checks that the sequence
counts up from 1, that ``prev_hash`` is the previous line's ``hash`` (64 zeros for
the first), and that ``hash`` is the SHA-256 of the canonical serialisation of the
hash-recipe fields. With ``--key`` (or the ``NOVELGRAPH_SEAL_KEY`` environment
variable and ``--check-seal``) it also checks each ``seal`` = HMAC-SHA256(key, hash);
``--key`` may be given once per key of the ring (each entry names its ``seal_key_id``).
The last line, ``{"tip": {...}}``, must name the last entry; with a key its seal
``HMAC-SHA256(key, "anchor:<book>:<sequence>:<hash>")`` is checked too.

    python scripts/verify_decision_log_export.py decision-log.jsonl [--key SECRET ...]

Exit status 0 when every entry verifies, 1 naming the first failing entry, 2 on
unreadable input.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import sys

GENESIS_HASH = "0" * 64
# The fields the hash covers (README, "The decision log").
RECIPE_FIELDS = (
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


def canonical(entry: dict) -> bytes:
    """JSON of the recipe fields: keys sorted at every level, no spaces, UTF-8 (not escaped)."""
    fields = {name: entry[name] for name in RECIPE_FIELDS}
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")


def key_id_of(key: str) -> str:
    return hmac.new(key.encode(), b"novelgraph seal key id", hashlib.sha256).hexdigest()[:12]


def _seal_ok(keys: dict[str, str], key_id: str, message: str, seal: str) -> bool:
    candidates = [keys[key_id]] if key_id in keys else ([] if key_id else list(keys.values()))
    return any(
        hmac.compare_digest(hmac.new(k.encode(), message.encode(), hashlib.sha256).hexdigest(), str(seal))
        for k in candidates
    )


def verify(lines, key: str | list[str] | None = None) -> tuple[bool, int, int | None, str | None]:
    """(ok, entries, first_bad_sequence, reason) for an iterable of JSON Lines."""
    expected_prev = GENESIS_HASH
    expected_sequence = 1
    count = 0
    book = None
    given = [key] if isinstance(key, str) else list(key or [])
    keys = {key_id_of(k): k for k in given}
    tip = None
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except json.JSONDecodeError:
            entry = None
        if not isinstance(entry, dict):
            return False, count, None, f"line {number} is not a JSON object"
        if tip is not None:
            return False, count, None, f"line {number} follows the tip line"
        if set(entry) == {"tip"} and isinstance(entry["tip"], dict):
            tip = entry["tip"]
            if tip.get("sequence") != count or tip.get("hash") != (expected_prev if count else None):
                return False, count, tip.get("sequence"), "the tip line does not name the last entry"
            message = f"anchor:{tip.get('book')}:{tip.get('sequence')}:{tip.get('hash')}"
            if tip.get("book") != book:
                return False, count, tip.get("sequence"), "the tip line names another book"
            if keys and not _seal_ok(keys, str(tip.get("key_id") or ""), message, tip.get("seal")):
                return False, count, tip.get("sequence"), "the tip seal does not match: not written with these keys"
            continue
        missing = [name for name in (*RECIPE_FIELDS, "hash", "seal") if name not in entry]
        if missing:
            return False, count, entry.get("sequence"), f"line {number} lacks {', '.join(missing)}"
        count += 1
        sequence = entry["sequence"]
        if book is None:
            book = entry["book"]
        if entry["book"] != book:
            return False, count, sequence, "the entry belongs to another book"
        if sequence != expected_sequence:
            return False, count, sequence, f"expected sequence {expected_sequence}, found {sequence}"
        if entry["prev_hash"] != expected_prev:
            return False, count, sequence, "prev_hash does not match the previous entry's hash"
        if hashlib.sha256(canonical(entry)).hexdigest() != entry["hash"]:
            return False, count, sequence, "hash does not match the entry's content"
        if keys and not _seal_ok(keys, str(entry.get("seal_key_id") or ""), entry["hash"], entry["seal"]):
            return False, count, sequence, "seal does not match: the hash was not written with this key"
        expected_prev = entry["hash"]
        expected_sequence += 1
    return True, count, None, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", help="the .jsonl file (- for standard input)")
    parser.add_argument("--key", action="append", help="a seal key, to check the HMAC seals too (repeatable)")
    parser.add_argument(
        "--check-seal", action="store_true", help="check the seals with the key in $NOVELGRAPH_SEAL_KEY"
    )
    args = parser.parse_args(argv)
    key = args.key
    if key is None and args.check_seal:
        key = [k for k in [os.environ.get("NOVELGRAPH_SEAL_KEY")] if k]
        if not key:
            print("--check-seal needs NOVELGRAPH_SEAL_KEY in the environment", file=sys.stderr)
            return 2
    try:
        handle = sys.stdin if args.export == "-" else open(args.export, encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        print(f"cannot read {args.export}: {exc}", file=sys.stderr)
        return 2
    with handle:
        ok, entries, bad, reason = verify(handle, key)
    seals = "hashes and seals" if key else "hashes (seals not checked: no key)"
    if ok:
        print(f"ok: {entries} entries verified ({seals})")
        return 0
    print(f"BROKEN at entry {bad}: {reason} ({entries} entries read)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
