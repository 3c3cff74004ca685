"""The decision log's tip, anchored outside the database.

A hash chain shows any change to its entries, but not that its newest entries were cut off
(the remaining chain is still whole). So every committed entry is also appended to a file
outside the database, one per book::

    <DECISION_LOG_ANCHOR_DIR>/<database>/<book id>.jsonl

one JSON line per entry: ``{"book", "sequence", "hash", "key_id", "seal"}`` where
``seal = HMAC-SHA256(seal key, "anchor:" + book + ":" + sequence + ":" + hash)``. The file is only
ever appended to (``O_APPEND``, fsync after each line). Verification reads its last line: the
database's chain must hold that entry with that hash, so a cut tip, a rewritten tip, or an
older copy of the database put in its place is named. The anchor may lag the database by the
entries of a crash between commit and append (it is written once the transaction commits); it is
never ahead of a committed log, since SQLite's synchronous=FULL makes the commit durable first.

What it cannot see (SECURITY.md): someone who can also write this file can truncate it together
with the log. Keep exported logs (each ends with its tip seal) or copies of this directory elsewhere.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection

from .chain import current_key_id, seal_keys

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def anchor_dir(using_connection=None) -> Path:
    """The anchors of this database: a subdirectory of ``DECISION_LOG_ANCHOR_DIR`` named after it."""
    conn = using_connection or connection
    params = conn.settings_dict
    if conn.vendor == "sqlite":
        label = f"sqlite-{Path(str(params['NAME'])).name}"
    else:
        label = f"{conn.vendor}-{params.get('HOST') or 'local'}-{params.get('PORT') or ''}-{params['NAME']}"
    return Path(settings.DECISION_LOG_ANCHOR_DIR) / _UNSAFE.sub("_", label)


def anchor_path(book_id, using_connection=None) -> Path:
    return anchor_dir(using_connection) / f"{book_id}.jsonl"


def anchor_seal(book_id, sequence: int, hash_hex: str, key: str, *, reanchor: bool = False) -> str:
    message = f"{'reanchor:' if reanchor else ''}anchor:{book_id}:{sequence}:{hash_hex}".encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()


def anchor_line(book_id, sequence: int, hash_hex: str, *, reanchor: bool = False) -> dict:
    """One anchor line. A re-anchoring line's seal covers ``"reanchor:"`` too, so an ordinary line's seal
    cannot be replayed as one."""
    line = {
        "book": str(book_id),
        "sequence": sequence,
        "hash": hash_hex,
        "key_id": current_key_id(),
        "seal": anchor_seal(book_id, sequence, hash_hex, settings.DECISION_LOG_SEAL_KEY, reanchor=reanchor),
    }
    if reanchor:
        line["reanchor"] = True
    return line


def anchor_append(book_id, sequence: int, hash_hex: str, using_connection=None, *, reanchor: bool = False) -> None:
    """Append the book's new tip to its anchor file and sync it to disk."""
    path = anchor_path(book_id, using_connection)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = anchor_line(book_id, sequence, hash_hex, reanchor=reanchor)
    data = (json.dumps(line, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def anchor_after_commit(book_id, sequence: int, hash_hex: str) -> None:
    """Anchor the entry once the deciding transaction commits (never for a rolled-back one)."""
    from django.db import transaction

    conn = connection

    def write() -> None:
        anchor_append(book_id, sequence, hash_hex, conn)

    transaction.on_commit(write, robust=True)


@dataclass(frozen=True)
class Anchor:
    sequence: int
    hash: str
    valid: bool  # its seal verifies with a key of the ring


def anchor_tip(book_id, using_connection=None) -> Anchor | None:
    """The newest anchored entry of the book (the highest sequence among its file's last lines), or None."""
    path = anchor_path(book_id, using_connection)
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 4096))
            tail = handle.read()
    except FileNotFoundError:
        return None
    lines = tail.splitlines()
    if size > 4096:
        lines = lines[1:]  # the chunk may start inside a line
    # The newest anchored entry is the highest sequence among the last lines: two servers' processes may
    # append two consecutive tips in either order (each after its own commit).
    # A line that does not parse (torn by a crash mid-append) carries no seal and is skipped. A re-anchoring
    # line (``verify_decision_log --reanchor`` after a deliberate restore) supersedes the lines before it.
    parsed = []
    for raw in lines:
        try:
            line = json.loads(raw)
            entry = (int(line["sequence"]), line)
        except (ValueError, KeyError, TypeError):
            continue
        if line.get("reanchor"):
            parsed = []
        parsed.append(entry)
    if not parsed:
        return None
    sequence, line = max(parsed, key=lambda item: item[0])
    try:
        hash_hex, key_id, seal = str(line["hash"]), line["key_id"], line["seal"]
    except (KeyError, TypeError):
        return Anchor(sequence, "", False)
    key = seal_keys().get(key_id)
    valid = (
        key is not None
        and str(line.get("book")) == str(book_id)
        and hmac.compare_digest(
            anchor_seal(book_id, sequence, hash_hex, key, reanchor=bool(line.get("reanchor"))), str(seal)
        )
    )
    return Anchor(sequence, hash_hex, valid)
