"""The decision log's seal key when none is configured: a random key kept in a file under var/.

Imported by settings (no Django imports here). The key is never derived from ``SECRET_KEY``
(whose development value is published in this repository) and never stored in the database:
whoever holds only the database file cannot compute a seal.

The file is created once, atomically (written to a temporary file, then hard-linked into place,
so two processes starting together agree on one key), readable by its owner only.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path

KEY_FILE_NAME = "seal.key"


def local_seal_key(var_dir: Path) -> str:
    """The local key in ``var_dir/seal.key``, generated (256 random bits, hex) on first use."""
    path = Path(var_dir) / KEY_FILE_NAME
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    tmp = path.with_name(f".{KEY_FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):  # another process created it first: its key wins
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return _read(path)


def _read(path: Path) -> str:
    key = path.read_text().strip()
    if not key:
        raise RuntimeError(f"{path} is empty: remove it to generate a new seal key, or set NOVELGRAPH_SEAL_KEY")
    return key


def key_id_of(key: str) -> str:
    """A short public name of a key: the first 12 hex digits of HMAC(key, "novelgraph seal key id").

    It names the key in each log entry without revealing it (a one-way, keyed digest)."""
    return hmac.new(key.encode(), b"novelgraph seal key id", hashlib.sha256).hexdigest()[:12]


def first_round_key(secret_key: str) -> str:
    """The seal key the first round derived when ``NOVELGRAPH_SEAL_KEY`` was unset: ``"seal:" + SECRET_KEY``.

    Its entries carry no key id (the ring came later). An upgrade keeps them verifying with this key by
    itself, as long as ``DJANGO_SECRET_KEY`` is the one that round ran with; it verifies only those entries
    (a blank key id at the start of a chain), never one sealed since."""
    return f"seal:{secret_key}"


def split_keys(value: str) -> list[str]:
    """``NOVELGRAPH_SEAL_OLD_KEYS``: older keys, comma-separated (keys themselves contain no commas)."""
    return [item.strip() for item in value.split(",") if item.strip()]
