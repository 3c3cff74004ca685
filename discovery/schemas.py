"""The discovery API's input and output schemas. Inputs carry the limits (from the model fields)
and are the one place input is validated: the API, the HTMX forms, commands and agents use them."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from ninja import Field, Schema
from pydantic import AfterValidator, StrictBool

from novelgraph.roles import AgentRole
from novelgraph.schemas import LONG_TEXT, MAX_LIST_ITEMS, JsonValue, Text, TextList, input_error, limit

from .models import (
    Book,
    EvidenceKind,
    Handoff,
    KnowledgeBaseScope,
    KnowledgeClaim,
    Observation,
    ObservationStatus,
    Provenance,
    ScratchpadEntry,
    ScratchpadEntryKind,
    Series,
    SessionQuestion,
    ThrustCandidate,
    ThrustCandidateKind,
    Turn,
)

RefType = Literal["turn", "observation", "entry", "claim", "chunk", "research", "charter", "other"]
REF_TYPES: tuple[str, ...] = get_args(RefType)
Confidence = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
MAX_OTHER_ID = 500


# --- Inputs -----------------------------------------------------------------------


class SourceRef(Schema):
    type: RefType
    id: Text(MAX_OTHER_ID)
    label: Text(300, required=False) | None = None


SourceRefs = Annotated[list[SourceRef], Field(max_length=MAX_LIST_ITEMS)]


class SeriesIn(Schema):
    title: Text(limit(Series, "title"))
    premise: Text(limit(Series, "premise"), required=False) = ""
    publication_target: Text(limit(Series, "publication_target"), required=False) = ""


class BookIn(Schema):
    series_id: uuid.UUID | None = None
    title: Text(limit(Book, "title"))
    premise: Text(limit(Book, "premise"), required=False) = ""
    genre_pack: Text(limit(Book, "genre_pack"), required=False) = ""
    planned_order: int | None = Field(None, ge=0, le=10_000)


class ObservationIn(Schema):
    key: Text(limit(Observation, "key"))
    value: Text(limit(Observation, "value"))
    provenance: Provenance
    confidence: Confidence | None = None
    status: ObservationStatus = ObservationStatus.WORKING


class TurnIn(Schema):
    role: Literal["author", "editor", "sol"]
    content: Text(limit(Turn, "content"))
    observations: list[ObservationIn] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)


class EntryIn(Schema):
    kind: ScratchpadEntryKind
    content: Text(limit(ScratchpadEntry, "content"))
    confidence: Confidence | None = None
    source_refs: SourceRefs = Field(default_factory=list)
    provenance: Provenance | None = Field(
        None, description="where the thought comes from; literary-guidance cites the library chunk it draws on"
    )


class QuestionSetIn(Schema):
    """Sol's next question for the author, citing the turn, entry or observation that prompted it."""

    question: Text(limit(SessionQuestion, "question"))
    source_refs: Annotated[list[SourceRef], Field(min_length=1, max_length=MAX_LIST_ITEMS)]


class ScratchpadFilter(Schema):
    kind: ScratchpadEntryKind | None = None
    agent_role: AgentRole | None = None


class ObservationFilter(Schema):
    status: ObservationStatus | None = None


class ThrustIn(Schema):
    kind: ThrustCandidateKind
    title: Text(limit(ThrustCandidate, "title"))
    main_thrust: Text(limit(ThrustCandidate, "main_thrust"))
    character_engine: Text(limit(ThrustCandidate, "character_engine"))
    central_conflict: Text(limit(ThrustCandidate, "central_conflict"))
    reader_promise: TextList(min_items=1)
    thematic_pressure: Text(limit(ThrustCandidate, "thematic_pressure"), required=False) = ""
    genre_obligations: TextList() = Field(default_factory=list)
    ending_shape: Text(limit(ThrustCandidate, "ending_shape"), required=False) = ""
    risks: TextList() = Field(default_factory=list)
    forecloses: TextList() = Field(default_factory=list)


def _a_described_protagonist(value: Any) -> Any:
    if not isinstance(value, dict) or not value:
        raise input_error("must be an object describing the protagonist")
    return value


class CharterIn(Schema):
    """A Story Charter version. Optional fields left blank are not stored."""

    main_thrust: Text(LONG_TEXT)
    reader_promise: TextList(min_items=1)
    protagonist: Annotated[JsonValue, AfterValidator(_a_described_protagonist)]
    central_conflict: Text(LONG_TEXT)
    genre_contract: Text(LONG_TEXT, required=False) | None = None
    thematic_questions: TextList() = Field(default_factory=list)
    narrative_form: Text(LONG_TEXT, required=False) | None = None
    ending_horizon: Text(LONG_TEXT, required=False) | None = None
    constraints: TextList() = Field(default_factory=list)
    productive_unknowns: TextList() = Field(default_factory=list)
    rejected_directions: TextList() = Field(default_factory=list)
    source_refs: SourceRefs = Field(default_factory=list)

    def content(self) -> dict:
        """The charter's content as stored: required fields, and the optional ones that say something."""
        data = self.dict(exclude={"source_refs"})
        return {key: value for key, value in data.items() if value not in (None, "", [])}


class CharterResolveIn(Schema):
    approved: StrictBool
    rationale: Text(LONG_TEXT, required=False)


class EvidenceIn(Schema):
    kind: EvidenceKind
    decisive: StrictBool = False
    research_ids: list[uuid.UUID] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)


def _not_empty(value: Any) -> Any:
    if value is None or (isinstance(value, str) and not value.strip()):
        raise input_error("must not be empty")
    return value


class ClaimIn(Schema):
    scope: KnowledgeBaseScope
    scope_id: Text(64)
    subject: Text(limit(KnowledgeClaim, "subject"))
    predicate: Text(limit(KnowledgeClaim, "predicate"))
    value: Annotated[JsonValue, AfterValidator(_not_empty)]
    provenance: Provenance
    source_refs: SourceRefs = Field(default_factory=list)
    evidence: EvidenceIn | None = None
    status: Literal["proposed"] | None = Field(None, description="Claims always enter as proposed.")


class RequestApprovalIn(Schema):
    book_id: uuid.UUID
    note: Text(LONG_TEXT, required=False) = ""


class ClaimDecisionIn(Schema):
    book_id: uuid.UUID
    rationale: Text(LONG_TEXT, required=False)


class DossierIn(Schema):
    agent_role: AgentRole


class Statement(Schema):
    text: Text(5_000)
    status: Literal["fact", "inference", "option", "question"]


class HandoffIn(Schema):
    to_role: Literal["terra", "luna"]
    decision: Text(limit(Handoff, "decision"))
    allowed_sources: SourceRefs = Field(default_factory=list)
    statements: list[Statement] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)


class ResultItem(Schema):
    text: Text(limit(ScratchpadEntry, "content"))
    source_refs: SourceRefs = Field(default_factory=list)
    confidence: Confidence | None = None


class HandoffResultIn(Schema):
    facts: list[ResultItem] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    inferences: list[ResultItem] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    options: list[ResultItem] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    questions: list[ResultItem] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)


# --- Outputs ---------------------------------------------------------------------


class WhoAmI(Schema):
    username: str
    role: str
    capabilities: list[str]
    book_ids: list[str]


class SeriesOut(Schema):
    id: uuid.UUID
    title: str
    premise: str
    publication_target: str
    created_at: datetime


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


class ObservationOut(Schema):
    id: uuid.UUID
    turn_id: uuid.UUID
    key: str
    value: str
    provenance: str
    confidence: float | None
    status: str
    created_at: datetime


class BookObservationOut(Schema):
    id: uuid.UUID
    session_id: uuid.UUID
    turn_id: uuid.UUID
    key: str
    value: str
    provenance: str
    confidence: float | None


class CanonClaimOut(Schema):
    id: uuid.UUID
    base_id: uuid.UUID
    subject: str
    predicate: str
    value: Any
    provenance: str
    approval_id: uuid.UUID | None


class TurnOut(Schema):
    id: uuid.UUID
    session_id: uuid.UUID
    ordinal: int
    role: str
    content: str
    created_at: datetime
    observations: list[ObservationOut]


class EntryOut(Schema):
    id: uuid.UUID
    session_id: uuid.UUID
    sequence: int
    agent_role: str
    kind: str
    content: str
    confidence: float | None
    source_refs: list[dict]
    provenance: str | None
    handoff_id: uuid.UUID | None
    created_at: datetime


class SessionQuestionOut(Schema):
    id: uuid.UUID
    session_id: uuid.UUID
    sequence: int
    question: str
    source_refs: list[dict]
    asked_by: str
    created_at: datetime


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


class CharterCreatedOut(Schema):
    id: uuid.UUID
    version: int
    status: str
    approval_id: uuid.UUID


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


class ApprovalRefOut(Schema):
    approval_id: uuid.UUID
    claim_id: uuid.UUID
    status: str


class ClaimDecisionOut(Schema):
    approval_id: uuid.UUID
    claim_id: uuid.UUID
    claim_status: str
    verdict: str | None


class DossierOut(Schema):
    """``content`` holds at most a page of claims, scratchpad entries and observations; ``content.more``
    links to the rest of each."""

    id: uuid.UUID
    book_id: uuid.UUID
    session_id: uuid.UUID | None
    agent_role: str
    created_at: datetime
    content: dict

    @staticmethod
    def resolve_content(dossier) -> dict:
        from .services.dossiers import dossier_capped

        return dossier_capped(dossier)


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


class DiscoveryNext(Schema):
    """Where the rest of each collection is: its paged route from the first item not given, or null when
    everything was given."""

    turns: str | None
    observations: str | None
    thrusts: str | None
    scratchpad: str | None
    charters: str | None
    knowledge_bases: str | None


class DiscoveryViewOut(Schema):
    """Bounded: each collection carries at most ``limit`` items; ``next`` links to the rest."""

    book: BookOut
    session: SessionOut | None
    limit: int
    turns: list[ViewTurn]
    observations: list[ObservationOut]
    thrusts: list[ViewThrust]
    scratchpad: list[EntryOut]
    charters: list[ViewCharter]
    knowledge_bases: list[ViewBase]
    next: DiscoveryNext
