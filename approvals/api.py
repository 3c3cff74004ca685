"""Approvals and decision-log routes. Thin: authenticate, validate, call a service or selector."""

import uuid
from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Query, Router
from ninja.pagination import paginate

from novelgraph.core.auth import principal_of
from novelgraph.core.schemas import ERRORS

from .models import Approval, DecisionList
from .reads import approval_detail_read, approvals_read, log_access
from .schemas import (
    WITHHELD,
    ApprovalDetailOut,
    ApprovalFilter,
    ApprovalOut,
    LogEntryOut,
    VerdictIn,
    VerdictOut,
    VerificationOut,
)
from .selectors import (
    approval_get,
    decision_list,
    decision_log_export_lines,
    decision_log_for,
    decision_log_verify,
    superseded_versions,
)
from .services import approval_decide

router = Router(tags=["approvals"])

# --- Approvals ---------------------------------------------------------------


@router.get("/approvals", response={200: list[ApprovalOut], **ERRORS})
@paginate
def approval_list(request: HttpRequest, filters: Query[ApprovalFilter]):
    """Approvals of the books the caller may read, newest first (`?book_id=&status=`)."""
    approvals, withheld = approvals_read(principal_of(request), filters.book_id, filters.status)
    setattr(request, WITHHELD, withheld)
    return approvals


@router.get("/approvals/{approval_id}", response={200: ApprovalDetailOut, **ERRORS})
def approval_detail(request: HttpRequest, approval_id: uuid.UUID):
    """The proposal, who requested it, its source refs resolved, the impact preview, and whether it is current.

    A subject the caller's role may not read is withheld (and says so)."""
    out, withheld = approval_detail_read(principal_of(request), approval_id)
    setattr(request, WITHHELD, withheld)  # the response schema validates the answer again
    return out


@router.get("/approvals/{approval_id}/lists/{name}", response={200: list[dict[str, Any] | str], **ERRORS})
@paginate
def approval_list_items(request: HttpRequest, approval_id: uuid.UUID, name: DecisionList):
    """Every item of a list the approval's verdict recorded, paged, in its log entry's order: the rest of the
    entry's capped ``detail.contradictions`` (a claim verdict: each with its kind and both sides),
    ``detail.effect.subtree_stale`` (abandon: plan node ids) or ``detail.effect.set_aside`` (explore-alternatives:
    candidate ids). 403 ``withheld`` when the caller's role may not read the approval's claim."""
    return decision_list(*approval_get(principal_of(request), approval_id), name)


@router.get("/approvals/{approval_id}/superseded-versions", response={200: list[int], **ERRORS})
@paginate
def approval_superseded_versions(request: HttpRequest, approval_id: uuid.UUID):
    """Every charter version a charter approval superseded, oldest first, paged: the rest of its log entry's
    ``detail.superseded_versions``."""
    return superseded_versions(*approval_get(principal_of(request), approval_id))


@router.post("/approvals/{approval_id}/verdict", response={200: VerdictOut, **ERRORS})
def approval_verdict(request: HttpRequest, approval_id: uuid.UUID, payload: VerdictIn):
    """The author's verdict, with a rationale. Agents get 403; a stale proposal is 409 and becomes superseded."""
    access, approval = approval_get(principal_of(request), approval_id)
    entry = approval_decide(
        access=access,
        approval_id=approval.pk,
        verdict=payload.verdict,
        rationale=payload.rationale,
        constraint=payload.constraint,
        thrust_id=payload.thrust_id,
        not_chosen=payload.not_chosen,
    )
    approval = Approval.objects.select_related("requested_by_user", "decided_by").get(pk=entry.approval_id)
    return {"approval": approval, "entry": entry}


# --- The decision log ----------------------------------------------------------


def _log_access(request: HttpRequest, book_id: uuid.UUID):
    access, withheld = log_access(principal_of(request), book_id)
    setattr(request, WITHHELD, withheld)
    return access


@router.get("/books/{book_id}/decision-log", response={200: list[LogEntryOut], **ERRORS})
@paginate
def decision_log_list(request: HttpRequest, book_id: uuid.UUID):
    """The book's decision log in sequence order (entries about what the caller may not read are withheld)."""
    return decision_log_for(_log_access(request, book_id).book)


@router.get("/books/{book_id}/decision-log/verify", response={200: VerificationOut, **ERRORS})
def decision_log_verify_route(request: HttpRequest, book_id: uuid.UUID):
    """Recompute the chain and the seals; names the first entry that fails."""
    return decision_log_verify(_log_access(request, book_id).book).as_dict()


@router.get(
    "/books/{book_id}/decision-log/export",
    response=ERRORS,
    openapi_extra={
        "responses": {
            "200": {
                "description": "JSON Lines: one entry per line, every field of the hash recipe plus hash and seal",
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        }
    },
)
def decision_log_export(request: HttpRequest, book_id: uuid.UUID):
    """The book's log as JSON Lines that an outside script can re-verify (see the README).

    Entries about what the caller's role may not read are exported with ``withheld`` and no
    rationale or detail (they then cannot be re-verified by that caller, and say so)."""
    access = _log_access(request, book_id)
    lines = decision_log_export_lines(access.book, withheld=getattr(request, WITHHELD))
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="decision-log-{access.book.slug}.jsonl"'
    return response
