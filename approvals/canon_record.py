"""What became canon, recorded in the log and checked against it.

When the author approves a charter, a claim or a research item, the log entry's ``detail``
carries ``canon``: the SHA-256 of the approved content (and, for a claim, its value). Hashed and
sealed with the entry, it cannot be changed unnoticed. Verification then checks every charter,
claim and research item that is approved (admitted) *now* against the log entry that approved it:
one set to approved without an approving entry, or whose content differs from what was approved,
fails verification. Each subject's app registers the one place that says what its "approved content" is
(a :class:`CanonKind`).

``canon digest = SHA-256(JSON of the fields below, sorted keys, compact, UTF-8)``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from .models import DecisionLogEntry

# The verdict that makes a proposal canon (proposal approvals take approve or reject only).
APPROVING = "approve"


def canon_digest(fields: dict) -> str:
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    # surrogatepass: a subject stored before the input rule (issue 30) still has a digest, the same each time.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CanonKind:
    subject_type: str  # as the log names it
    label: str
    # (subject id, the fields the digest covers, the value to record beside it or None)
    rows: Callable[[Any, list], Iterator[tuple[str, dict, Any]]]  # (book, ids or None)
    one_per_book: bool = False  # at most one approved at a time, and the latest approved (charters)
    exists: Callable[[Any, str], bool] | None = None  # one_per_book: is this subject of the book still there


# What can become canon, by the subject type its log entries name: filled by the apps that own those subjects
# (discovery's charters and claims, the library's research items) from their ``AppConfig.ready()``, in the order
# verification checks them.
CANON: dict[str, CanonKind] = {}


def register_canon_kind(kind: CanonKind) -> None:
    CANON[kind.subject_type] = kind


def canon_record(subject_type: str, subject_id) -> dict | None:
    """What the log entry approving this subject carries as ``detail["canon"]`` (None: not a canon subject,
    or not approved)."""
    kind = CANON.get(subject_type)
    if kind is None:
        return None
    try:
        rows = list(kind.rows(None, [subject_id]))
    except (ValueError, ValidationError):
        return None
    for _pk, fields, value in rows:
        record = {"digest": canon_digest(fields)}
        if value is not None or subject_type == "claim":
            record["value"] = value
        return record
    return None


def canon_verify(book) -> tuple[int, str | None]:
    """Check every approved charter, claim and research item of the book against the entry that approved it.

    Returns (how many were checked, the first failure or None). An approving entry written before
    the log carried ``canon`` (an old log) shows that the subject was approved, not what it said.
    Reads only the approving entries of what is approved now (by subject, indexed), so its cost
    follows the book's canon, not the length of its log.
    """
    checked = 0
    for subject_type, kind in CANON.items():
        current = {pk: fields for pk, fields, _value in kind.rows(book, None)}
        approving: dict[str, dict] = {}
        ids = list(current)
        for at in range(0, len(ids), 500):
            # The latest approving entry of each subject, in any book's log (a series claim may have been
            # approved through a sibling book; each log verifies on its own).
            entries = DecisionLogEntry.objects.filter(
                subject_type=subject_type, decision=APPROVING, subject_id__in=ids[at : at + 500]
            )
            # What the entry approved is read from its hashed text.
            for text in entries.order_by("sequence").values_list("entry", flat=True):
                said = json.loads(text)
                approving[said["subject_id"]] = said["detail"]
        for pk, fields in current.items():
            checked += 1
            detail = approving.get(pk)
            if detail is None:
                return checked, f"{kind.label} {pk} is approved but no log entry approves it"
            recorded = detail.get("canon")
            if recorded is not None and recorded.get("digest") != canon_digest(fields):
                return checked, f"{kind.label} {pk} differs from what its log entry approved"
        if kind.one_per_book:
            if len(current) > 1:
                return checked, f"{len(current)} {kind.label}s are approved; the log approves one at a time"
            last_approved = (
                DecisionLogEntry.objects.filter(book=book, subject_type=subject_type, decision=APPROVING)
                .order_by("-sequence")
                .values_list("subject_id", flat=True)
                .first()
            )
            if last_approved is not None and last_approved not in current and kind.exists(book, last_approved):
                return checked, f"the log's latest approved {kind.label} {last_approved} is no longer approved"
    return checked, None
