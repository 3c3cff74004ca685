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
from novelgraph.errors import NotFound

from .access import BookAccess
from .models import KnowledgeClaim
from .refs import resolve_source_refs
from .selectors import SCOPE_READ_CAP, book_bases, canon_bases, codex_base
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


def claim_history(access: BookAccess, claim_id: Any) -> dict:
    """One claim of the book's canon bases that the reader's role may read, with its whole history.

    404 for a claim outside those bases (another book's, literary guidance, or series canon for a role
    without series:read): nobody learns it exists. ``versions`` are in the order they were proposed, each
    numbered, with what it revises and what revised it, its sources resolved for the reader and its
    decisions (log entries naming it, oldest first; one decided in another book of the series carries no
    link into that book). ``canon`` is the version that is canon now, or None (retracted, or never canon).
    """
    try:
        wanted = uuid.UUID(str(claim_id))
    except ValueError:
        raise NotFound("claim not found") from None
    book = access.book
    bases = {b["id"]: b for b in canon_bases(book_bases(book)) if SCOPE_READ_CAP[b["scope"]] in access.caps}
    param = KnowledgeClaim._meta.pk.get_db_prep_value(wanted, connection)
    rows = list(
        KnowledgeClaim.objects.filter(pk__in=RawSQL(_lineage_sql(), [param]), base_id__in=list(bases))
        .order_by("created_at", "id")
        .values(*VERSION_COLUMNS)
    )
    if not any(row["id"] == wanted for row in rows):
        raise NotFound("claim not found")

    ids = [str(row["id"]) for row in rows]
    entries = (
        DecisionLogEntry.objects.filter(subject_type=CLAIM_SUBJECT, subject_id__in=ids)
        .order_by("ts", "sequence")
        .values("subject_id", "book_id", "sequence", "ts", "decision", "ratified_by", "rationale", "approval_id")
    )
    log_url = reverse("approvals:book_log", args=[book.pk])
    decisions: dict[str, list[dict]] = {}
    for entry in entries:
        here = entry["book_id"] == book.pk
        decisions.setdefault(entry["subject_id"], []).append(
            {
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
        )

    cited = {str(row["id"]): [r for r in row["source_refs"] or [] if isinstance(r, dict)] for row in rows}
    resolved = iter(resolve_source_refs(access, [ref for refs in cited.values() for ref in refs]))
    number = {str(row["id"]): i for i, row in enumerate(rows, start=1)}
    revised_by: dict[str, list[int]] = {}
    for row in rows:
        if row["revises_id"]:
            revised_by.setdefault(str(row["revises_id"]), []).append(number[str(row["id"])])
    versions = []
    for row in rows:
        pk = str(row["id"])
        versions.append(
            {
                **row,
                "id": pk,
                "base_id": str(row["base_id"]),
                "number": number[pk],
                "revises_id": str(row["revises_id"]) if row["revises_id"] else None,
                "revises_number": number.get(str(row["revises_id"])) if row["revises_id"] else None,
                "revised_by_numbers": revised_by.get(pk, []),
                "approval_id": str(row["approval_id"]) if row["approval_id"] else None,
                "source_refs": [next(resolved) for _ in cited[pk]],
                "decisions": decisions.get(pk, []),
                "requested": pk == str(wanted),
            }
        )
    claim = next(v for v in versions if v["requested"])
    canon = next((v for v in versions if v["status"] == KnowledgeClaim.Status.APPROVED), None)
    return {
        "book_id": str(book.pk),
        "claim_id": claim["id"],
        "base": codex_base(bases[claim["base_id"]]),
        "subject": claim["subject"],
        "predicate": claim["predicate"],
        "canon": canon,
        "versions": versions,
    }
