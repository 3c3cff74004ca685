"""Knowledge claims: they enter as proposals; only the author's decision makes one canon."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from approvals.models import Approval, ApprovalKind, Verdict
from approvals.services import approval_request, subject_decide
from novelgraph.errors import Conflict, Invalid, NotFound

from ..access import Cap, Principal, book_for, require, require_author
from ..models import (
    LITERARY_OWNER_ID,
    Book,
    DiscoverySession,
    KnowledgeBase,
    KnowledgeClaim,
    Provenance,
)
from ..refs import MAX_REFS, check_refs
from ..selectors import SCOPE_READ_CAP, book_bases
from .common import check_choice, check_json, check_text, refuse
from .sessions import book_base, literary_base, run_base, series_base

CLAIM_SUBJECT = "claim"
EVIDENCE_KINDS = ("physical", "testimonial", "documentary", "digital", "forensic")


def _check_evidence(evidence: Any) -> dict | None:
    if evidence is None:
        return None
    if not isinstance(evidence, dict):
        raise Invalid("evidence must be an object {kind, decisive, research_ids}", field="evidence")
    kind = evidence.get("kind")
    if kind not in EVIDENCE_KINDS:
        raise Invalid(f"evidence.kind must be one of {', '.join(EVIDENCE_KINDS)}", field="evidence.kind")
    decisive = evidence.get("decisive", False)
    if not isinstance(decisive, bool):
        raise Invalid("evidence.decisive must be true or false", field="evidence.decisive")
    research_ids = evidence.get("research_ids") or []
    if not isinstance(research_ids, list) or len(research_ids) > MAX_REFS:
        raise Invalid(f"evidence.research_ids must be a list of at most {MAX_REFS} ids", field="evidence.research_ids")
    ids = []
    for i, rid in enumerate(research_ids):
        try:
            ids.append(str(uuid.UUID(str(rid))))
        except ValueError:
            raise Invalid(f"evidence.research_ids[{i}] is not an id", field=f"evidence.research_ids[{i}]") from None
    return {"kind": kind, "decisive": decisive, "research_ids": ids}


def _base_and_books(principal: Principal, scope: str, scope_id: str) -> tuple[KnowledgeBase, list[Book]]:
    """The base a claim of ``scope``/``scope_id`` goes to, and the principal's books that can use it
    (404 when none of the principal's books reaches it)."""
    visible = list(principal.visible_books().select_related("series"))
    if scope == KnowledgeBase.Scope.LITERARY:
        if scope_id != LITERARY_OWNER_ID:
            raise Invalid('a literary claim has scope_id "global"', field="scope_id")
        return literary_base(), visible
    try:
        owner = uuid.UUID(str(scope_id))
    except ValueError:
        raise Invalid(f"scope_id must be the id of the {scope}", field="scope_id") from None
    if scope == KnowledgeBase.Scope.SERIES:
        books = [b for b in visible if b.series_id == owner]
        if not books:
            raise NotFound("series not found", field="scope_id")
        return series_base(books[0].series), books
    if scope == KnowledgeBase.Scope.BOOK:
        books = [b for b in visible if b.pk == owner]
        if not books:
            raise NotFound("book not found", field="scope_id")
        return book_base(books[0]), books
    session = DiscoverySession.objects.select_related("book").filter(pk=owner).first()
    books = [b for b in visible if session is not None and b.pk == session.book_id]
    if not books:
        raise NotFound("session not found", field="scope_id")
    return run_base(session), books


def claim_propose(
    *,
    principal: Principal,
    scope: str,
    scope_id: str,
    subject: str,
    predicate: str,
    value: Any,
    provenance: str,
    source_refs: list | None = None,
    evidence: dict | None = None,
    status: str | None = None,
) -> KnowledgeClaim:
    """A claim always enters as proposed (asking for another status is a 422).

    Needs canon:propose (Sol, the author) for a book that reaches the base, and the read
    capability of the base's scope (series:read for a series base). ``scope_id`` is "global"
    for the literary base, else the id of the series, book or session (run).
    """
    if status not in (None, KnowledgeClaim.Status.PROPOSED):
        raise Invalid(
            "claims always enter as proposed; only the author's promotion makes a claim approved",
            field="status",
        )
    scope = check_choice(scope, KnowledgeBase.Scope, "scope")
    subject = check_text(subject, "subject", max_length=300)
    predicate = check_text(predicate, "predicate", max_length=300)
    provenance = check_choice(provenance, Provenance, "provenance")
    if value is None or (isinstance(value, str) and not value.strip()):
        raise Invalid("value must not be empty", field="value")
    value = check_json(value, "value")
    evidence = _check_evidence(evidence)
    base, books = _base_and_books(principal, scope, str(scope_id))
    allowed = [b for b in books if Cap.CANON_PROPOSE in principal.capabilities_for(b)]
    if not allowed:
        raise refuse(principal.role_for(books[0]), Cap.CANON_PROPOSE)
    book = allowed[0]
    role = principal.role_for(book)
    require(principal, SCOPE_READ_CAP[base.scope], book=book)
    refs = check_refs(source_refs, books=allowed, caps=principal.capabilities_for(book), who=role)
    return KnowledgeClaim.objects.create(
        base=base,
        subject=subject,
        predicate=predicate,
        value=value,
        provenance=provenance,
        proposed_by=role,
        source_refs=refs,
        evidence=evidence,
    )


def claim_for_book(principal: Principal, claim_id: Any, book: Book, *, lock: bool = False) -> KnowledgeClaim:
    """The claim, when it belongs to a base ``book`` owns or links.

    404 when none of the principal's books reaches the claim; 409 when it exists for the
    principal but not in this book's bases.
    """
    claims = KnowledgeClaim.objects.select_related("base")
    if lock:
        claims = claims.select_for_update(of=("self",))
    try:
        claim = claims.get(pk=claim_id)
    except (KnowledgeClaim.DoesNotExist, ValidationError, ValueError, TypeError):
        raise NotFound("claim not found") from None
    if str(claim.base_id) in {b["id"] for b in book_bases(book)}:
        return claim
    reachable = claim.base.scope == KnowledgeBase.Scope.LITERARY or any(
        str(claim.base_id) in {b["id"] for b in book_bases(other)}
        for other in principal.visible_books().exclude(pk=book.pk)
    )
    if not reachable:
        raise NotFound("claim not found")
    raise Conflict("this claim's knowledge base is not owned or linked by this book", code="base_not_linked")


def _pending_approval(book: Book, claim: KnowledgeClaim) -> Approval | None:
    return Approval.objects.filter(
        book=book,
        kind=ApprovalKind.CANON_PROMOTION,
        subject_type=CLAIM_SUBJECT,
        subject_id=str(claim.pk),
        status=Approval.Status.PENDING,
    ).first()


def claim_request_approval(*, principal: Principal, claim_id: Any, book_id: Any, note: str = "") -> Approval:
    """Sol asks the author to promote a proposed claim: a pending canon-promotion approval.

    Needs approval:request (Sol only). The claim must be proposed (409) and in a base the book
    owns or links; one pending request per claim and book (409 for a second).
    """
    book = book_for(principal, book_id, Cap.APPROVAL_REQUEST)
    note = check_text(note, "note", max_length=10_000, required=False)
    with transaction.atomic():
        claim = claim_for_book(principal, claim_id, book, lock=True)
        if claim.status != KnowledgeClaim.Status.PROPOSED:
            raise Conflict(f"this claim is already {claim.status}", code="not_pending")
        if _pending_approval(book, claim) is not None:
            raise Conflict("approval of this claim is already requested for this book", code="already_requested")
        return approval_request(
            book=book,
            kind=ApprovalKind.CANON_PROMOTION,
            subject_type=CLAIM_SUBJECT,
            subject_id=claim.pk,
            summary=f"Canon: {claim.subject} {claim.predicate}",
            requested_by_role=principal.role_for(book),
            requested_by_user=principal.user,
            note=note,
        )


def claim_decide(*, principal: Principal, claim_id: Any, book_id: Any, approve: bool, rationale: str) -> Approval:
    """The author promotes (approve) or rejects a proposed claim, with a rationale.

    Only the book's author (a person); blank rationale 422; the claim must be proposed (409,
    so promoting twice is a 409) and in a base the book owns or links (404/409). Uses the
    pending canon-promotion approval if Sol requested one, else records one and decides it in
    the same transaction; the decision is logged. Returns the approval.
    """
    book = book_for(principal, book_id)
    require_author(principal, book)
    claim = claim_for_book(principal, claim_id, book)
    return subject_decide(
        principal=principal,
        book=book,
        kind=ApprovalKind.CANON_PROMOTION,
        subject_type=CLAIM_SUBJECT,
        subject_id=claim.pk,
        subject_pending=claim.status == KnowledgeClaim.Status.PROPOSED,
        subject_label=f"this claim ({claim.status})",
        summary=f"Canon: {claim.subject} {claim.predicate}",
        verdict=Verdict.APPROVE if approve else Verdict.REJECT,
        rationale=rationale,
    )
