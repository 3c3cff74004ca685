"""Handoffs (seed 000, "Practical handoff discipline"): a brief from Sol or the author to Terra or
Luna, with a dossier snapshot taken at that moment, and a result that separates facts,
inferences, options and questions, each of which becomes a scratchpad entry."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from novelgraph.errors import Conflict, Forbidden, Invalid, NotFound

from ..access import Cap, Principal, book_for, capabilities_of
from ..models import Book, DiscoverySession, Handoff, ScratchpadEntry
from ..refs import check_refs, validate_source_refs
from ..selectors import current_session
from .common import check_confidence, check_text
from .dossiers import dossier_store
from .sessions import _append_entry, scratchpad_writer_role

STATEMENT_STATUSES = ("fact", "inference", "option", "question")
TARGET_ROLES = ("terra", "luna")
RESULT_KINDS = {
    "facts": ScratchpadEntry.Kind.OBSERVATION,
    "inferences": ScratchpadEntry.Kind.HYPOTHESIS,
    "options": ScratchpadEntry.Kind.ALTERNATIVE,
    "questions": ScratchpadEntry.Kind.QUESTION,
}
MAX_ITEMS = 50


def handoff_create(
    *,
    principal: Principal,
    book: Book,
    to_role: str,
    decision: str,
    allowed_sources: list | None = None,
    statements: list | None = None,
) -> Handoff:
    """Sol or the author (discovery:write) hands a task to Terra or Luna: the decision it informs,
    the sources it may use (each readable by the sender and by the target role) and the status
    of each statement. Stores a dossier snapshot for the target role taken now.
    """
    book = book_for(principal, book.pk, Cap.DISCOVERY_WRITE)
    if to_role not in TARGET_ROLES:
        raise Invalid("to_role must be terra or luna", field="to_role")
    decision = check_text(decision, "decision", max_length=10_000)
    statements = statements or []
    if not isinstance(statements, list) or len(statements) > MAX_ITEMS:
        raise Invalid(f"statements takes at most {MAX_ITEMS} items", field="statements")
    clean_statements = []
    for i, st in enumerate(statements):
        where = f"statements[{i}]"
        if not isinstance(st, dict):
            raise Invalid(f"{where} must be an object {{text, status}}", field=where)
        clean_statements.append(
            {
                "text": check_text(st.get("text"), f"{where}.text", max_length=5_000),
                "status": check_choice_str(st.get("status"), STATEMENT_STATUSES, f"{where}.status"),
            }
        )
    with transaction.atomic():
        session = current_session(book)
        if session is None:
            raise Conflict("this book has no discovery session yet; start discovery first", code="no_session")
        sources = validate_source_refs(
            principal=principal, book=book, session=session, refs=allowed_sources, field="allowed_sources"
        )
        check_refs(sources, books=[book], caps=capabilities_of(to_role), who=to_role, field="allowed_sources")
        dossier = dossier_store(book=book, agent_role=to_role, requested_by=principal.user)
        return Handoff.objects.create(
            book=book,
            session=session,
            from_role=principal.role_for(book),
            to_role=to_role,
            decision=decision,
            allowed_sources=sources,
            statements=clean_statements,
            dossier=dossier,
        )


def check_choice_str(value: Any, choices: tuple[str, ...], field: str) -> str:
    if value not in choices:
        raise Invalid(f"{field} must be one of {', '.join(choices)}", field=field)
    return value


def handoff_for(*, principal: Principal, handoff_id: Any, lock: bool = False) -> Handoff:
    handoffs = Handoff.objects.select_related("book", "session")
    if lock:
        handoffs = handoffs.select_for_update(of=("self",))
    try:
        handoff = handoffs.get(pk=handoff_id)
    except (Handoff.DoesNotExist, ValidationError, ValueError, TypeError):
        raise NotFound("handoff not found") from None
    book_for(principal, handoff.book_id, Cap.DISCOVERY_READ)
    return handoff


def handoff_return(*, principal: Principal, handoff_id: Any, result: dict) -> Handoff:
    """The target role returns its result once: every fact, inference, option and question becomes a
    scratchpad entry of the handoff's session linked to the handoff (fact -> observation,
    inference -> hypothesis, option -> alternative, question -> question). Only the target role
    (403 for anyone else); a returned handoff is a 409; at least one item (422).
    """
    items: list[tuple[str, str, list, float | None]] = []
    total = 0
    for key, kind in RESULT_KINDS.items():
        values = result.get(key) or []
        if not isinstance(values, list):
            raise Invalid(f"{key} must be a list", field=key)
        total += len(values)
        if len(values) > MAX_ITEMS:
            raise Invalid(f"{key} takes at most {MAX_ITEMS} items", field=key)
        for i, item in enumerate(values):
            where = f"{key}[{i}]"
            if not isinstance(item, dict):
                raise Invalid(f"{where} must be an object {{text, source_refs, confidence?}}", field=where)
            items.append(
                (
                    kind,
                    check_text(item.get("text"), f"{where}.text", max_length=20_000),
                    item.get("source_refs") or [],
                    check_confidence(item.get("confidence"), f"{where}.confidence"),
                    where,
                )
            )
    if total == 0:
        raise Invalid("a result needs at least one fact, inference, option or question", field="facts")
    with transaction.atomic():
        handoff = handoff_for(principal=principal, handoff_id=handoff_id, lock=True)
        if not principal.is_agent or principal.key_role != handoff.to_role:
            who = principal.role_for(handoff.book)
            raise Forbidden(
                f"only {handoff.to_role} returns this handoff; {who} is not its target",
                code="not_target_role",
            )
        agent_role = scratchpad_writer_role(principal, handoff.book)
        if handoff.status != Handoff.Status.OPEN:
            raise Conflict("this handoff was already returned", code="already_returned")
        session = DiscoverySession.objects.select_for_update().get(pk=handoff.session_id)
        for kind, text, refs, confidence, where in items:
            clean = validate_source_refs(
                principal=principal, book=handoff.book, session=session, refs=refs, field=f"{where}.source_refs"
            )
            _append_entry(
                session=session,
                agent_role=agent_role,
                kind=kind,
                content=text,
                confidence=confidence,
                source_refs=clean,
                handoff=handoff,
            )
        handoff.status = Handoff.Status.RETURNED
        handoff.returned_at = timezone.now()
        handoff.save(update_fields=["status", "returned_at", "updated_at"])
    return handoff
