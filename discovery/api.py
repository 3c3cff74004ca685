"""Discovery routes (seed 000). Thin: authenticate, validate, call a service."""

import uuid
from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.pagination import paginate
from ninja.responses import Status
from pydantic import StrictBool

from novelgraph.api import principal_of
from novelgraph.schemas import ERRORS

from . import services
from .access import Cap, book_for, capabilities_of
from .models import Book, ContextDossier, Handoff
from .selectors import discovery_view, scratchpad_for

router = Router(tags=["discovery"])

RefType = Literal["turn", "observation", "entry", "claim", "chunk", "research", "charter", "other"]
EntryKind = Literal["observation", "hypothesis", "question", "contradiction", "alternative", "digest"]
AgentRoleName = Literal["sol", "terra", "luna"]
ProvenanceName = Literal["author-stated", "agent-inferred", "literary-guidance", "agent-proposed"]
Text200 = Field(..., min_length=1, max_length=200)


# --- Schemas ----------------------------------------------------------------


class SourceRef(Schema):
    type: RefType
    id: str = Field(..., min_length=1, max_length=500)
    label: str | None = Field(None, max_length=300)


class WhoAmI(Schema):
    username: str
    role: str
    capabilities: list[str]
    book_ids: list[str]


class SeriesIn(Schema):
    title: str = Text200
    premise: str = Field("", max_length=20_000)
    publication_target: str = Field("", max_length=200)


class SeriesOut(Schema):
    id: uuid.UUID
    title: str
    premise: str
    publication_target: str
    created_at: datetime


class BookIn(Schema):
    series_id: uuid.UUID | None = None
    title: str = Text200
    premise: str = Field("", max_length=20_000)
    genre_pack: str = Field("", max_length=100)
    planned_order: int | None = Field(None, ge=0, le=10_000)


class BookOut(Schema):
    id: uuid.UUID
    title: str
    slug: str
    premise: str
    genre_pack: str
    planned_order: int | None
    series_id: uuid.UUID | None
    created_at: datetime


class BookDetailOut(BookOut):
    role: str
    capabilities: list[str]


class StartOut(Schema):
    session_id: uuid.UUID
    status: str
    current_question: str


class ObservationIn(Schema):
    key: str = Text200
    value: str = Field(..., min_length=1, max_length=20_000)
    provenance: ProvenanceName
    confidence: float | None = Field(None, ge=0, le=1)
    status: Literal["working", "confirmed", "resolved", "rejected"] = "working"


class TurnIn(Schema):
    role: Literal["author", "editor", "sol"]
    content: str = Field(..., min_length=1, max_length=50_000)
    observations: list[ObservationIn] = Field(default_factory=list, max_length=50)


class ObservationOut(Schema):
    id: uuid.UUID
    turn_id: uuid.UUID
    key: str
    value: str
    provenance: str
    confidence: float | None
    status: str
    created_at: datetime


class TurnOut(Schema):
    id: uuid.UUID
    session_id: uuid.UUID
    ordinal: int
    role: str
    content: str
    created_at: datetime
    observations: list[ObservationOut]


class EntryIn(Schema):
    kind: EntryKind
    content: str = Field(..., min_length=1, max_length=20_000)
    confidence: float | None = Field(None, ge=0, le=1)
    source_refs: list[SourceRef] = Field(default_factory=list, max_length=50)


class EntryOut(Schema):
    id: uuid.UUID
    session_id: uuid.UUID
    sequence: int
    agent_role: str
    kind: str
    content: str
    confidence: float | None
    source_refs: list[dict]
    handoff_id: uuid.UUID | None
    created_at: datetime


class ScratchpadFilter(Schema):
    kind: EntryKind | None = None
    agent_role: AgentRoleName | None = None


class ThrustIn(Schema):
    kind: Literal["core", "stretch", "wild"]
    title: str = Text200
    main_thrust: str = Field(..., min_length=1, max_length=10_000)
    character_engine: str = Field(..., min_length=1, max_length=10_000)
    central_conflict: str = Field(..., min_length=1, max_length=10_000)
    reader_promise: list[str] = Field(..., min_length=1, max_length=50)
    thematic_pressure: str = Field("", max_length=10_000)
    genre_obligations: list[str] = Field(default_factory=list, max_length=50)
    ending_shape: str = Field("", max_length=10_000)
    risks: list[str] = Field(default_factory=list, max_length=50)
    forecloses: list[str] = Field(default_factory=list, max_length=50)


class ThrustOut(Schema):
    id: uuid.UUID
    session_id: uuid.UUID
    kind: str
    status: str
    proposed_by: str
    title: str
    main_thrust: str
    character_engine: str
    central_conflict: str
    reader_promise: list[str]
    thematic_pressure: str
    genre_obligations: list[str]
    ending_shape: str
    risks: list[str]
    forecloses: list[str]
    created_at: datetime


class CharterIn(Schema):
    main_thrust: str = Field(..., min_length=1, max_length=10_000)
    reader_promise: list[str] = Field(..., min_length=1, max_length=50)
    protagonist: dict[str, Any]
    central_conflict: str = Field(..., min_length=1, max_length=10_000)
    genre_contract: str | None = Field(None, max_length=10_000)
    thematic_questions: list[str] = Field(default_factory=list, max_length=50)
    narrative_form: str | None = Field(None, max_length=10_000)
    ending_horizon: str | None = Field(None, max_length=10_000)
    constraints: list[str] = Field(default_factory=list, max_length=50)
    productive_unknowns: list[str] = Field(default_factory=list, max_length=50)
    rejected_directions: list[str] = Field(default_factory=list, max_length=50)
    source_refs: list[SourceRef] = Field(default_factory=list, max_length=50)


class CharterCreatedOut(Schema):
    id: uuid.UUID
    version: int
    status: str
    approval_id: uuid.UUID


class CharterResolveIn(Schema):
    approved: StrictBool
    rationale: str = Field(..., max_length=10_000)


class CharterOut(Schema):
    id: uuid.UUID
    book_id: uuid.UUID
    session_id: uuid.UUID | None
    version: int
    status: str
    proposed_by: str
    content: dict
    source_refs: list[dict]
    approval_id: uuid.UUID | None
    created_at: datetime


class EvidenceIn(Schema):
    kind: Literal["physical", "testimonial", "documentary", "digital", "forensic"]
    decisive: StrictBool = False
    research_ids: list[uuid.UUID] = Field(default_factory=list, max_length=50)


class ClaimIn(Schema):
    scope: Literal["literary", "series", "book", "run"]
    scope_id: str = Field(..., min_length=1, max_length=64)
    subject: str = Field(..., min_length=1, max_length=300)
    predicate: str = Field(..., min_length=1, max_length=300)
    value: Any = Field(...)
    provenance: ProvenanceName
    source_refs: list[SourceRef] = Field(default_factory=list, max_length=50)
    evidence: EvidenceIn | None = None
    status: str | None = Field(None, max_length=20, description="Claims always enter as proposed.")


class ClaimOut(Schema):
    id: uuid.UUID
    base_id: uuid.UUID
    subject: str
    predicate: str
    value: Any
    provenance: str
    status: str
    proposed_by: str
    source_refs: list[dict]
    evidence: dict | None
    approval_id: uuid.UUID | None
    created_at: datetime


class RequestApprovalIn(Schema):
    book_id: uuid.UUID
    note: str = Field("", max_length=10_000)


class ApprovalRefOut(Schema):
    approval_id: uuid.UUID
    claim_id: uuid.UUID
    status: str


class ClaimDecisionIn(Schema):
    book_id: uuid.UUID
    rationale: str = Field(..., max_length=10_000)


class ClaimDecisionOut(Schema):
    approval_id: uuid.UUID
    claim_id: uuid.UUID
    claim_status: str
    verdict: str | None


class DossierIn(Schema):
    agent_role: AgentRoleName


class DossierOut(Schema):
    id: uuid.UUID
    book_id: uuid.UUID
    session_id: uuid.UUID | None
    agent_role: str
    created_at: datetime
    content: dict


class Statement(Schema):
    text: str = Field(..., min_length=1, max_length=5_000)
    status: Literal["fact", "inference", "option", "question"]


class HandoffIn(Schema):
    to_role: Literal["terra", "luna"]
    decision: str = Field(..., min_length=1, max_length=10_000)
    allowed_sources: list[SourceRef] = Field(default_factory=list, max_length=50)
    statements: list[Statement] = Field(default_factory=list, max_length=50)


class ResultItem(Schema):
    text: str = Field(..., min_length=1, max_length=20_000)
    source_refs: list[SourceRef] = Field(default_factory=list, max_length=50)
    confidence: float | None = Field(None, ge=0, le=1)


class HandoffResultIn(Schema):
    facts: list[ResultItem] = Field(default_factory=list, max_length=50)
    inferences: list[ResultItem] = Field(default_factory=list, max_length=50)
    options: list[ResultItem] = Field(default_factory=list, max_length=50)
    questions: list[ResultItem] = Field(default_factory=list, max_length=50)


class HandoffOut(Schema):
    id: uuid.UUID
    book_id: uuid.UUID
    session_id: uuid.UUID
    from_role: str
    to_role: str
    decision: str
    allowed_sources: list[dict]
    statements: list[dict]
    dossier_id: uuid.UUID
    status: str
    created_at: datetime
    returned_at: datetime | None
    result_entries: list[EntryOut]


class SessionOut(Schema):
    id: uuid.UUID
    status: str
    current_question: str
    created_at: datetime


class ViewTurn(Schema):
    id: uuid.UUID
    ordinal: int
    role: str
    content: str
    created_at: datetime


class ViewObservation(ObservationOut):
    pass


class ViewThrust(Schema):
    id: uuid.UUID
    kind: str
    status: str
    proposed_by: str
    title: str
    main_thrust: str
    character_engine: str
    central_conflict: str
    reader_promise: list[str]
    thematic_pressure: str
    genre_obligations: list[str]
    ending_shape: str
    risks: list[str]
    forecloses: list[str]
    created_at: datetime


class ViewCharter(Schema):
    id: uuid.UUID
    version: int
    status: str
    proposed_by: str
    content: dict
    source_refs: list[dict]
    approval_id: uuid.UUID | None
    created_at: datetime


class ViewBase(Schema):
    id: uuid.UUID
    name: str
    scope: str
    owner_id: str
    relation: str


class DiscoveryViewOut(Schema):
    book: BookOut
    session: SessionOut | None
    turns: list[ViewTurn]
    observations: list[ViewObservation]
    thrusts: list[ViewThrust]
    scratchpad: list[EntryOut]
    charters: list[ViewCharter]
    knowledge_bases: list[ViewBase]


# --- Who am I -----------------------------------------------------------------


@router.get("/me", response={200: WhoAmI, **ERRORS}, summary="Who the caller is and what its role may do")
def whoami(request: HttpRequest):
    principal = principal_of(request)
    return {
        "username": principal.user.get_username(),
        "role": principal.key_role,
        "capabilities": sorted(c.value for c in capabilities_of(principal.key_role)),
        "book_ids": [str(pk) for pk in principal.visible_books().values_list("pk", flat=True)],
    }


# --- Series and books ---------------------------------------------------------


@router.post("/series", response={201: SeriesOut, **ERRORS}, summary="Create a series (people only)")
def series_create(request: HttpRequest, body: SeriesIn):
    return Status(201, services.series_create(principal=principal_of(request), **body.dict()))


@router.post("/books", response={201: BookOut, **ERRORS}, summary="Create a book (people only); you become its author")
def book_create(request: HttpRequest, body: BookIn):
    return Status(201, services.book_create(principal=principal_of(request), **body.dict()))


@router.get("/books", response={200: list[BookOut], **ERRORS}, summary="The books the caller may touch")
@paginate
def book_list(request: HttpRequest):
    return principal_of(request).visible_books().order_by("title", "id")


@router.get("/books/{book_id}", response={200: BookDetailOut, **ERRORS}, summary="One book and the caller's role")
def book_detail(request: HttpRequest, book_id: uuid.UUID):
    principal = principal_of(request)
    book: Book = book_for(principal, book_id, Cap.BOOK_READ)
    role = principal.role_for(book)
    book.role = role
    book.capabilities = sorted(c.value for c in capabilities_of(role))
    return book


# --- Discovery sessions -----------------------------------------------------------


@router.post(
    "/books/{book_id}/discovery",
    response={200: StartOut, 201: StartOut, **ERRORS},
    summary="Start (or resume) the discovery of a book",
    description="201 when a session was created, 200 when an active or charter-proposed one already existed. "
    "Needs discovery:write.",
)
def discovery_start(request: HttpRequest, book_id: uuid.UUID):
    principal = principal_of(request)
    book = book_for(principal, book_id)
    session, created = services.discovery_start(principal=principal, book=book)
    body = {"session_id": session.pk, "status": session.status, "current_question": session.current_question}
    return Status(201 if created else 200, body)


@router.get(
    "/books/{book_id}/discovery",
    response={200: DiscoveryViewOut, **ERRORS},
    summary="The discovery view: session, turns, observations, thrusts, scratchpad, charters, knowledge bases",
)
def discovery_get(request: HttpRequest, book_id: uuid.UUID):
    principal = principal_of(request)
    book = book_for(principal, book_id, Cap.DISCOVERY_READ)
    return discovery_view(principal=principal, book=book)


@router.post(
    "/sessions/{session_id}/turns",
    response={201: TurnOut, **ERRORS},
    summary="Add a turn with its observations (author, editor: turn:write; Sol: discovery:write)",
)
def turn_create(request: HttpRequest, session_id: uuid.UUID, body: TurnIn):
    turn = services.turn_create(
        principal=principal_of(request),
        session_id=session_id,
        role=body.role,
        content=body.content,
        observations=[o.dict() for o in body.observations],
    )
    body = {
        "id": turn.pk,
        "session_id": turn.session_id,
        "ordinal": turn.ordinal,
        "role": turn.role,
        "content": turn.content,
        "created_at": turn.created_at,
        "observations": list(turn.observations.order_by("created_at")),
    }
    return Status(201, body)


@router.post(
    "/sessions/{session_id}/scratchpad",
    response={201: EntryOut, **ERRORS},
    summary="Append a scratchpad entry (scratchpad:write; Sol through discovery:write)",
    description="Append-only: no route updates or deletes an entry. A digest cites at least one earlier entry.",
)
def scratchpad_append(request: HttpRequest, session_id: uuid.UUID, body: EntryIn):
    entry = services.scratchpad_append(
        principal=principal_of(request),
        session_id=session_id,
        kind=body.kind,
        content=body.content,
        confidence=body.confidence,
        source_refs=[r.dict(exclude_none=True) for r in body.source_refs],
    )
    return Status(201, entry)


@router.get(
    "/sessions/{session_id}/scratchpad",
    response={200: list[EntryOut], **ERRORS},
    summary="The session's scratchpad in creation order (scratchpad:read)",
)
@paginate
def scratchpad_list(request: HttpRequest, session_id: uuid.UUID, filters: Query[ScratchpadFilter]):
    session = services.session_for(principal_of(request), session_id, Cap.SCRATCHPAD_READ)
    return scratchpad_for(session=session, kind=filters.kind, agent_role=filters.agent_role)


@router.post(
    "/sessions/{session_id}/thrusts",
    response={201: ThrustOut, **ERRORS},
    summary="Propose a story-thrust candidate (charter:propose or discovery:write)",
)
def thrust_propose(request: HttpRequest, session_id: uuid.UUID, body: ThrustIn):
    thrust = services.thrust_propose(principal=principal_of(request), session_id=session_id, data=body.dict())
    return Status(201, thrust)


# --- Charters ----------------------------------------------------------------------


@router.post(
    "/books/{book_id}/charters",
    response={201: CharterCreatedOut, **ERRORS},
    summary="Propose the next Story Charter version (charter:propose); opens a pending approval",
)
def charter_propose(request: HttpRequest, book_id: uuid.UUID, body: CharterIn):
    principal = principal_of(request)
    book = book_for(principal, book_id)
    data = body.dict(exclude={"source_refs"})
    charter = services.charter_propose(
        principal=principal,
        book=book,
        data=data,
        source_refs=[r.dict(exclude_none=True) for r in body.source_refs],
    )
    return Status(201, charter)


@router.post(
    "/charters/{charter_id}/resolve",
    response={200: CharterOut, **ERRORS},
    summary="The author approves or rejects a proposed charter, with a rationale",
)
def charter_resolve(request: HttpRequest, charter_id: uuid.UUID, body: CharterResolveIn):
    return services.charter_resolve(
        principal=principal_of(request), charter_id=charter_id, approved=body.approved, rationale=body.rationale
    )


# --- Claims ----------------------------------------------------------------------


@router.post(
    "/claims",
    response={201: ClaimOut, **ERRORS},
    summary="Propose a knowledge claim (canon:propose); claims always enter as proposed",
)
def claim_propose(request: HttpRequest, body: ClaimIn):
    data = body.dict(exclude={"source_refs", "evidence"})
    evidence = body.evidence.dict() if body.evidence else None
    if evidence:
        evidence["research_ids"] = [str(r) for r in evidence["research_ids"]]
    claim = services.claim_propose(
        principal=principal_of(request),
        source_refs=[r.dict(exclude_none=True) for r in body.source_refs],
        evidence=evidence,
        **data,
    )
    return Status(201, claim)


@router.post(
    "/claims/{claim_id}/request-approval",
    response={201: ApprovalRefOut, **ERRORS},
    summary="Sol asks the author to promote a claim (approval:request)",
)
def claim_request_approval(request: HttpRequest, claim_id: uuid.UUID, body: RequestApprovalIn):
    approval = services.claim_request_approval(
        principal=principal_of(request), claim_id=claim_id, book_id=body.book_id, note=body.note
    )
    return Status(201, {"approval_id": approval.pk, "claim_id": claim_id, "status": approval.status})


def _claim_decision(request: HttpRequest, claim_id: uuid.UUID, body: ClaimDecisionIn, approve: bool) -> dict:
    approval = services.claim_decide(
        principal=principal_of(request),
        claim_id=claim_id,
        book_id=body.book_id,
        approve=approve,
        rationale=body.rationale,
    )
    return {
        "approval_id": approval.pk,
        "claim_id": claim_id,
        "claim_status": "approved" if approve else "rejected",
        "verdict": approval.verdict,
    }


@router.post(
    "/claims/{claim_id}/promote",
    response={200: ClaimDecisionOut, **ERRORS},
    summary="The author promotes a proposed claim to canon, with a rationale",
)
def claim_promote(request: HttpRequest, claim_id: uuid.UUID, body: ClaimDecisionIn):
    return _claim_decision(request, claim_id, body, approve=True)


@router.post(
    "/claims/{claim_id}/reject",
    response={200: ClaimDecisionOut, **ERRORS},
    summary="The author rejects a proposed claim, with a rationale (it stays in history)",
)
def claim_reject(request: HttpRequest, claim_id: uuid.UUID, body: ClaimDecisionIn):
    return _claim_decision(request, claim_id, body, approve=False)


# --- Dossiers ----------------------------------------------------------------------


@router.post(
    "/books/{book_id}/dossiers",
    response={201: DossierOut, **ERRORS},
    summary="Take an immutable, role-scoped dossier (agents: their own role; the author: any role)",
)
def dossier_create(request: HttpRequest, book_id: uuid.UUID, body: DossierIn):
    principal = principal_of(request)
    book = book_for(principal, book_id)
    return Status(201, services.dossier_create(principal=principal, book=book, agent_role=body.agent_role))


@router.get(
    "/books/{book_id}/dossiers",
    response={200: list[DossierOut], **ERRORS},
    summary="The book's dossiers, newest first (an agent sees its own role's)",
)
@paginate
def dossier_list(request: HttpRequest, book_id: uuid.UUID):
    principal = principal_of(request)
    book = book_for(principal, book_id, Cap.BOOK_READ)
    return services.dossiers_for(principal=principal, book=book)


@router.get("/dossiers/{dossier_id}", response={200: DossierOut, **ERRORS}, summary="One dossier snapshot")
def dossier_detail(request: HttpRequest, dossier_id: uuid.UUID) -> ContextDossier:
    return services.dossier_for(principal=principal_of(request), dossier_id=dossier_id)


# --- Handoffs ----------------------------------------------------------------------


def _handoff_out(handoff: Handoff) -> dict:
    return {
        "id": handoff.pk,
        "book_id": handoff.book_id,
        "session_id": handoff.session_id,
        "from_role": handoff.from_role,
        "to_role": handoff.to_role,
        "decision": handoff.decision,
        "allowed_sources": handoff.allowed_sources,
        "statements": handoff.statements,
        "dossier_id": handoff.dossier_id,
        "status": handoff.status,
        "created_at": handoff.created_at,
        "returned_at": handoff.returned_at,
        "result_entries": list(handoff.result_entries.order_by("sequence")),
    }


@router.post(
    "/books/{book_id}/handoffs",
    response={201: HandoffOut, **ERRORS},
    summary="Hand a task to Terra or Luna (Sol or the author), with a dossier snapshot for the target role",
)
def handoff_create(request: HttpRequest, book_id: uuid.UUID, body: HandoffIn):
    principal = principal_of(request)
    book = book_for(principal, book_id)
    handoff = services.handoff_create(
        principal=principal,
        book=book,
        to_role=body.to_role,
        decision=body.decision,
        allowed_sources=[r.dict(exclude_none=True) for r in body.allowed_sources],
        statements=[s.dict() for s in body.statements],
    )
    return Status(201, _handoff_out(handoff))


@router.post(
    "/handoffs/{handoff_id}/result",
    response={200: HandoffOut, **ERRORS},
    summary="The target role returns facts, inferences, options and questions (each becomes a scratchpad entry)",
)
def handoff_result(request: HttpRequest, handoff_id: uuid.UUID, body: HandoffResultIn):
    result = {
        key: [
            {**item.dict(exclude={"source_refs"}), "source_refs": [r.dict(exclude_none=True) for r in item.source_refs]}
            for item in getattr(body, key)
        ]
        for key in ("facts", "inferences", "options", "questions")
    }
    handoff = services.handoff_return(principal=principal_of(request), handoff_id=handoff_id, result=result)
    return _handoff_out(handoff)


@router.get("/handoffs/{handoff_id}", response={200: HandoffOut, **ERRORS}, summary="One handoff and its result")
def handoff_detail(request: HttpRequest, handoff_id: uuid.UUID):
    return _handoff_out(services.handoff_for(principal=principal_of(request), handoff_id=handoff_id))
