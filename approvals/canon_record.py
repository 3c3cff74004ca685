"""What became canon, recorded in the log and checked against it.

When the author approves a charter, a claim or a research item, the log entry's ``detail``
carries ``canon``: the SHA-256 of the approved content (and, for a claim, its value) and the recipe
that digest follows. Hashed and sealed with the entry, it cannot be changed unnoticed.

Verification replays the log's canon history (:func:`canon_verify`): for every subject the log ever
decided (approved, rejected, retracted, revised, superseded), the subject must still exist and be in the
state the log's *last* decision on it left it in; what it approved must still say what was digested; and
every subject approved *now* must have the entry that approved it. Each subject's app registers the one
place that says what its "approved content" is and what its log entries decide (a :class:`CanonKind`).

``canon digest = SHA-256(JSON of the fields below, sorted keys, compact, UTF-8)``. The fields a kind's
digest covers grew with the recipe: ``detail.canon.recipe`` names the one an entry followed (absent: 1),
and a field added later names the recipe that added it (``CanonKind.since``), so an entry written with an
older recipe still verifies against the fields it covered.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Q

from .chain import entry_sealed
from .models import DecisionLogEntry

# The verdict that makes a proposal canon (proposal approvals take approve or reject only).
APPROVING = "approve"
REJECTING = "reject"
# The canon digest's recipe: 1 until issue 24 (a claim's story record was not covered), 2 since.
CANON_RECIPE = 2
BATCH = 500


def canon_digest(fields: dict) -> str:
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    # surrogatepass: a subject stored before the input rule (issue 30) still has a digest, the same each time.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _generic_outcomes(kind: CanonKind, said: dict) -> Iterator[tuple[str, str]]:
    if said["decision"] == APPROVING:
        yield said["subject_id"], kind.approved
    elif said["decision"] == REJECTING:
        yield said["subject_id"], kind.rejected


@dataclass(frozen=True)
class CanonKind:
    subject_type: str  # as the log names it
    label: str
    # (subject id, the fields the digest covers, the value to record beside it or None)
    rows: Callable[[Any, list], Iterator[tuple[str, dict, Any]]]  # (book, ids or None)
    # The current status of each of these subjects that still exists (any book): {id: status}.
    statuses: Callable[[list], dict[str, str]]
    # The keys the detail of every entry deciding such a subject carries (the handler's own, and ``canon``):
    # what tells the subject's decisions from other entries naming its type.
    marks: tuple[str, ...]
    # The decisions its entries take (a claim's retraction is an abandon).
    decisions: tuple[str, ...] = (APPROVING, REJECTING)
    one_per_book: bool = False  # at most one approved at a time: approving one supersedes the one before
    approved: str = "approved"  # the subject's status once approved (research: admitted)
    rejected: str = "rejected"
    superseded: str = "superseded"  # one_per_book: the status of the one approved before
    # What one of its entries (the parsed hashed text) decides: (subject id, the status it leaves). Default:
    # approve -> approved, reject -> rejected.
    outcomes: Callable[[dict], Iterable[tuple[str, str]]] | None = None
    # Decided in more than one book's log (a series claim, through any book of the series).
    shared: bool = False
    # Subjects whose decisions may decide these ones too (a claim's revisions): {id: [their ids]}.
    related: Callable[[list], dict[str, list[str]]] | None = None
    # The recipe that added each digested field added after recipe 1.
    since: dict[str, int] = field(default_factory=dict)

    def decided(self, said: dict) -> Iterable[tuple[str, str]]:
        return self.outcomes(said) if self.outcomes is not None else _generic_outcomes(self, said)

    def digest(self, fields: dict, recipe: int) -> str:
        return canon_digest({k: v for k, v in fields.items() if self.since.get(k, 1) <= recipe})


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
        record = {"digest": kind.digest(fields, CANON_RECIPE), "recipe": CANON_RECIPE}
        if value is not None or subject_type == "claim":
            record["value"] = value
        return record
    return None


@dataclass
class _Decided:
    """The log's last decision on one subject: the status it left, where, and what its approval digested."""

    status: str
    sequence: int
    ts: str
    record: dict | None = None  # the approving entry's ``canon`` (None: not approved, or an old entry)
    foreign: bool = False  # decided last through another book's log (a series claim)


def _marked(kind: CanonKind) -> Q:
    """The entries that may decide a subject of this kind: its type, one of its decisions, and a mark's key in the
    text (a cheap superset, read before any JSON is parsed; :func:`_decides` then checks the parsed detail)."""
    text = Q()
    for mark in kind.marks:
        text |= Q(entry__contains=f'"{mark}":')
    return Q(subject_type=kind.subject_type, decision__in=list(kind.decisions)) & text


def _decides(kind: CanonKind, said: dict) -> bool:
    detail = said.get("detail")
    return isinstance(detail, dict) and any(mark in detail for mark in kind.marks)


def _replay(history: dict[str, dict[str, _Decided]], kind: CanonKind, said: dict, sequence: int, *, foreign=False):
    """Apply one entry's decisions to ``history`` (own entries in sequence order; a foreign one where it is the
    later by its timestamp)."""
    decided = history.setdefault(kind.subject_type, {})
    ts = said["ts"]
    for subject_id, status in kind.decided(said):
        before = decided.get(subject_id)
        if foreign and before is not None and before.ts >= ts:
            continue
        record = said["detail"].get("canon") if status == kind.approved and subject_id == said["subject_id"] else None
        now = _Decided(status, sequence, ts, record, foreign=foreign)
        if status == kind.approved and kind.one_per_book and not foreign:
            # Approving one (a charter version) supersedes the one approved before.
            for other_id, other in decided.items():
                if other.status == kind.approved and other_id != subject_id:
                    decided[other_id] = _Decided(kind.superseded, sequence, ts)
        decided[subject_id] = now


def _foreign(book, kind: CanonKind, ids: list[str], history) -> None:
    """The decisions other books' logs made on these subjects (a shared kind's), each entry's own hash and seal
    checked (its chain verifies with its own book)."""
    for at in range(0, len(ids), BATCH):
        rows = (
            DecisionLogEntry.objects.filter(_marked(kind), subject_id__in=ids[at : at + BATCH])
            .exclude(book=book)
            .values_list("entry", "hash", "seal", "seal_key_id")
        )
        entries = []
        for text, stored_hash, seal, kid in rows:
            if entry_sealed(text, stored_hash, seal, kid):
                said = json.loads(text)
                if _decides(kind, said):
                    entries.append(said)
        for said in sorted(entries, key=lambda s: (s["ts"], s["sequence"])):
            _replay(history, kind, said, said["sequence"], foreign=True)


def canon_picker(book_id) -> Callable[[bytes], bool]:
    """A cheap test of an entry's canonical text, for ``chain.verify_rows(pick=...)``: True for every entry of the
    book that may decide a canon subject (a canon kind's ``subject_type``, one of its decisions, and one of its
    marks' keys in the text), so the chain's one pass over the log also collects its canon history. A superset:
    :func:`_decides` decides. The keys are sorted, so the text starts with the book and the decision and ends
    with the subject type and ``ts`` (27 characters): both read in place, without scanning the text."""
    decision_at = len(('{"book":' + json.dumps(str(book_id)) + ',"decision":"').encode())
    ts_tail = len('"ts":"2026-01-01T00:00:00.000000Z"}')
    needle = b'"subject_type":"'
    start = len(needle)
    # The type's text -> (its decisions' texts, followed by their closing quote; its marks' keys).
    kinds = {
        kind.subject_type.encode(): (
            tuple(f'{decision}"'.encode() for decision in kind.decisions),
            tuple(f'"{mark}":'.encode() for mark in kind.marks),
        )
        for kind in CANON.values()
    }
    every_decision = tuple({decision for decisions, _marks in kinds.values() for decision in decisions})

    def test(entry: bytes) -> bool:
        if not entry.startswith(every_decision, decision_at):  # most entries: one call
            return False
        end = len(entry) - ts_tail
        if entry[end : end + 6] != b'"ts":"':  # not the recipe's usual timestamp: find the key
            end = entry.find(b'"ts":"', entry.rfind(needle))
        at = entry.rfind(needle, end - 64, end)
        found = kinds.get(entry[at + start : end - 2]) if at >= 0 else None
        if found is None or not entry.startswith(found[0], decision_at):
            return False
        return any(mark in entry for mark in found[1])

    return test


def canon_verify(book, picked: list | None = None) -> tuple[int, str | None]:
    """Replay the book's log's canon history and check every subject it decided, and every subject approved
    now, against it.

    Returns (how many subjects were checked, the first failure or None). An approving entry written before
    the log carried ``canon`` (an old log) shows that the subject was approved, not what it said. ``picked``:
    the log's entries that may decide canon, (sequence, text) in sequence order, as the chain's verification
    collected them (:func:`canon_picker`); without it they are read (those marked by their kind's handler).
    Then, per kind, batched: the subjects approved now, the status of the others and, for a kind decided in
    several books' logs, those logs' decisions on the same subjects. Beyond the chain's pass, its cost follows
    the book's canon, not the length of its log.
    """
    history: dict[str, dict[str, _Decided]] = {}
    if picked is None:  # not collected by the chain's pass: read them
        marked = Q()
        for kind in CANON.values():
            marked |= _marked(kind)
        own = DecisionLogEntry.objects.filter(marked, book=book).order_by("sequence").values_list("sequence", "entry")
        picked = own.iterator(chunk_size=2000) if CANON else []
    for sequence, text in picked:
        said = json.loads(text)
        kind = CANON.get(said["subject_type"])
        if kind is not None and _decides(kind, said):
            _replay(history, kind, said, sequence)
    checked = 0
    for subject_type, kind in CANON.items():
        decided = history.setdefault(subject_type, {})
        current = {pk: fields for pk, fields, _value in kind.rows(book, None)}
        if kind.shared:
            _foreign(book, kind, list(dict.fromkeys([*decided, *current])), history)
        statuses = {pk: kind.approved for pk in current}
        statuses.update(_statuses(kind, [pk for pk in decided if pk not in current]))
        # Statuses another subject's decision explains (a revision approved through a sibling book's log).
        wrong = [pk for pk, said in decided.items() if statuses.get(pk) not in (None, said.status)]
        if wrong and kind.related is not None:
            others = sorted({other for each in kind.related(wrong).values() for other in each} - set(decided))
            if others:
                _foreign(book, kind, others, history)
                statuses.update(_statuses(kind, [pk for pk in others if pk not in current]))
        # What the log approved that is approved but outside the book's canon now (a base no longer linked).
        outside = [pk for pk, said in decided.items() if pk not in current and statuses.get(pk) == said.status]
        content = dict(current)
        content.update(
            {
                pk: fields
                for pk, fields, _value in _rows(kind, [pk for pk in outside if decided[pk].status == kind.approved])
            }
        )
        for pk, said in decided.items():
            checked += 1
            status = statuses.get(pk)
            where = f"entry #{said.sequence}" if not said.foreign else "an entry of another book's log"
            if status is None:
                return checked, (
                    f"{kind.label} {pk} is gone from the database, but the log's last decision on it ({where}) "
                    f"left it {said.status}"
                )
            if status != said.status:
                return checked, (
                    f"{kind.label} {pk} is {status}, but the log's last decision on it ({where}) left it {said.status}"
                )
            record = said.record if status == kind.approved else None
            if record is not None and record.get("digest") != kind.digest(content.get(pk, {}), record.get("recipe", 1)):
                return checked, f"{kind.label} {pk} differs from what its log entry approved"
        for pk in current:
            if pk not in decided:
                return checked + 1, f"{kind.label} {pk} is approved but no log entry approves it"
        if kind.one_per_book and len(current) > 1:
            return checked, f"{len(current)} {kind.label}s are approved; the log approves one at a time"
    return checked, None


def _rows(kind: CanonKind, ids: list[str]) -> Iterator[tuple[str, dict, Any]]:
    for at in range(0, len(ids), BATCH):
        yield from kind.rows(None, ids[at : at + BATCH])


def _statuses(kind: CanonKind, ids: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for at in range(0, len(ids), BATCH):
        try:
            found.update(kind.statuses(ids[at : at + BATCH]))
        except (ValueError, ValidationError):
            # An id that is not one of this kind's (an entry naming no real subject): look one by one.
            for each in ids[at : at + BATCH]:
                with suppress(ValueError, ValidationError):
                    found.update(kind.statuses([each]))
    return found
