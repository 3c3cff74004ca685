"""How the author's decisions apply to claims: the canon-promotion handler that
``approvals.services.approval_decide`` calls inside the deciding transaction, and what a claim's approval makes
canon; with the two rules every discovery subject shares (research is admitted, not assumed; a subject decided by
this very approval still counts as proposed). The story-charter handler is with the other charter rules
(``discovery.services.charters``). Both are registered from ``DiscoveryConfig.ready()``.

A verdict's log entry is hashed and never rewritten, so the lists it records are capped when written
(``VIEW_PAGE``): the first page, the count and the paged route with the rest, read from what the verdict
stored (``superseded_versions``: the charters' ``superseded_by``; ``contradictions``: recorded with the verdict).
"""

from __future__ import annotations

from django.db.models import Q

from approvals.canon_record import CanonKind
from approvals.models import Approval, ApprovalKind, DecisionList, Verdict
from approvals.services import record_list
from approvals.subjects import PROPOSAL_VERDICTS, Decision, SubjectHandler
from library.evidence import evidence_findings
from novelgraph.core.digest import fingerprint
from novelgraph.core.errors import Conflict, Forbidden
from novelgraph.core.words import inline

from ..models import STORY_RECORD, KnowledgeBase, KnowledgeClaim
from ..refs import resolve_source_refs
from ..selectors import claim_conflicts


def refuse_unadmitted_evidence(*, book_id, evidence, source_refs) -> None:
    """Research is admitted, not assumed: refuse (409, nothing written) while findings remain."""
    findings = evidence_findings(book_id=book_id, evidence=evidence, source_refs=source_refs)
    if findings:
        first = findings[0]
        raise Conflict(
            first.message,
            code=first.code,
            research_id=first.research_id,
            findings=[f.as_dict() for f in findings],
        )


def as_decided_by(row: dict | None, approval: Approval) -> dict | None:
    """The subject as this approval saw it: a subject this very approval decided counts as still
    proposed, so its digest stays current; one decided by another approval does not match."""
    if row is None:
        return None
    if str(row.pop("approval_id") or "") == str(approval.pk):
        row["status"] = "proposed"
    return row


# --- Canon promotion --------------------------------------------------------


def _claim_row(approval: Approval) -> dict | None:
    row = (
        KnowledgeClaim.objects.filter(pk=approval.subject_id)
        .values(
            "id",
            "base_id",
            "subject",
            "predicate",
            "value",
            "provenance",
            "status",
            "source_refs",
            "evidence",
            *STORY_RECORD,
            "approval_id",
        )
        .first()
    )
    return as_decided_by(row, approval)




def claim_digest(approval: Approval) -> str:
    """Covers the claim's content, evidence, story record, references and status (a changed story
    record, or a claim promoted or rejected through another book's approval, makes this one lapse)."""
    return fingerprint(_claim_row(approval))


def claim_apply(decision: Decision) -> None:
    approval = decision.approval
    claim = KnowledgeClaim.objects.select_for_update().select_related("base").get(pk=approval.subject_id)
    if claim.base.scope == KnowledgeBase.Scope.LITERARY:
        raise Forbidden(
            "literary guidance is shared craft advice curated by staff in the library; no book's verdict reaches it",
            code="curated_by_staff",
        )
    if claim.status != KnowledgeClaim.Status.PROPOSED:
        raise Conflict(f"this claim is already {claim.status}", code="not_pending")
    decision.detail["claim"] = {"subject": claim.subject, "predicate": claim.predicate, "base_id": str(claim.base_id)}
    conflicts = claim_conflicts(decision.access, claim)
    if conflicts:
        # The author's verdict resolves each flagged contradiction; both sides stay named in the log.
        # Recorded with the verdict (the canon they contradict changes after it): GET .../lists/contradictions.
        found = [
            {"kind": c["kind"], "sides": [{"type": s["type"], "id": s["id"]} for s in c["sides"]]} for c in conflicts
        ]
        record_list(decision, DecisionList.CONTRADICTIONS, found)
    if decision.verdict == Verdict.APPROVE:
        evidence = claim.evidence
        if claim.decisive and isinstance(evidence, dict):
            evidence = {**evidence, "decisive": True}  # story-record decisive evidence keeps the research rule
        refuse_unadmitted_evidence(book_id=approval.book_id, evidence=evidence, source_refs=claim.source_refs)
        claim.status = KnowledgeClaim.Status.APPROVED
        if claim.revises_id:
            revised = KnowledgeClaim.objects.select_for_update().get(pk=claim.revises_id)
            if revised.status != KnowledgeClaim.Status.APPROVED:
                raise Conflict(f"the claim this one revises is already {revised.status}", code="not_canon")
            revised.status = KnowledgeClaim.Status.REVISED
            revised.save(update_fields=["status", "updated_at"])
            decision.detail["revised_claim"] = str(revised.pk)
    else:
        claim.status = KnowledgeClaim.Status.REJECTED
    claim.approval = approval
    claim.save(update_fields=["status", "approval", "updated_at"])


def _story_fields(claim: KnowledgeClaim) -> dict:
    """The claim's story record for the review page, the fields it sets (so the author approves them)."""
    fields = {
        "True from chapter": claim.true_from_chapter,
        "True until chapter": claim.true_until_chapter,
        "Known by": claim.get_known_by_display()
        + (f": {', '.join(claim.known_by_characters)}" if claim.known_by_characters else ""),
        "First shown in chapter": claim.first_shown_chapter,
        "Decisive evidence": (("yes, for the reveal " + str(claim.evidence_for_id)) if claim.evidence_for_id else "yes")
        if claim.decisive
        else None,
        "Reveal": claim.get_reveal_display() if claim.reveal != "none" else None,
        "Revises": str(claim.revises_id) if claim.revises_id else None,
    }
    return {label: value for label, value in fields.items() if value is not None}


def claim_describe(approval: Approval) -> dict:
    claim = KnowledgeClaim.objects.select_related("base").filter(pk=approval.subject_id).first()
    if claim is None:
        return {"type": "claim", "id": approval.subject_id, "exists": False}
    return {
        "type": "claim",
        "id": str(claim.pk),
        "exists": True,
        "title": f"{claim.subject} {claim.predicate} {inline(claim.value)}",
        "subject": claim.subject,
        "predicate": claim.predicate,
        "value": claim.value,
        "status": claim.status,
        "provenance": claim.provenance,
        "proposed_by": claim.proposed_by,
        "base": {"id": str(claim.base_id), "name": claim.base.name, "scope": claim.base.scope},
        "evidence": claim.evidence,
        "fields": {
            "Subject": claim.subject,
            "Predicate": claim.predicate,
            "Value": claim.value,
            "Knowledge base": f"{claim.base.name} ({claim.base.scope})",
            "Provenance": claim.provenance,
            "Status": claim.status,
            "Evidence": claim.evidence,
            **_story_fields(claim),
        },
        "source_refs": claim.source_refs,
    }


# --- What became canon (approvals.canon_record) -----------------------------


def claim_canon_rows(book, ids=None):
    """Each approved claim (the book's canon, or ``ids``) with the fields its approval made canon and its value:
    its statement, evidence and references, and (since canon recipe 2) its story record."""
    rows = KnowledgeClaim.objects.filter(status=KnowledgeClaim.Status.APPROVED)
    if ids is None:
        # The book's canon (its own and its series' bases) and whatever its approvals made canon.
        # Literary guidance is staff-curated craft advice, in no book's log (README).
        linked = book.knowledge_links.exclude(base__scope=KnowledgeBase.Scope.LITERARY).values("base_id")
        rows = rows.filter(Q(base_id__in=linked) | Q(approval__book=book))
    else:
        rows = rows.filter(pk__in=ids)
    columns = ("pk", "base_id", "subject", "predicate", "value", "provenance", "evidence", "source_refs")
    for pk, base_id, subject, predicate, value, provenance, evidence, refs, *story in rows.order_by(
        "created_at"
    ).values_list(*columns, *STORY_RECORD):
        fields = {
            "base_id": str(base_id),
            "subject": subject,
            "predicate": predicate,
            "value": value,
            "provenance": provenance,
            "evidence": evidence,
            "source_refs": refs,
        }
        fields.update(zip(STORY_RECORD, story, strict=True))  # ids as canon_digest writes them (str)
        yield str(pk), fields, value


def claim_statuses(ids) -> dict[str, str]:
    return {str(pk): status for pk, status in KnowledgeClaim.objects.filter(pk__in=ids).values_list("pk", "status")}


def claim_log_outcomes(said: dict):
    """What an entry deciding a claim leaves: approve -> approved (and the claim it revises, revised;
    ``superseded_claim`` in logs written before the status was named revised), reject -> rejected, the
    author's retraction (abandon, naming the claim it retracts) -> retracted."""
    detail, subject_id = said["detail"], said["subject_id"]
    if said["decision"] == Verdict.APPROVE:
        yield subject_id, KnowledgeClaim.Status.APPROVED.value
        revised = detail.get("revised_claim") or detail.get("superseded_claim")
        if revised:
            yield str(revised), KnowledgeClaim.Status.REVISED.value
    elif said["decision"] == Verdict.REJECT:
        yield subject_id, KnowledgeClaim.Status.REJECTED.value
    elif said["decision"] == Verdict.ABANDON:
        effect = (detail.get("effect") or {}).get("claim") or {}
        if str(effect.get("retracted")) == subject_id:
            yield subject_id, KnowledgeClaim.Status.RETRACTED.value


def claim_revisions(ids) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for pk, revises in KnowledgeClaim.objects.filter(revises_id__in=ids).values_list("pk", "revises_id"):
        found.setdefault(str(revises), []).append(str(pk))
    return found


CLAIM_HANDLER = SubjectHandler(
    kind=ApprovalKind.CANON_PROMOTION,
    verdicts=PROPOSAL_VERDICTS,
    digest=claim_digest,
    apply=claim_apply,
    describe=claim_describe,
    sources=resolve_source_refs,
)
CLAIM_CANON = CanonKind(
    "claim",
    "claim",
    claim_canon_rows,
    statuses=claim_statuses,
    # decision.detail["claim"] on every verdict; "effect" on the author's retraction (claims.claim_retract).
    marks=("canon", "claim", "effect"),
    decisions=(Verdict.APPROVE.value, Verdict.REJECT.value, Verdict.ABANDON.value),
    outcomes=claim_log_outcomes,
    shared=True,
    related=claim_revisions,
    since=dict.fromkeys(STORY_RECORD, 2),
)
