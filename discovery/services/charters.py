"""Story charters, every rule of them: proposed by Sol, Terra or the author; binding only once the author approves.

The proposal (``charter_propose``), the author's decision (``charter_resolve``, or her verdict on the review page:
the story-charter subject handler below), what a version's approval fingerprints and makes canon. Discovery
announces a proposal and a decision (``discovery.signals``); the loop listens (a version proposed after G2
reopens convergence).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from approvals.canon_record import CanonKind
from approvals.models import Approval, ApprovalKind, Verdict
from approvals.services import approval_request, capped_in, subject_decide
from approvals.subjects import PROPOSAL_VERDICTS, Decision, SubjectHandler
from novelgraph.core.db import lock_row
from novelgraph.core.digest import fingerprint
from novelgraph.core.errors import Conflict

from ..access import BookAccess, Cap
from ..models import Book, DiscoverySession, StoryCharter
from ..refs import resolve_source_refs, validate_source_refs
from ..schemas import CharterIn
from ..selectors import OPEN_SESSION_STATUSES
from ..signals import charter_decided, charter_proposed
from .subjects import as_decided_by, refuse_unadmitted_evidence

CHARTER_SUBJECT = "charter"


def charter_propose(*, access: BookAccess, payload: CharterIn) -> StoryCharter:
    """Propose the next version of the book's Story Charter with a pending story-charter approval.

    Needs charter:propose (Sol, Terra, the author). Version = the book's highest + 1, computed
    under the book row's lock; the book's open session (if any) becomes charter-proposed. After
    G2 passed, a version reopens convergence: an option card for the author shows its impact
    (the loop listens to ``charter_proposed``). One transaction: the charter, its approval and the
    card exist together or not at all.
    """
    access.require(Cap.CHARTER_PROPOSE)
    book = access.book
    content = payload.content()
    with transaction.atomic():
        lock_row(Book, book.pk)
        session = (
            DiscoverySession.objects.filter(book=book, status__in=OPEN_SESSION_STATUSES).order_by("-created_at").first()
        )
        refs = validate_source_refs(access, [r.dict() for r in payload.source_refs])
        last = StoryCharter.objects.filter(book=book).aggregate(m=Max("version"))["m"] or 0
        charter = StoryCharter.objects.create(
            book=book,
            session=session,
            version=last + 1,
            proposed_by=access.role,
            content=content,
            source_refs=refs,
        )
        charter.approval = approval_request(
            book=book,
            kind=ApprovalKind.STORY_CHARTER,
            subject_type=CHARTER_SUBJECT,
            subject_id=charter.pk,
            summary=f"Story charter v{charter.version}: {content['main_thrust']}",
            requested_by_role=access.role,
            requested_by_user=access.user,
        )
        charter.save(update_fields=["approval", "updated_at"])
        # After G2 a new version reopens convergence: the loop raises a card showing the author what it touches.
        charter_proposed.send(sender=StoryCharter, charter=charter, proposed_by=access.role, user=access.user)
        if session is not None and session.status == DiscoverySession.Status.ACTIVE:
            session.status = DiscoverySession.Status.CHARTER_PROPOSED
            session.save(update_fields=["status", "updated_at"])
    return charter


def charter_resolve(*, access: BookAccess, charter: StoryCharter, approved: bool, rationale: str) -> StoryCharter:
    """The author approves or rejects a proposed charter, with a rationale.

    Only the book's author (a person) decides (403); a blank rationale is a 422; a charter
    that is not pending is a 409 and nothing changes. The decision goes through
    ``approvals.services.approval_decide`` (stores the rationale on the approval, appends to
    the decision log; the story-charter handler applies it to the charter).
    """
    subject_decide(
        access=access,
        kind=ApprovalKind.STORY_CHARTER,
        subject_type=CHARTER_SUBJECT,
        subject_id=charter.pk,
        subject_pending=charter.status == StoryCharter.Status.PROPOSED,
        subject_label=f"charter v{charter.version} ({charter.status})",
        summary=f"Story charter v{charter.version}: {charter.main_thrust}",
        verdict=Verdict.APPROVE if approved else Verdict.REJECT,
        rationale=rationale,
    )
    charter.refresh_from_db()
    return charter


def charter_content_digest(content: dict) -> str:
    """The digest of a charter version's content: what the charter's approval and the G2 ratification name."""
    return fingerprint(content)


# --- The author's verdict (the story-charter subject of approvals) ------------


def _charter_row(approval: Approval) -> dict | None:
    row = (
        StoryCharter.objects.filter(pk=approval.subject_id, book_id=approval.book_id)
        .values("id", "book_id", "version", "status", "content", "source_refs", "approval_id")
        .first()
    )
    return as_decided_by(row, approval)


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
        refuse_unadmitted_evidence(book_id=charter.book_id, evidence=None, source_refs=charter.source_refs)
        superseded = StoryCharter.objects.filter(
            book_id=charter.book_id,
            version__lt=charter.version,
            status__in=[StoryCharter.Status.APPROVED, StoryCharter.Status.PROPOSED],
        )
        # Each superseded version records this approval, so GET /approvals/{id}/superseded-versions lists them all.
        versions = sorted(superseded.values_list("version", flat=True))
        capped_in(decision.detail, "superseded_versions", versions, approval, "superseded-versions")
        decision.detail["content_digest"] = charter_content_digest(charter.content)
        superseded.update(status=StoryCharter.Status.SUPERSEDED, superseded_by=approval)
        charter.status = StoryCharter.Status.APPROVED
        charter.approval = approval
        charter.save(update_fields=["status", "approval", "updated_at"])
        charter_decided.send(sender=StoryCharter, charter=charter, approved=True, detail=decision.detail)
        # Nothing waits any more: the conversation goes on, active (it is never closed here).
        DiscoverySession.objects.filter(
            book_id=charter.book_id, status=DiscoverySession.Status.CHARTER_PROPOSED
        ).update(status=DiscoverySession.Status.ACTIVE)
    else:
        charter.status = StoryCharter.Status.REJECTED
        charter.approval = approval
        charter.save(update_fields=["status", "approval", "updated_at"])
        charter_decided.send(sender=StoryCharter, charter=charter, approved=False, detail=decision.detail)
        if charter.session_id:
            DiscoverySession.objects.filter(
                pk=charter.session_id, status=DiscoverySession.Status.CHARTER_PROPOSED
            ).update(status=DiscoverySession.Status.ACTIVE)


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


# --- What became canon (approvals.canon_record) -----------------------------


def charter_canon_rows(book, ids=None):
    """Each approved charter version (of the book, or of ``ids``) with the content its approval made binding."""
    rows = StoryCharter.objects.filter(status=StoryCharter.Status.APPROVED)
    rows = rows.filter(book=book) if ids is None else rows.filter(pk__in=ids)
    for pk, version, content, refs in rows.order_by("version").values_list("pk", "version", "content", "source_refs"):
        yield str(pk), {"version": version, "content": content, "source_refs": refs}, None


def charter_statuses(ids) -> dict[str, str]:
    return {str(pk): status for pk, status in StoryCharter.objects.filter(pk__in=ids).values_list("pk", "status")}


CHARTER_HANDLER = SubjectHandler(
    kind=ApprovalKind.STORY_CHARTER,
    verdicts=PROPOSAL_VERDICTS,
    digest=charter_digest,
    apply=charter_apply,
    describe=charter_describe,
    sources=resolve_source_refs,
)
CHARTER_CANON = CanonKind(
    CHARTER_SUBJECT,
    "charter",
    charter_canon_rows,
    statuses=charter_statuses,
    marks=("canon", "charter_version"),  # charter_apply names the version on every verdict
    one_per_book=True,
)
