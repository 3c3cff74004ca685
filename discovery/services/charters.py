"""Story charters: proposed by Sol, Terra or the author; binding only once the author approves."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from approvals.models import ApprovalKind, Verdict
from approvals.services import approval_request, subject_decide
from novelgraph.errors import Invalid, NotFound

from ..access import Cap, Principal, book_for
from ..models import Book, DiscoverySession, StoryCharter
from ..refs import validate_source_refs
from ..selectors import OPEN_SESSION_STATUSES
from .common import check_json, check_text, check_text_list

CHARTER_SUBJECT = "charter"


def _charter_content(data: dict) -> dict:
    protagonist = data.get("protagonist")
    if not isinstance(protagonist, dict) or not protagonist:
        raise Invalid("protagonist must be an object describing the protagonist", field="protagonist")
    content = {
        "main_thrust": check_text(data.get("main_thrust"), "main_thrust", max_length=10_000),
        "reader_promise": check_text_list(data.get("reader_promise"), "reader_promise", min_items=1),
        "protagonist": check_json(protagonist, "protagonist"),
        "central_conflict": check_text(data.get("central_conflict"), "central_conflict", max_length=10_000),
    }
    for key in ("genre_contract", "narrative_form", "ending_horizon"):
        value = check_text(data.get(key), key, max_length=10_000, required=False)
        if value:
            content[key] = value
    for key in ("thematic_questions", "constraints", "productive_unknowns", "rejected_directions"):
        value = check_text_list(data.get(key), key)
        if value:
            content[key] = value
    return content


def charter_propose(*, principal: Principal, book: Book, data: dict, source_refs: list | None = None) -> StoryCharter:
    """Propose the next version of the book's Story Charter with a pending story-charter approval.

    Needs charter:propose (Sol, Terra, the author). Version = the book's highest + 1, computed
    under the book row's lock; the book's open session (if any) becomes charter-proposed. One
    transaction: the charter and its approval exist together or not at all.
    """
    book = book_for(principal, book.pk, Cap.CHARTER_PROPOSE)
    content = _charter_content(data)
    role = principal.role_for(book)
    with transaction.atomic():
        Book.objects.select_for_update().only("pk").get(pk=book.pk)
        session = (
            DiscoverySession.objects.filter(book=book, status__in=OPEN_SESSION_STATUSES).order_by("-created_at").first()
        )
        refs = validate_source_refs(principal=principal, book=book, session=session, refs=source_refs)
        last = StoryCharter.objects.filter(book=book).aggregate(m=Max("version"))["m"] or 0
        charter = StoryCharter.objects.create(
            book=book,
            session=session,
            version=last + 1,
            proposed_by=role,
            content=content,
            source_refs=refs,
        )
        charter.approval = approval_request(
            book=book,
            kind=ApprovalKind.STORY_CHARTER,
            subject_type=CHARTER_SUBJECT,
            subject_id=charter.pk,
            summary=f"Story charter v{charter.version}: {content['main_thrust']}",
            requested_by_role=role,
            requested_by_user=principal.user,
        )
        charter.save(update_fields=["approval", "updated_at"])
        if session is not None and session.status == DiscoverySession.Status.ACTIVE:
            session.status = DiscoverySession.Status.CHARTER_PROPOSED
            session.save(update_fields=["status", "updated_at"])
    return charter


def charter_for(principal: Principal, charter_id: Any, *caps: Cap) -> StoryCharter:
    try:
        charter = StoryCharter.objects.select_related("book").get(pk=charter_id)
    except (StoryCharter.DoesNotExist, ValidationError, ValueError, TypeError):
        raise NotFound("charter not found") from None
    book_for(principal, charter.book_id, *caps)
    return charter


def charter_resolve(*, principal: Principal, charter_id: Any, approved: bool, rationale: str) -> StoryCharter:
    """The author approves or rejects a proposed charter, with a rationale.

    Only the book's author (a person) decides (403); a blank rationale is a 422; a charter
    that is not pending is a 409 and nothing changes. The decision goes through
    ``approvals.services.approval_decide`` (stores the rationale on the approval, appends to
    the decision log; the story-charter handler applies it to the charter).
    """
    charter = charter_for(principal, charter_id)
    subject_decide(
        principal=principal,
        book=charter.book,
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
