"""Discovery sessions: start, turns with observations, the append-only scratchpad, thrust candidates."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from novelgraph.errors import Conflict, Forbidden, Invalid

from ..access import Cap, Principal, require
from ..models import (
    LITERARY_LIBRARY_NAME,
    LITERARY_OWNER_ID,
    AgentRole,
    Book,
    DiscoverySession,
    KnowledgeBase,
    KnowledgeLink,
    Observation,
    Provenance,
    ScratchpadEntry,
    ThrustCandidate,
    Turn,
)
from ..refs import validate_source_refs
from ..selectors import OPEN_SESSION_STATUSES
from .common import check_choice, check_confidence, check_text, check_text_list, refuse, session_for

MAX_OBSERVATIONS = 50


# --- Knowledge bases ---------------------------------------------------------


def literary_base() -> KnowledgeBase:
    base, _ = KnowledgeBase.objects.get_or_create(
        scope=KnowledgeBase.Scope.LITERARY,
        owner_id=LITERARY_OWNER_ID,
        defaults={"name": LITERARY_LIBRARY_NAME},
    )
    return base


def series_base(series) -> KnowledgeBase:
    base, _ = KnowledgeBase.objects.get_or_create(
        scope=KnowledgeBase.Scope.SERIES,
        owner_id=str(series.pk),
        defaults={"name": f"{series.title}: series canon"[:200]},
    )
    return base


def book_base(book: Book) -> KnowledgeBase:
    base, _ = KnowledgeBase.objects.get_or_create(
        scope=KnowledgeBase.Scope.BOOK,
        owner_id=str(book.pk),
        defaults={"name": f"{book.title}: book canon"[:200]},
    )
    return base


def run_base(session: DiscoverySession) -> KnowledgeBase:
    base, _ = KnowledgeBase.objects.get_or_create(
        scope=KnowledgeBase.Scope.RUN,
        owner_id=str(session.pk),
        defaults={"name": f"{session.book.title}: run {str(session.pk)[:8]}"[:200]},
    )
    return base


def ensure_knowledge_bases(book: Book) -> list[KnowledgeLink]:
    """The book's knowledge bases and links: the global literary base (literary-guidance), its
    series' base (series-canon) when it has a series, and its own base (book-canon). Idempotent."""
    wanted = [(literary_base(), KnowledgeLink.Relation.LITERARY_GUIDANCE)]
    if book.series_id:
        wanted.append((series_base(book.series), KnowledgeLink.Relation.SERIES_CANON))
    wanted.append((book_base(book), KnowledgeLink.Relation.BOOK_CANON))
    return [KnowledgeLink.objects.get_or_create(book=book, base=base, relation=rel)[0] for base, rel in wanted]


# --- Sessions ---------------------------------------------------------------


def discovery_start(*, principal: Principal, book: Book) -> tuple[DiscoverySession, bool]:
    """Start (or resume) the discovery of a book; returns ``(session, created)``.

    Needs discovery:write (the author, Sol). Ensures the knowledge bases, then returns the
    session that is active or charter-proposed, or creates an active one with the opening
    question. The book row is locked, so two concurrent starts make one session.
    """
    require(principal, Cap.DISCOVERY_WRITE, book=book)
    with transaction.atomic():
        Book.objects.select_for_update().only("pk").get(pk=book.pk)
        ensure_knowledge_bases(book)
        session = (
            DiscoverySession.objects.filter(book=book, status__in=OPEN_SESSION_STATUSES).order_by("-created_at").first()
        )
        if session is not None:
            return session, False
        session = DiscoverySession.objects.create(book=book)
        # The discovery loop (seed 002): the book's loop at G0 with its root node.
        from discovery.loop.services import loop_ensure

        loop_ensure(book=book)
        return session, True


def _writable(session: DiscoverySession) -> None:
    if session.status not in OPEN_SESSION_STATUSES:
        raise Conflict(
            f"this session is {session.status}; start a new discovery to continue",
            code="session_not_open",
        )


def turn_create(
    *,
    principal: Principal,
    session_id: Any,
    role: str,
    content: str,
    observations: list[dict] | None = None,
) -> Turn:
    """One turn of the conversation, with its observations, in one transaction.

    Authors and editors need turn:write, Sol discovery:write; ``role`` must be the caller's own
    role for the book (403 otherwise). Ordinals run 1, 2, 3... per session: the session row is
    locked and the next ordinal computed under the lock, so concurrent posts never collide.
    Observations default to status working.
    """
    content = check_text(content, "content", max_length=50_000)
    observations = observations or []
    if len(observations) > MAX_OBSERVATIONS:
        raise Invalid(f"observations takes at most {MAX_OBSERVATIONS} items", field="observations")
    rows = []
    for i, obs in enumerate(observations):
        where = f"observations[{i}]"
        rows.append(
            {
                "key": check_text(obs.get("key"), f"{where}.key", max_length=200),
                "value": check_text(obs.get("value"), f"{where}.value", max_length=20_000),
                "provenance": check_choice(obs.get("provenance"), Provenance, f"{where}.provenance"),
                "confidence": check_confidence(obs.get("confidence"), f"{where}.confidence"),
                "status": check_choice(obs.get("status") or "working", Observation.Status, f"{where}.status"),
            }
        )
    with transaction.atomic():
        session = session_for(principal, session_id, lock=True)
        book = session.book
        speaker = principal.role_for(book)
        require(principal, Cap.TURN_WRITE, Cap.DISCOVERY_WRITE, book=book)
        if speaker not in Turn.Speaker.values:
            raise refuse(speaker, Cap.TURN_WRITE)
        if role != speaker:
            raise Forbidden(
                f"this caller writes turns as {speaker}; a turn claiming role {role!r} is refused",
                code="role_mismatch",
            )
        _writable(session)
        last = Turn.objects.filter(session=session).aggregate(m=Max("ordinal"))["m"] or 0
        turn = Turn.objects.create(
            session=session,
            ordinal=last + 1,
            role=speaker,
            written_by=principal.user,
            content=content,
        )
        Observation.objects.bulk_create([Observation(session=session, turn=turn, **row) for row in rows])
    return turn


# --- The scratchpad ---------------------------------------------------------


def scratchpad_writer_role(principal: Principal, book: Book) -> str:
    """The agent role that may append to ``book``'s scratchpad, or a 403.

    Terra and Luna hold scratchpad:write; Sol's discovery:write covers discovery records, so it
    may append too. People write turns, not scratchpad entries.
    """
    role = principal.role_for(book)
    if role not in AgentRole.values:
        raise refuse(role, Cap.SCRATCHPAD_WRITE, "people write turns; agents write the scratchpad")
    held = principal.capabilities_for(book)
    if Cap.SCRATCHPAD_WRITE not in held and Cap.DISCOVERY_WRITE not in held:
        raise refuse(role, Cap.SCRATCHPAD_WRITE)
    return role


def _append_entry(
    *,
    session: DiscoverySession,
    agent_role: str,
    kind: str,
    content: str,
    confidence: float | None,
    source_refs: list[dict],
    handoff=None,
) -> ScratchpadEntry:
    """Append under the session lock (the caller holds it): the next sequence is max + 1."""
    last = ScratchpadEntry.objects.filter(session=session).aggregate(m=Max("sequence"))["m"] or 0
    return ScratchpadEntry.objects.create(
        id=uuid.uuid4(),
        session=session,
        sequence=last + 1,
        agent_role=agent_role,
        kind=kind,
        content=content,
        confidence=confidence,
        source_refs=source_refs,
        handoff=handoff,
        created_at=timezone.now(),
    )


def scratchpad_append(
    *,
    principal: Principal,
    session_id: Any,
    kind: str,
    content: str,
    confidence: float | None = None,
    source_refs: list[dict] | None = None,
) -> ScratchpadEntry:
    """Append one provisional entry to a session's scratchpad (append-only; never deduplicated).

    Needs scratchpad:write (Terra, Luna) or, for Sol, discovery:write. Confidence is optional
    and within 0..1. Every typed source reference must resolve to something of the book the
    caller may read. A digest must cite at least one earlier entry of the same session.
    Nothing here changes a status or creates a claim: repetition is only more entries.
    """
    kind = check_choice(kind, ScratchpadEntry.Kind, "kind")
    content = check_text(content, "content", max_length=20_000)
    confidence = check_confidence(confidence)
    with transaction.atomic():
        session = session_for(principal, session_id, lock=True)
        agent_role = scratchpad_writer_role(principal, session.book)
        if session.status == DiscoverySession.Status.CLOSED:
            raise Conflict("this session is closed", code="session_not_open")
        refs = validate_source_refs(principal=principal, book=session.book, session=session, refs=source_refs)
        if kind == ScratchpadEntry.Kind.DIGEST:
            cited = [r["id"] for r in refs if r["type"] == "entry"]
            same_session = set(
                str(pk)
                for pk in ScratchpadEntry.objects.filter(pk__in=cited, session=session).values_list("pk", flat=True)
            )
            if not same_session:
                raise Invalid(
                    "a digest must cite at least one earlier entry of this session (a source ref of type entry)",
                    field="source_refs",
                )
        return _append_entry(
            session=session,
            agent_role=agent_role,
            kind=kind,
            content=content,
            confidence=confidence,
            source_refs=refs,
        )


# --- Thrust candidates ------------------------------------------------------


def thrust_propose(*, principal: Principal, session_id: Any, data: dict) -> ThrustCandidate:
    """A story-thrust candidate, stored as proposed. Needs charter:propose (Terra) or discovery:write
    (Sol, the author). Moves an active session to charter-proposed; never moves an approved one back.
    """
    kind = check_choice(data.get("kind"), ThrustCandidate.Kind, "kind")
    fields = {
        "title": check_text(data.get("title"), "title", max_length=200),
        "main_thrust": check_text(data.get("main_thrust"), "main_thrust", max_length=10_000),
        "character_engine": check_text(data.get("character_engine"), "character_engine", max_length=10_000),
        "central_conflict": check_text(data.get("central_conflict"), "central_conflict", max_length=10_000),
        "reader_promise": check_text_list(data.get("reader_promise"), "reader_promise", min_items=1),
        "thematic_pressure": check_text(
            data.get("thematic_pressure"), "thematic_pressure", max_length=10_000, required=False
        ),
        "genre_obligations": check_text_list(data.get("genre_obligations"), "genre_obligations"),
        "ending_shape": check_text(data.get("ending_shape"), "ending_shape", max_length=10_000, required=False),
        "risks": check_text_list(data.get("risks"), "risks"),
        "forecloses": check_text_list(data.get("forecloses"), "forecloses"),
    }
    with transaction.atomic():
        session = session_for(principal, session_id, lock=True)
        require(principal, Cap.CHARTER_PROPOSE, Cap.DISCOVERY_WRITE, book=session.book)
        if session.status == DiscoverySession.Status.CLOSED:
            raise Conflict("this session is closed", code="session_not_open")
        thrust = ThrustCandidate.objects.create(
            session=session, proposed_by=principal.role_for(session.book), kind=kind, **fields
        )
        if session.status == DiscoverySession.Status.ACTIVE:
            session.status = DiscoverySession.Status.CHARTER_PROPOSED
            session.save(update_fields=["status", "updated_at"])
    return thrust
