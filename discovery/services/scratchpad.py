"""The append-only scratchpad (seed 000): provisional thinking, in creation order, never promoted."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from novelgraph.core.errors import Conflict, Invalid

from ..access import BookAccess, Cap, refusal
from ..models import DiscoverySession, Handoff, Provenance, ScratchpadEntry
from ..refs import validate_source_refs
from ..schemas import EntryIn
from .sessions import locked_session, refuse_author_stated_unless_author


def scratchpad_writer_role(access: BookAccess) -> str:
    """The agent role that may append to the book's scratchpad, or a 403.

    Terra and Luna hold scratchpad:write; Sol's discovery:write covers discovery records, so it
    may append too. People write turns, not scratchpad entries.
    """
    if not access.is_agent:
        raise refusal(access.role, Cap.SCRATCHPAD_WRITE, "people write turns; agents write the scratchpad")
    access.require(Cap.SCRATCHPAD_WRITE, Cap.DISCOVERY_WRITE)
    return access.role


def append_entry(
    *,
    session: DiscoverySession,
    agent_role: str,
    kind: str,
    content: str,
    confidence: float | None,
    source_refs: list[dict],
    handoff: Handoff | None = None,
    provenance: str | None = None,
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
        provenance=provenance,
        handoff=handoff,
        created_at=timezone.now(),
    )


def alternatives_left_out(session: DiscoverySession, cited: list[str]) -> list[ScratchpadEntry]:
    """The alternatives (entries of kind ``alternative``) carried by the entries a digest summarises
    and not cited by it: those returned by the same handoff as a cited entry, and those that cite a
    cited entry themselves (seed 000: a digest preserves the rejected alternatives). Two queries."""
    cited_set = {str(pk) for pk in cited}
    handoffs = set(
        ScratchpadEntry.objects.filter(pk__in=cited, session=session, handoff__isnull=False).values_list(
            "handoff_id", flat=True
        )
    )
    left_out = []
    for entry in ScratchpadEntry.objects.filter(session=session, kind=ScratchpadEntry.Kind.ALTERNATIVE).order_by(
        "sequence"
    ):
        if str(entry.pk) in cited_set:
            continue
        cites_summarised = any(
            isinstance(ref, dict) and ref.get("type") == "entry" and str(ref.get("id")) in cited_set
            for ref in entry.source_refs or []
        )
        if (entry.handoff_id is not None and entry.handoff_id in handoffs) or cites_summarised:
            left_out.append(entry)
    return left_out


def scratchpad_append(*, access: BookAccess, session: DiscoverySession, payload: EntryIn) -> ScratchpadEntry:
    """Append one provisional entry to a session's scratchpad (append-only; never deduplicated).

    Needs scratchpad:write (Terra, Luna) or, for Sol, discovery:write. Every typed source
    reference must resolve to something of the book the caller may read. A digest must cite at
    least one earlier entry of the same session. Nothing here changes a status or creates a
    claim: repetition is only more entries. Provenance, when given, says where the thought comes from:
    never ``author-stated`` from an agent, and ``literary-guidance`` cites the chunk it draws on.
    """
    agent_role = scratchpad_writer_role(access)
    if payload.provenance is not None:
        refuse_author_stated_unless_author(access, payload.provenance, field="provenance")
        if payload.provenance == Provenance.LITERARY_GUIDANCE and not any(
            ref.type == "chunk" for ref in payload.source_refs
        ):
            raise Invalid(
                "literary guidance cites the library chunk it draws on (a source ref of type chunk)",
                field="source_refs",
            )
    with transaction.atomic():
        session = locked_session(session)
        if session.status == DiscoverySession.Status.CLOSED:
            raise Conflict("this session is closed", code="session_not_open")
        refs = validate_source_refs(access, [r.dict() for r in payload.source_refs])
        if payload.kind == ScratchpadEntry.Kind.DIGEST:
            cited = [r["id"] for r in refs if r["type"] == "entry"]
            if not ScratchpadEntry.objects.filter(pk__in=cited, session=session).exists():
                raise Invalid(
                    "a digest must cite at least one earlier entry of this session (a source ref of type entry)",
                    field="source_refs",
                )
            missing = alternatives_left_out(session, cited)
            if missing:
                raise Invalid(
                    "a digest lists the alternatives of what it summarises; it leaves out "
                    + ", ".join(f"#{e.sequence} ({e.content[:60]})" for e in missing),
                    field="source_refs",
                    missing=[str(e.pk) for e in missing],
                )
        return append_entry(
            session=session,
            agent_role=agent_role,
            kind=payload.kind,
            content=payload.content,
            confidence=payload.confidence,
            source_refs=refs,
            provenance=payload.provenance,
        )
