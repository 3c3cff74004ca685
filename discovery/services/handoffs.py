"""Handoffs (seed 000, "Practical handoff discipline"): a brief from Sol or the author to Terra or
Luna, with a dossier snapshot taken at that moment, and a result that separates facts,
inferences, options and questions, each of which becomes a scratchpad entry."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from novelgraph.core.db import lock_row
from novelgraph.core.errors import Conflict, Forbidden, Invalid

from ..access import BookAccess, Cap, capabilities_of
from ..models import Book, Handoff, ScratchpadEntry
from ..refs import check_refs, validate_source_refs
from ..schemas import REF_TYPES, HandoffIn, HandoffResultIn
from ..selectors import current_session
from .dossiers import dossier_store
from .scratchpad import append_entry, scratchpad_writer_role
from .sessions import locked_session

RESULT_KINDS = {
    "facts": ScratchpadEntry.Kind.OBSERVATION,
    "inferences": ScratchpadEntry.Kind.HYPOTHESIS,
    "options": ScratchpadEntry.Kind.ALTERNATIVE,
    "questions": ScratchpadEntry.Kind.QUESTION,
}


def handoff_create(*, access: BookAccess, payload: HandoffIn) -> Handoff:
    """Sol or the author (discovery:write) hands a task to Terra or Luna: the decision it informs,
    the sources it may use (each readable by the sender and by the target role) and the status
    of each statement. Stores a dossier snapshot for the target role taken now.
    """
    access.require(Cap.DISCOVERY_WRITE)
    with transaction.atomic():
        session = current_session(access.book)
        if session is None:
            raise Conflict("this book has no discovery session yet; start discovery first", code="no_session")
        sources = validate_source_refs(access, [r.dict() for r in payload.allowed_sources], field="allowed_sources")
        # A handoff gives the target role nothing its role may not read (no series canon to Luna).
        check_refs(
            sources,
            books=[access.book],
            caps=capabilities_of(payload.to_role),
            who=payload.to_role,
            field="allowed_sources",
        )
        dossier = dossier_store(book=access.book, agent_role=payload.to_role, requested_by=access.user)
        return Handoff.objects.create(
            book=access.book,
            session=session,
            from_role=access.role,
            to_role=payload.to_role,
            decision=payload.decision,
            allowed_sources=sources,
            statements=[statement.dict() for statement in payload.statements],
            dossier=dossier,
        )


# An allowed source ``{"type": "other", "id": "any:<type>"}`` lets the result cite any readable
# source of that type (e.g. ``any:chunk``: the curated library, searched by the worker).
ANY_OF_TYPE = "any:"

# Seed 000, "Terra to Sol": structural analysis, alternatives, risks, charter-ready language.
TERRA_TO_SOL = {
    "analysis": "a structural analysis",
    "options": "the alternatives (at least one option)",
    "risks": "the risks (at least one)",
    "charter_language": "charter-ready language",
}


def _check_allowed(handoff: Handoff, refs: list[dict], field: str) -> None:
    """A result cites only what its handoff allowed (422 naming the offending reference)."""
    allowed = {(ref["type"], str(ref["id"])) for ref in handoff.allowed_sources or []}
    any_types = {ref_id.removeprefix(ANY_OF_TYPE) for kind, ref_id in allowed if kind == "other"}
    any_types = {t for t in any_types if t in REF_TYPES and t != "other"}
    for i, ref in enumerate(refs):
        if (ref["type"], str(ref["id"])) in allowed or ref["type"] in any_types:
            continue
        raise Invalid(
            f"{field}[{i}]: {ref['type']} {ref['id']} is not among the sources this handoff allowed",
            field=f"{field}[{i}]",
            reference=ref,
        )


def _require_terra_to_sol(handoff: Handoff, payload: HandoffResultIn) -> None:
    if not (handoff.from_role == "sol" and handoff.to_role == "terra"):
        return
    for field, what in TERRA_TO_SOL.items():
        if not getattr(payload, field):
            raise Invalid(f"{field}: a Terra result to Sol carries {what}", field=field)


def handoff_return(*, access: BookAccess, handoff: Handoff, payload: HandoffResultIn) -> Handoff:
    """The target role returns its result once: every fact, inference, option and question becomes a
    scratchpad entry of the handoff's session linked to the handoff (fact -> observation,
    inference -> hypothesis, option -> alternative, question -> question). Only the target role
    (403 for anyone else); a returned handoff is a 409; at least one item (422). Every reference
    must be one the handoff allowed (422 naming it; ``other``/``any:<type>`` allows a whole type).
    A result of a Sol -> Terra handoff carries analysis, options, risks and charter_language (422).
    """
    items = [(kind, key, i, item) for key, kind in RESULT_KINDS.items() for i, item in enumerate(getattr(payload, key))]
    if not items:
        raise Invalid("a result needs at least one fact, inference, option or question", field="facts")
    if not access.is_agent or access.role != handoff.to_role:
        raise Forbidden(
            f"only {handoff.to_role} returns this handoff; {access.role} is not its target", code="not_target_role"
        )
    agent_role = scratchpad_writer_role(access)
    _require_terra_to_sol(handoff, payload)
    with transaction.atomic():
        lock_row(Book, handoff.book_id)  # one lock order (novelgraph.core.db.lock_row): the book first
        handoff = Handoff.objects.select_for_update(no_key=True).get(pk=handoff.pk)
        if handoff.status != Handoff.Status.OPEN:
            raise Conflict("this handoff was already returned", code="already_returned")
        session = locked_session(handoff.session)
        for kind, key, i, item in items:
            refs = validate_source_refs(access, [r.dict() for r in item.source_refs], field=f"{key}[{i}].source_refs")
            _check_allowed(handoff, refs, f"{key}[{i}].source_refs")
            append_entry(
                session=session,
                agent_role=agent_role,
                kind=kind,
                content=item.text,
                confidence=item.confidence,
                source_refs=refs,
                handoff=handoff,
            )
        handoff.status = Handoff.Status.RETURNED
        handoff.returned_at = timezone.now()
        handoff.result = {
            key: getattr(payload, key) for key in ("analysis", "risks", "charter_language") if getattr(payload, key)
        }
        handoff.save(update_fields=["status", "returned_at", "result", "updated_at"])
    return handoff
