"""How the author's decisions apply to discovery subjects: the story-charter and canon-promotion
handlers that ``approvals.services.approval_decide`` calls inside the deciding transaction.

Registered from ``DiscoveryConfig.ready()``.

A verdict's log entry is hashed and never rewritten, so the lists it records are capped when written
(``VIEW_PAGE``): the first page, the count and the paged route with the rest, read from what the verdict
stored (``superseded_versions``: the charters' ``superseded_by``; ``contradictions``: recorded with the verdict).
"""

from __future__ import annotations

from approvals.models import Approval, ApprovalKind, DecisionList, Verdict
from approvals.services import (
    PROPOSAL_VERDICTS,
    Decision,
    SubjectHandler,
    capped_in,
    fingerprint,
    record_list,
    register_subject_handler,
)
from library.evidence import evidence_findings
from novelgraph.core.errors import Conflict, Forbidden
from novelgraph.core.words import inline

from ..canon import charter_content_digest
from ..models import DiscoverySession, KnowledgeBase, KnowledgeClaim, StoryCharter
from ..selectors import claim_conflicts


def _refuse_unadmitted_evidence(*, book_id, evidence, source_refs) -> None:
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


# --- Story charters --------------------------------------------------------


def _as_decided_by(row: dict | None, approval: Approval) -> dict | None:
    """The subject as this approval saw it: a subject this very approval decided counts as still
    proposed, so its digest stays current; one decided by another approval does not match."""
    if row is None:
        return None
    if str(row.pop("approval_id") or "") == str(approval.pk):
        row["status"] = "proposed"
    return row


def _charter_row(approval: Approval) -> dict | None:
    row = (
        StoryCharter.objects.filter(pk=approval.subject_id, book_id=approval.book_id)
        .values("id", "book_id", "version", "status", "content", "source_refs", "approval_id")
        .first()
    )
    return _as_decided_by(row, approval)


def charter_digest(approval: Approval) -> str:
    """Covers the charter's content, references, version and status: an edited charter, or one
    another approval already resolved, no longer matches, so a pending approval lapses."""
    return fingerprint(_charter_row(approval))


def newer_live_version(charter: StoryCharter) -> StoryCharter | None:
    """The newest version after ``charter`` that is still pending or approved (rejected ones do not count)."""
    return (
        StoryCharter.objects.filter(book_id=charter.book_id, version__gt=charter.version)
        .exclude(status=StoryCharter.Status.REJECTED)
        .order_by("-version")
        .first()
    )


def charter_apply(decision: Decision) -> None:
    """Apply the author's verdict on a charter version.

    Versions are ordered: an older version is never approved while a newer one is pending or
    approved (409 ``newer_version``, naming it); approving version n supersedes every older
    version, pending or approved. The conversation stays open (only the G3 hand-off closes it)
    and no chapter is created here (G3 creates Chapter 1 from the decision brief).
    """
    approval = decision.approval
    charter = StoryCharter.objects.select_for_update().get(pk=approval.subject_id, book_id=approval.book_id)
    if charter.status != StoryCharter.Status.PROPOSED:
        raise Conflict(f"charter v{charter.version} is already {charter.status}", code="not_pending")
    decision.detail["charter_version"] = charter.version
    if decision.verdict == Verdict.APPROVE:
        newer = newer_live_version(charter)
        if newer is not None:
            raise Conflict(
                f"charter v{charter.version} is older than v{newer.version} ({newer.status}); "
                f"an older version cannot be approved after a newer one",
                code="newer_version",
                newer_version=newer.version,
                newer_id=str(newer.pk),
            )
        _refuse_unadmitted_evidence(book_id=charter.book_id, evidence=None, source_refs=charter.source_refs)
        superseded = StoryCharter.objects.filter(
            book_id=charter.book_id,
            version__lt=charter.version,
            status__in=[StoryCharter.Status.APPROVED, StoryCharter.Status.PROPOSED],
        )
        # Each superseded version records this approval, so GET /approvals/{id}/superseded-versions lists them all.
        versions = sorted(superseded.values_list("version", flat=True))
        capped_in(decision.detail, "superseded_versions", versions, approval, "superseded-versions")
        decision.detail["content_digest"] = charter_content_digest(charter.content)
        decision.detail["loop_gate"] = _loop_gate(charter.book_id)
        superseded.update(status=StoryCharter.Status.SUPERSEDED, superseded_by=approval)
        charter.status = StoryCharter.Status.APPROVED
        charter.approval = approval
        charter.save(update_fields=["status", "approval", "updated_at"])
        _reopen_settle(charter, approved=True, detail=decision.detail)
        # Nothing waits any more: the conversation goes on, active (it is never closed here).
        DiscoverySession.objects.filter(
            book_id=charter.book_id, status=DiscoverySession.Status.CHARTER_PROPOSED
        ).update(status=DiscoverySession.Status.ACTIVE)
    else:
        charter.status = StoryCharter.Status.REJECTED
        charter.approval = approval
        charter.save(update_fields=["status", "approval", "updated_at"])
        _reopen_settle(charter, approved=False, detail=decision.detail)
        if charter.session_id:
            DiscoverySession.objects.filter(
                pk=charter.session_id, status=DiscoverySession.Status.CHARTER_PROPOSED
            ).update(status=DiscoverySession.Status.ACTIVE)


def _reopen_settle(charter: StoryCharter, *, approved: bool, detail: dict) -> None:
    """A version proposed after G2 raised a reopen card: it goes with this decision (approve moves G2's
    ratification to the version, reject keeps the ratified one; the row's detail says which)."""
    from discovery.loop.services.charters import charter_reopen_settle

    charter_reopen_settle(book_id=charter.book_id, charter=charter, approved=approved, detail=detail)


def _loop_gate(book_id) -> str | None:
    from discovery.loop.models import LoopMeta

    return LoopMeta.objects.filter(book_id=book_id).values_list("gate", flat=True).first()


def charter_changes(charter: StoryCharter) -> dict | None:
    """What changed from the previous version, field by field (None for version 1)."""
    previous = (
        StoryCharter.objects.filter(book_id=charter.book_id, version__lt=charter.version)
        .order_by("-version")
        .values("version", "content")
        .first()
    )
    if previous is None:
        return None
    before, after = previous["content"] or {}, charter.content or {}
    rows = []
    for key in list(dict.fromkeys([*after.keys(), *before.keys()])):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        change = "added" if key not in before else "removed" if key not in after else "changed"
        rows.append(
            {"field": key, "label": key.replace("_", " ").capitalize(), "change": change, "before": old, "after": new}
        )
    return {"previous_version": previous["version"], "fields": rows}


def charter_describe(approval: Approval) -> dict:
    charter = StoryCharter.objects.filter(pk=approval.subject_id, book_id=approval.book_id).first()
    if charter is None:
        return {"type": "charter", "id": approval.subject_id, "exists": False}
    return {
        "type": "charter",
        "id": str(charter.pk),
        "exists": True,
        "title": f"Story charter v{charter.version}",
        "version": charter.version,
        "status": charter.status,
        "proposed_by": charter.proposed_by,
        "content": charter.content,
        "fields": {key.replace("_", " ").capitalize(): value for key, value in charter.content.items()},
        "source_refs": charter.source_refs,
        "changes": charter_changes(charter),
    }


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
            *STORY_FIELDS,
            "approval_id",
        )
        .first()
    )
    return _as_decided_by(row, approval)


# The story record (seed 001) is part of the proposal: the fingerprint covers every field of it.
STORY_FIELDS = (
    "true_from_chapter",
    "true_until_chapter",
    "known_by",
    "known_by_characters",
    "first_shown_chapter",
    "decisive",
    "evidence_for_id",
    "reveal",
    "revises_id",
)


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
        _refuse_unadmitted_evidence(book_id=approval.book_id, evidence=evidence, source_refs=claim.source_refs)
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


def register() -> None:
    register_subject_handler(
        SubjectHandler(
            kind=ApprovalKind.STORY_CHARTER,
            verdicts=PROPOSAL_VERDICTS,
            digest=charter_digest,
            apply=charter_apply,
            describe=charter_describe,
        )
    )
    register_subject_handler(
        SubjectHandler(
            kind=ApprovalKind.CANON_PROMOTION,
            verdicts=PROPOSAL_VERDICTS,
            digest=claim_digest,
            apply=claim_apply,
            describe=claim_describe,
        )
    )
