"""A claim's history, as the codex shows it: every version of it, each with its provenance, its sources and
the decisions that made it canon, replaced it or retracted it (who, when, verdict, rationale, log entry).

The versions of a claim are the claims joined to it through ``revises`` (a revision replaces the claim it
revises when approved), whatever their status: the canon now, the values it replaced, a retraction, a
revision rejected or still proposed. Reads only, in a fixed number of queries whatever the length of the
history: the versions in one recursive query, their decisions in one, their sources one query per kind.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import connection
from django.db.models.expressions import RawSQL
from django.urls import reverse

from approvals.models import DecisionLogEntry, Verdict
from novelgraph.core.errors import NotFound
from novelgraph.core.pagination import rest_link

from .access import BookAccess
from .models import KnowledgeClaim
from .refs import resolve_source_refs
from .selectors import SCOPE_READ_CAP, VIEW_PAGE, MappedRows, book_bases, canon_bases, codex_base
from .services.claims import CLAIM_SUBJECT

VERSION_COLUMNS = (
    "id",
    "base_id",
    "subject",
    "predicate",
    "value",
    "provenance",
    "status",
    "proposed_by",
    "source_refs",
    "revises_id",
    "approval_id",
    "true_from_chapter",
    "true_until_chapter",
    "created_at",
)

# What a decision did to the claim it names, in plain words.
DECISION_EFFECT = {
    Verdict.APPROVE: "made it canon",
    Verdict.APPROVE_WITH_CONSTRAINT: "made it canon, with a constraint",
    Verdict.REJECT: "rejected it",
    Verdict.ABANDON: "retracted it from canon",
}


def _lineage_sql() -> str:
    """The ids of every claim joined to one claim through ``revises``: up to the first version, then
    down from it through every revision (SQLite and PostgreSQL both run ``WITH RECURSIVE`` in a subquery)."""
    table = connection.ops.quote_name(KnowledgeClaim._meta.db_table)
    return (
        f"WITH RECURSIVE up(id, revises_id) AS ("
        f"SELECT id, revises_id FROM {table} WHERE id = %s "
        f"UNION SELECT c.id, c.revises_id FROM {table} c JOIN up ON c.id = up.revises_id), "
        f"down(id) AS (SELECT id FROM up WHERE revises_id IS NULL "
        f"UNION SELECT c.id FROM {table} c JOIN down ON c.revises_id = down.id) "
        f"SELECT id FROM down"
    )


def _link(book_id, claim_id, route: str) -> str:
    """A paged route of the history from its second page (``limit`` and ``offset`` one page each)."""
    return rest_link(f"books/{book_id}/codex/claims/{claim_id}/{route}")


def _decision(entry: dict, book, log_url: str) -> dict:
    here = entry["book_id"] == book.pk
    return {
        "sequence": entry["sequence"],
        "ts": entry["ts"],
        "decision": entry["decision"],
        "effect": DECISION_EFFECT.get(entry["decision"], entry["decision"]),
        "ratified_by": entry["ratified_by"],
        "rationale": entry["rationale"],
        "in_this_book": here,
        # Links into this book's log and review pages only; another book's stay closed.
        "approval_id": str(entry["approval_id"]) if here and entry["approval_id"] else None,
        "log_url": f"{log_url}?entry={entry['sequence']}#entry-{entry['sequence']}" if here else None,
    }


DECISION_COLUMNS = ("subject_id", "book_id", "sequence", "ts", "decision", "ratified_by", "rationale", "approval_id")


def _readable_bases(access: BookAccess) -> dict:
    return {b["id"]: b for b in canon_bases(book_bases(access.book)) if SCOPE_READ_CAP[b["scope"]] in access.caps}


def _wanted(claim_id: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(claim_id))
    except ValueError:
        raise NotFound("claim not found") from None


def _lineage(access: BookAccess, claim_id: Any) -> tuple[uuid.UUID, dict, list[dict]]:
    """The claim asked for, the readable canon bases and every version of its lineage (one recursive query)."""
    wanted = _wanted(claim_id)
    bases = _readable_bases(access)
    param = KnowledgeClaim._meta.pk.get_db_prep_value(wanted, connection)
    rows = list(
        KnowledgeClaim.objects.filter(pk__in=RawSQL(_lineage_sql(), [param]), base_id__in=list(bases))
        .order_by("created_at", "id")
        .values(*VERSION_COLUMNS)
    )
    if not any(row["id"] == wanted for row in rows):
        raise NotFound("claim not found")
    return wanted, bases, rows


def _numbering(rows: list[dict]) -> tuple[dict[str, int], dict[str, list[int]]]:
    """Each version's number in the lineage (1 = the first proposed), and the numbers of the versions that
    revise each one."""
    number = {str(row["id"]): i for i, row in enumerate(rows, start=1)}
    revised_by: dict[str, list[int]] = {}
    for row in rows:
        if row["revises_id"]:
            revised_by.setdefault(str(row["revises_id"]), []).append(number[str(row["id"])])
    return number, revised_by


def claim_history(access: BookAccess, claim_id: Any, offset: int | None = 0) -> dict:
    """One claim of the book's canon bases that the reader's role may read, with a page of its history.

    404 for a claim outside those bases (another book's, literary guidance, or series canon for a role
    without series:read): nobody learns it exists. ``versions`` are a page (``VIEW_PAGE``, from ``offset``;
    None: the newest page, pages counted from the first version) of the versions in the order they were
    proposed, each numbered, with what it revises and what revised it, its sources resolved for the reader
    and the first page of its decisions (log entries naming it, oldest first; ``decisions_count`` counts
    them, ``next.decisions`` pages the rest; one decided in another book of the series carries no link
    into that book). ``versions_count`` counts them all and ``next.versions`` is the paged route with the
    rest. ``canon`` is the version that is canon now, or None (retracted, or never canon). The queries are
    as many whatever the length of the history.
    """
    book = access.book
    wanted, bases, rows = _lineage(access, claim_id)
    total = len(rows)
    if offset is None:  # the newest page, of the pages from the first version (so pages never overlap)
        offset = (total - 1) // VIEW_PAGE * VIEW_PAGE
    offset = min(max(offset, 0), max(total - 1, 0))
    number, revised_by = _numbering(rows)
    page_rows = rows[offset : offset + VIEW_PAGE]
    canon_row = next((r for r in rows if r["status"] == KnowledgeClaim.Status.APPROVED), None)
    claim_row = next(r for r in rows if r["id"] == wanted)
    shown = {str(r["id"]): r for r in [*page_rows, *(r for r in (canon_row, claim_row) if r)]}
    versions = _versions(access, list(shown.values()), number, revised_by, wanted)
    by_id = {v["id"]: v for v in versions}
    claim = by_id[str(wanted)]
    more = offset + VIEW_PAGE < total
    return {
        "book_id": str(book.pk),
        "claim_id": claim["id"],
        "base": codex_base(bases[claim["base_id"]]),
        "subject": claim["subject"],
        "predicate": claim["predicate"],
        "canon": by_id[str(canon_row["id"])] if canon_row else None,
        "versions": [by_id[str(r["id"])] for r in page_rows],
        "versions_count": total,
        "offset": offset,
        "next": {"versions": _link(book.pk, claim["id"], "versions") if more and offset == 0 else None},
    }


def _versions(access: BookAccess, rows: list[dict], number: dict, revised_by: dict, wanted) -> list[dict]:
    """``rows`` as the history shows them: their decisions (one query, each capped at a page) and sources."""
    book = access.book
    ids = [str(row["id"]) for row in rows]
    entries = (
        DecisionLogEntry.objects.filter(subject_type=CLAIM_SUBJECT, subject_id__in=ids)
        .order_by("ts", "sequence")
        .values(*DECISION_COLUMNS)
    )
    log_url = reverse("approvals:book_log", args=[book.pk])
    decisions: dict[str, list[dict]] = {}
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry["subject_id"]] = counts.get(entry["subject_id"], 0) + 1
        if counts[entry["subject_id"]] <= VIEW_PAGE:
            decisions.setdefault(entry["subject_id"], []).append(_decision(entry, book, log_url))

    cited = {str(row["id"]): [r for r in row["source_refs"] or [] if isinstance(r, dict)] for row in rows}
    resolved = iter(resolve_source_refs(access, [ref for refs in cited.values() for ref in refs]))
    versions = []
    for row in rows:
        pk = str(row["id"])
        count = counts.get(pk, 0)
        versions.append(
            {
                **row,
                "id": pk,
                "base_id": str(row["base_id"]),
                "number": number[pk],
                "revises_id": str(row["revises_id"]) if row["revises_id"] else None,
                "revises_number": number.get(str(row["revises_id"])) if row["revises_id"] else None,
                # Capped: each version names what it revises, so the versions route lists every revision.
                "revised_by_numbers": revised_by.get(pk, [])[:VIEW_PAGE],
                "approval_id": str(row["approval_id"]) if row["approval_id"] else None,
                "source_refs": [next(resolved) for _ in cited[pk]],
                "decisions": decisions.get(pk, []),
                "decisions_count": count,
                "next": {"decisions": _link(book.pk, pk, "decisions") if count > VIEW_PAGE else None},
                "requested": pk == str(wanted),
            }
        )
    return versions


class ClaimVersions:
    """Every version of a claim's lineage, oldest first, for the API's pagination: ``len`` is the lineage's
    length, a slice builds those versions only (each page in the same few queries)."""

    def __init__(self, access: BookAccess, claim_id: Any):
        self.access = access
        self.wanted, _, self.rows = _lineage(access, claim_id)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: slice) -> list[dict]:
        number, revised_by = _numbering(self.rows)
        return _versions(self.access, self.rows[index], number, revised_by, self.wanted)


def claim_decisions(access: BookAccess, claim_id: Any):
    """Every decision naming one version of a claim the reader may read, oldest first (paged in SQL): the rest
    of a version's ``decisions``. 404 like the history."""
    wanted = _wanted(claim_id)
    if not KnowledgeClaim.objects.filter(pk=wanted, base_id__in=list(_readable_bases(access))).exists():
        raise NotFound("claim not found")
    book = access.book
    log_url = reverse("approvals:book_log", args=[book.pk])
    entries = (
        DecisionLogEntry.objects.filter(subject_type=CLAIM_SUBJECT, subject_id=str(wanted))
        .order_by("ts", "sequence")
        .values(*DECISION_COLUMNS)
    )
    return MappedRows(entries, lambda entry: _decision(entry, book, log_url))
