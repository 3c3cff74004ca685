"""The digest a subject is fingerprinted by: an approval stores it, and lapses once the subject's differs."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def fingerprint(value: Any) -> str:
    """A stable SHA-256 of any JSON-serialisable value (used as a subject digest)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
