"""Knowledge claims: they enter as proposals; only the author's decision makes one canon.

Literary guidance is shared craft advice that staff curate in the library: no book's
verdict reaches the literary base, and no author or agent proposes claims to it.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from approvals.models import Approval, ApprovalKind, Reversibility, Verdict
from approvals.services import approval_request, decision_log_append, require_rationale, subject_decide
from novelgraph.core.auth import Principal
from novelgraph.core.errors import Conflict, Forbidden, Invalid, NotFound
from novelgraph.core.words import inline

from ..access import BookAccess, Cap, book_access, books_visible_to
from ..models import CodexEntry, KnowledgeBase, KnowledgeClaim, RevealKind
from ..refs import validate_source_refs
from ..schemas import ClaimIn, StoryRecordIn
from ..selectors import SCOPE_READ_CAP, book_bases, session_get
from .knowledge import book_base, run_base, series_base
from .sessions import refuse_author_stated_unless_author

CLAIM_SUBJECT = "claim"


def _curated_by_staff() -> Forbidden:
    return Forbidden(
        "literary guidance is shared craft advice curated by staff in the library; "
        "no book's proposal or verdict reaches it",
        code="curated_by_staff",
    )


def claim_summary(claim: KnowledgeClaim) -> str:
    """The claim as one readable sentence, value included: "Canon: Ada is the daughter of Mara"."""
    return f"Canon: {claim.subject} {claim.predicate} {inline(claim.value)}"[:500]


def claim_target(principal: Principal, scope: str, scope_id: str) -> tuple[BookAccess, KnowledgeBase]:
    """Where a claim of ``scope``/``scope_id`` goes, and the access through which it is proposed.

    ``scope_id`` is the id of the series, book or session (run). A series claim is proposed
    through one of the principal's books in that series (one where her role may propose canon,
    if any). 404 naming ``scope_id`` when none of the principal's books reaches it.
    """
    if scope == KnowledgeBase.Scope.LITERARY:
        raise _curated_by_staff()
    try:
        owner = uuid.UUID(str(scope_id))
    except ValueError:
        raise Invalid(f"scope_id must be the id of the {scope}", field="scope_id") from None
    try:
        if scope == KnowledgeBase.Scope.SERIES:
            books = list(books_visible_to(principal).filter(series_id=owner).select_related("series", "owner"))
            accesses = [book_access(principal, book) for book in books]
            if not accesses:
                raise NotFound("series not found")
            access = next((a for a in accesses if a.holds(Cap.CANON_PROPOSE)), accesses[0])
            return access, series_base(access.book.series)
        if scope == KnowledgeBase.Scope.BOOK:
            access = book_access(principal, owner)
            return access, book_base(access.book)
        session = session_get(owner)
        return book_access(principal, session.book, missing="session"), run_base(session)
    except NotFound as exc:
        raise NotFound(exc.message, field="scope_id") from None


def claim_propose(*, access: BookAccess, base: KnowledgeBase, payload: ClaimIn) -> KnowledgeClaim:
    """A claim always enters as proposed.

    Needs canon:propose (Sol, the author) and the read capability of the base's scope
    (series:read for a series base). An agent never labels its claim ``author-stated``.
    """
    access.require(Cap.CANON_PROPOSE)
    access.require(SCOPE_READ_CAP[base.scope])
    refuse_author_stated_unless_author(access, payload.provenance, field="provenance")
    evidence = None
    if payload.evidence is not None:
        evidence = payload.evidence.dict()
        evidence["research_ids"] = [str(rid) for rid in evidence["research_ids"]]
    story = _checked_story(access, payload)
    revises = None
    if payload.revises is not None:
        revises = _claim_in_book(access, payload.revises, field="revises")
        if revises.status != KnowledgeClaim.Status.APPROVED:
            raise Conflict(f"only approved canon is revised; this claim is {revises.status}", code="not_canon")
        if revises.base_id != base.pk:
            raise Invalid("a revision goes to the same knowledge base as the claim it revises", field="revises")
    return KnowledgeClaim.objects.create(
        base=base,
        subject=payload.subject,
        entry=entry_for_subject(access.book, payload.subject),
        predicate=payload.predicate,
        value=payload.value,
        provenance=payload.provenance,
        proposed_by=access.role,
        source_refs=validate_source_refs(access, [r.dict() for r in payload.source_refs]),
        evidence=evidence,
        revises=revises,
        **story,
    )


def entry_for_subject(book, subject: str) -> CodexEntry:
    """The entry a claim's subject names (by name or alias, case folded), made (unsorted) when none does."""
    folded = " ".join(subject.split()).casefold()
    for entry in CodexEntry.objects.filter(book=book).exclude(status=CodexEntry.Status.REJECTED):
        if any(n.casefold() == folded for n in entry.names):
            return entry
    return CodexEntry.objects.create(book=book, name=" ".join(subject.split())[:300] or subject)


def _claim_in_book(access: BookAccess, claim_id: Any, *, field: str) -> KnowledgeClaim:
    """A claim this book reaches, named by a story field: 404/409 name that field."""
    try:
        return claim_for_book(access, claim_id)
    except NotFound:
        raise NotFound("claim not found", field=field) from None
    except Conflict as exc:
        raise Conflict(exc.message, code=exc.code, field=field) from None


def _checked_story(access: BookAccess, payload: StoryRecordIn, *, claim: KnowledgeClaim | None = None) -> dict:
    """The story record as stored, once its reveal reference resolves: ``evidence_for`` names a
    claim of this book that is a reveal (422 naming the field otherwise)."""
    story = payload.story()
    target_id = story["evidence_for_id"]
    if target_id is not None:
        if claim is not None and str(target_id) == str(claim.pk):
            raise Invalid("a claim is not evidence for itself", field="evidence_for")
        target = _claim_in_book(access, target_id, field="evidence_for")
        if target.reveal == RevealKind.NONE:
            raise Invalid("evidence_for names a claim that is not a reveal (solution or twist)", field="evidence_for")
    return story


def claim_story_set(*, access: BookAccess, claim_id: Any, payload: StoryRecordIn) -> KnowledgeClaim:
    """A new story record for a proposed claim (canon:propose): a new proposal, so an approval
    requested for the old one lapses (its fingerprint covers the story record). Approved canon is
    changed only by a new claim that revises it (409 here)."""
    access.require(Cap.CANON_PROPOSE)
    with transaction.atomic():
        claim = claim_for_book(access, claim_id, lock=True)
        access.require(SCOPE_READ_CAP[claim.base.scope])
        if claim.base.scope == KnowledgeBase.Scope.LITERARY:
            raise _curated_by_staff()
        if claim.status != KnowledgeClaim.Status.PROPOSED:
            raise Conflict(
                f"this claim is {claim.status}; propose a new claim that revises it instead", code="not_pending"
            )
        for name, value in _checked_story(access, payload, claim=claim).items():
            setattr(claim, name, value)
        claim.save()
        return claim


def claim_for_book(access: BookAccess, claim_id: Any, *, lock: bool = False) -> KnowledgeClaim:
    """The claim, when it belongs to a base the book owns or links and its role may read.

    404 when none of the principal's books reaches the claim (or the role may not read its
    base); 409 when it exists for the principal but not in this book's bases.
    """
    claims = KnowledgeClaim.objects.select_related("base")
    if lock:
        claims = claims.select_for_update(of=("self",))
    try:
        claim = claims.get(pk=claim_id)
    except (KnowledgeClaim.DoesNotExist, ValueError, TypeError):
        raise NotFound("claim not found") from None
    bases = {b["id"]: b for b in book_bases(access.book)}
    if str(claim.base_id) in bases:
        if SCOPE_READ_CAP[claim.base.scope] not in access.caps:
            raise NotFound("claim not found")
        return claim
    reachable = any(
        str(claim.base_id) in {b["id"] for b in book_bases(other)}
        for other in books_visible_to(access.principal).exclude(pk=access.book.pk)
    )
    if not reachable:
        raise NotFound("claim not found")
    raise Conflict("this claim's knowledge base is not owned or linked by this book", code="base_not_linked")


def _pending_approval(access: BookAccess, claim: KnowledgeClaim) -> Approval | None:
    return Approval.objects.filter(
        book=access.book,
        kind=ApprovalKind.CANON_PROMOTION,
        subject_type=CLAIM_SUBJECT,
        subject_id=str(claim.pk),
        status=Approval.Status.PENDING,
    ).first()


def claim_request_approval(*, access: BookAccess, claim_id: Any, note: str = "") -> Approval:
    """Sol asks the author to promote a proposed claim: a pending canon-promotion approval.

    Needs approval:request (Sol only). The claim must be proposed (409) and in a base the book
    owns or links; one pending request per claim and book (409 for a second).
    """
    access.require(Cap.APPROVAL_REQUEST)
    with transaction.atomic():
        claim = claim_for_book(access, claim_id, lock=True)
        if claim.base.scope == KnowledgeBase.Scope.LITERARY:
            raise _curated_by_staff()
        if claim.status != KnowledgeClaim.Status.PROPOSED:
            raise Conflict(f"this claim is already {claim.status}", code="not_pending")
        if _pending_approval(access, claim) is not None:
            raise Conflict("approval of this claim is already requested for this book", code="already_requested")
        return approval_request(
            book=access.book,
            kind=ApprovalKind.CANON_PROMOTION,
            subject_type=CLAIM_SUBJECT,
            subject_id=claim.pk,
            summary=claim_summary(claim),
            requested_by_role=access.role,
            requested_by_user=access.user,
            note=note,
        )


def claim_review_open(*, access: BookAccess, claim: KnowledgeClaim, note: str = "") -> Approval:
    """The author's own proposal of a canon change (a continuity finding settled by changing canon) waits in her
    Review as a pending canon-promotion approval, decided there like any proposal. Only the book's author."""
    access.require_author()
    if _pending_approval(access, claim) is not None:
        raise Conflict("approval of this claim is already requested for this book", code="already_requested")
    return approval_request(
        book=access.book,
        kind=ApprovalKind.CANON_PROMOTION,
        subject_type=CLAIM_SUBJECT,
        subject_id=claim.pk,
        summary=claim_summary(claim),
        requested_by_role=access.role,
        requested_by_user=access.user,
        note=note,
    )


def claim_decide(*, access: BookAccess, claim_id: Any, approve: bool, rationale: str) -> Approval:
    """The author promotes (approve) or rejects a proposed claim, with a rationale.

    Only the book's author (a person); blank rationale 422; the claim must be proposed (409,
    so promoting twice is a 409) and in a base the book owns or links (404/409); literary
    guidance is staff's (403). Uses the pending canon-promotion approval if Sol requested one,
    else records one and decides it in the same transaction; the decision is logged.
    """
    access.require_author()
    claim = claim_for_book(access, claim_id)
    if claim.base.scope == KnowledgeBase.Scope.LITERARY:
        raise _curated_by_staff()
    return subject_decide(
        access=access,
        kind=ApprovalKind.CANON_PROMOTION,
        subject_type=CLAIM_SUBJECT,
        subject_id=claim.pk,
        subject_pending=claim.status == KnowledgeClaim.Status.PROPOSED,
        subject_label=f"this claim ({claim.status})",
        summary=claim_summary(claim),
        verdict=Verdict.APPROVE if approve else Verdict.REJECT,
        rationale=rationale,
    )


def revision_of(access: BookAccess, old: KnowledgeClaim, value: Any) -> ClaimIn:
    """The author's revision of approved canon ``old`` to ``value``: same base, subject, predicate and story
    record, ``revises`` the old claim, author-stated. Superseding in the codex and a continuity finding settled
    by changing canon both propose it. Only approved book or series canon is revised (literary canon is staff's)."""
    if old.base.scope == KnowledgeBase.Scope.LITERARY:
        raise _curated_by_staff()
    if old.status != KnowledgeClaim.Status.APPROVED:
        raise Conflict(f"only approved canon is superseded; this claim is {old.status}", code="not_canon")
    if old.base.scope not in (KnowledgeBase.Scope.BOOK, KnowledgeBase.Scope.SERIES):
        raise Conflict("only book and series canon is superseded here", code="not_canon")
    scope_id = str(access.book.series_id if old.base.scope == KnowledgeBase.Scope.SERIES else access.book.pk)
    return ClaimIn(
        scope=old.base.scope,
        scope_id=scope_id,
        subject=old.subject,
        predicate=old.predicate,
        value=value,
        provenance="author-stated",
        source_refs=old.source_refs,
        revises=old.pk,
        true_from_chapter=old.true_from_chapter,
        true_until_chapter=old.true_until_chapter,
        known_by=old.known_by,
        known_by_characters=old.known_by_characters,
        first_shown_chapter=old.first_shown_chapter,
        decisive=old.decisive,
        evidence_for=old.evidence_for_id,
        reveal=old.reveal,
    )


def claim_supersede(*, access: BookAccess, claim_id: Any, value: Any, rationale: str) -> KnowledgeClaim:
    """The author supersedes approved canon with a new value, through a logged decision with her rationale.

    Only the book's author (403); blank rationale 422; the claim must be approved canon of a base the book
    owns or links (404/409). In one transaction: a revision (same base, subject, predicate and story record,
    ``revises`` the old claim, author-stated) is proposed and approved by her, which records the decision-log
    row and marks the old claim revised (history kept).
    """
    access.require_author()
    require_rationale(rationale)
    with transaction.atomic():
        old = claim_for_book(access, claim_id, lock=True)
        new = claim_propose(access=access, base=old.base, payload=revision_of(access, old, value))
        claim_decide(access=access, claim_id=new.pk, approve=True, rationale=rationale)
        new.refresh_from_db()
        return new


def claim_retract(*, access: BookAccess, claim_id: Any, rationale: str) -> KnowledgeClaim:
    """The author retracts approved canon: the claim becomes retracted only with a decision-log row carrying
    her rationale, in one transaction (the claim stays in history; nothing is deleted).

    Only the book's author (403); blank rationale 422; the claim must be approved canon of a base the book
    owns or links (404/409); literary guidance is staff's (403).
    """
    access.require_author()
    require_rationale(rationale)
    with transaction.atomic():
        claim = claim_for_book(access, claim_id, lock=True)
        if claim.base.scope == KnowledgeBase.Scope.LITERARY:
            raise _curated_by_staff()
        if claim.status != KnowledgeClaim.Status.APPROVED:
            raise Conflict(f"only approved canon is retracted; this claim is {claim.status}", code="not_canon")
        claim.status = KnowledgeClaim.Status.RETRACTED
        claim.save(update_fields=["status", "updated_at"])
        decision_log_append(
            book=access.book,
            decision=Verdict.ABANDON,
            subject_type=CLAIM_SUBJECT,
            subject_id=claim.pk,
            rationale=rationale,
            ratified_by_user=access.user,
            reversibility_class=Reversibility.REVERSIBLE,
            detail={"effect": {"claim": {"retracted": str(claim.pk), "summary": claim_summary(claim)}}},
        )
        return claim


def claim_state(*, access: BookAccess, payload: ClaimIn, rationale: str) -> KnowledgeClaim:
    """The author states a fact of her book herself (the codex's "State a fact"): her claim, ``author-stated``, with
    its story record, proposed and decided by her in one act with her rationale, in one transaction.

    Only the book's author (403); blank rationale 422; book canon only (422 naming ``scope``). The claim enters as
    proposed (``claim_propose``, every story-record check included) and her approval makes it canon through the
    same decision as any promotion (``claim_decide``): the decision log records it with her rationale, and a
    contradiction with approved canon is recorded with both sides."""
    access.require_author()
    require_rationale(rationale)
    if payload.scope != KnowledgeBase.Scope.BOOK or str(payload.scope_id) != str(access.book.pk):
        raise Invalid("a fact stated on the codex is canon of this book", field="scope")
    with transaction.atomic():
        claim = claim_propose(access=access, base=book_base(access.book), payload=payload)
        claim_decide(access=access, claim_id=claim.pk, approve=True, rationale=rationale)
        claim.refresh_from_db()
        return claim
