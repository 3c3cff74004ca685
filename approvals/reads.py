"""The approvals' and the decision log's reads, as their REST routes and their MCP tools both answer them.

Each takes the principal (never a request) and returns what is read with the subjects the caller's role
may not read (``withheld``: claim id -> the line shown instead). The route carries ``withheld`` on its
request for the output schemas (``schemas.WITHHELD``); the tool passes it as the schemas' context.
So both answer the same body, withheld alike.
"""

from __future__ import annotations

import uuid
from typing import Any

from discovery.access import BookAccess, Cap, book_access, books_visible_to, principal_capabilities
from novelgraph.core.auth import Principal

from .schemas import ApprovalOut, LogEntryOut
from .selectors import approval_get, approval_view, approvals_visible, withheld_subjects
from .subjects import handler_of


def approvals_read(principal: Principal, book_id: uuid.UUID | None, status: str | None):
    """Approvals of the books the caller may read (or of one), newest first, and what is withheld in them."""
    access = book_access(principal, book_id, Cap.BOOK_READ) if book_id else None
    approvals = approvals_visible(principal, access=access, status=status)
    books = [access.book] if access else books_visible_to(principal)
    return approvals, withheld_subjects(principal, principal_capabilities(principal), books)


def approval_detail_read(principal: Principal, approval_id: uuid.UUID) -> tuple[dict[str, Any], dict[str, str]]:
    """One approval as its detail route answers it (the proposal, its source refs, the impact preview, its log
    entry), with a subject the caller's role may not read withheld."""
    access, approval = approval_get(principal, approval_id)
    withheld = withheld_subjects(access.principal, access.caps, [access.book])
    context = {"withheld": withheld}
    view = approval_view(access, approval)
    out = ApprovalOut.from_orm(view.approval, context=context).dict()
    # A loop card's impact preview is capped like GET .../loop/cascade-preview, with the same link to the rest.
    handler = handler_of(approval.kind)
    impact = handler.impact_page(access.book.pk, view.impact) if handler and handler.impact_page else view.impact
    proposal = {**view.proposal, "impact": impact} if "impact" in view.proposal else view.proposal
    out.update(
        verdicts=view.verdicts,
        current=view.current,
        proposal=proposal,
        source_refs=view.source_refs,
        impact=impact,
        log_entry=LogEntryOut.from_orm(view.log_entry, context=context).dict() if view.log_entry else None,
    )
    return out, withheld


def log_access(principal: Principal, book_id: uuid.UUID) -> tuple[BookAccess, dict[str, str]]:
    """The caller's access to a book's decision log, and the entries' subjects its role may not read."""
    access = book_access(principal, book_id, Cap.BOOK_READ)
    return access, withheld_subjects(access.principal, access.caps, [access.book])
