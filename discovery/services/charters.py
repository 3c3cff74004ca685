"""Story charters: proposed by Sol, Terra or the author; binding only once the author approves."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from approvals.models import ApprovalKind, Verdict
from approvals.services import approval_request, subject_decide
from novelgraph.core.db import lock_row

from ..access import BookAccess, Cap
from ..models import Book, DiscoverySession, StoryCharter
from ..refs import validate_source_refs
from ..schemas import CharterIn
from ..selectors import OPEN_SESSION_STATUSES

CHARTER_SUBJECT = "charter"


def charter_propose(*, access: BookAccess, payload: CharterIn) -> StoryCharter:
    """Propose the next version of the book's Story Charter with a pending story-charter approval.

    Needs charter:propose (Sol, Terra, the author). Version = the book's highest + 1, computed
    under the book row's lock; the book's open session (if any) becomes charter-proposed. After
    G2 passed, a version reopens convergence: an option card for the author shows its impact
    (``discovery.loop.services.charters``). One transaction: the charter, its approval and the
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
        # After G2 a new version reopens convergence: a card shows the author what it touches.
        from discovery.loop.services.charters import charter_reopen_card

        charter_reopen_card(book=book, charter=charter, proposed_by=access.role, user=access.user)
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
