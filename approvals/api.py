"""Approvals and decision-log routes. Thin: authenticate, validate, call a service or selector."""

import uuid
from datetime import datetime
from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Field, Query, Router, Schema
from ninja.pagination import paginate

from discovery.access import Cap, book_for
from novelgraph.api import principal_of
from novelgraph.schemas import ERRORS

from .models import Approval, ApprovalStatus, Verdict
from .selectors import (
    approval_for,
    approval_view,
    approvals_visible,
    decision_log_export_lines,
    decision_log_for,
    decision_log_verify,
)
from .services import approval_decide

router = Router(tags=["approvals"])


# --- Schemas -----------------------------------------------------------------


class ApprovalOut(Schema):
    id: uuid.UUID
    book_id: uuid.UUID
    kind: str
    subject_type: str
    subject_id: str
    gate: str | None
    summary: str
    note: str
    requested_by_role: str
    requested_by: str | None
    reversibility_class: str
    status: str
    verdict: str | None
    rationale: str
    constraint: str
    decided_by: str | None
    decided_at: datetime | None
    created_at: datetime

    @staticmethod
    def resolve_requested_by(obj: Approval | dict) -> str | None:
        if isinstance(obj, dict):
            return obj.get("requested_by")
        return obj.requested_by_user.get_username() if obj.requested_by_user_id else None

    @staticmethod
    def resolve_decided_by(obj: Approval | dict) -> str | None:
        if isinstance(obj, dict):
            return obj.get("decided_by")
        return obj.decided_by.get_username() if obj.decided_by_id else None


class LogEntryOut(Schema):
    id: uuid.UUID
    book_id: uuid.UUID
    sequence: int
    ts: datetime
    gate: str | None
    decision: str
    subject_type: str
    subject_id: str
    ratified_by: str
    reversibility_class: str
    rationale: str
    detail: dict[str, Any]
    approval_id: uuid.UUID | None
    prev_hash: str
    hash: str
    seal: str


class ApprovalDetailOut(ApprovalOut):
    verdicts: list[str] = Field(description="the verdicts this kind of approval accepts")
    current: bool = Field(description="false once the subject changed after the approval was requested")
    proposal: dict[str, Any] = Field(description="the subject as its handler describes it")
    source_refs: list[dict[str, Any]] = Field(description="the proposal's source refs, resolved")
    impact: Any = Field(None, description="the impact preview, where the verdict would change the blackboard")
    log_entry: LogEntryOut | None = Field(None, description="the decision-log entry, once decided")


class VerdictIn(Schema):
    verdict: str = Field(max_length=40, description=f"one of {', '.join(Verdict.values)}")
    rationale: str = Field(max_length=10_000, description="why: required, never blank")
    constraint: str = Field(
        "",
        max_length=10_000,
        description="the constraint (approve-with-constraint), the steer (redirect) or what is granted (extend)",
    )


class VerdictOut(Schema):
    approval: ApprovalOut
    entry: LogEntryOut


class ApprovalFilter(Schema):
    book_id: uuid.UUID | None = None
    status: ApprovalStatus | None = None


class VerificationOut(Schema):
    ok: bool
    entries: int
    first_bad_sequence: int | None
    reason: str | None


# --- Approvals ---------------------------------------------------------------


@router.get("/approvals", response={200: list[ApprovalOut], **ERRORS})
@paginate
def approval_list(request: HttpRequest, filters: Query[ApprovalFilter]):
    """Approvals of the books the caller may read, newest first (`?book_id=&status=`)."""
    principal = principal_of(request)
    book = book_for(principal, filters.book_id, Cap.BOOK_READ) if filters.book_id else None
    return approvals_visible(principal, book=book, status=filters.status)


@router.get("/approvals/{approval_id}", response={200: ApprovalDetailOut, **ERRORS})
def approval_detail(request: HttpRequest, approval_id: uuid.UUID):
    """The proposal, who requested it, its source refs resolved, the impact preview, and whether it is current."""
    view = approval_view(approval_for(principal_of(request), approval_id))
    out = ApprovalOut.from_orm(view.approval).dict()
    out.update(
        verdicts=view.verdicts,
        current=view.current,
        proposal=view.proposal,
        source_refs=view.source_refs,
        impact=view.impact,
        log_entry=LogEntryOut.from_orm(view.log_entry).dict() if view.log_entry else None,
    )
    return out


@router.post("/approvals/{approval_id}/verdict", response={200: VerdictOut, **ERRORS})
def approval_verdict(request: HttpRequest, approval_id: uuid.UUID, payload: VerdictIn):
    """The author's verdict, with a rationale. Agents get 403; a stale proposal is 409 and becomes superseded."""
    entry = approval_decide(
        principal=principal_of(request),
        approval_id=approval_id,
        verdict=payload.verdict,
        rationale=payload.rationale,
        constraint=payload.constraint,
    )
    approval = Approval.objects.select_related("requested_by_user", "decided_by").get(pk=entry.approval_id)
    return {"approval": approval, "entry": entry}


# --- The decision log ----------------------------------------------------------


@router.get("/books/{book_id}/decision-log", response={200: list[LogEntryOut], **ERRORS})
@paginate
def decision_log_list(request: HttpRequest, book_id: uuid.UUID):
    """The book's decision log in sequence order."""
    book = book_for(principal_of(request), book_id, Cap.BOOK_READ)
    return decision_log_for(book)


@router.get("/books/{book_id}/decision-log/verify", response={200: VerificationOut, **ERRORS})
def decision_log_verify_route(request: HttpRequest, book_id: uuid.UUID):
    """Recompute the chain and the seals; names the first entry that fails."""
    book = book_for(principal_of(request), book_id, Cap.BOOK_READ)
    return decision_log_verify(book).as_dict()


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
    """The book's log as JSON Lines that an outside script can re-verify (see the README)."""
    book = book_for(principal_of(request), book_id, Cap.BOOK_READ)
    response = StreamingHttpResponse(decision_log_export_lines(book), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="decision-log-{book.slug}.jsonl"'
    return response
