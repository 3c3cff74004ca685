"""The discovery API's input and output schemas. Inputs carry the limits (from the model fields)
and are the one place input is validated: the API, the HTMX forms, commands and agents use them."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from ninja import Field, Schema
from pydantic import AfterValidator, StrictBool, ValidationInfo, field_validator

from library.search import MAX_LIMIT, MAX_QUERY_CHARS
from novelgraph.core.pagination import rest_link
from novelgraph.core.roles import AgentRole
from novelgraph.core.schemas import LONG_TEXT, MAX_LIST_ITEMS, JsonValue, Text, TextList, input_error, limit

from .models import (
    Book,
    EvidenceKind,
    FindingKind,
    Handoff,
    KnowledgeBaseScope,
    KnowledgeClaim,
    KnownBy,
    Observation,
    ObservationStatus,
    Provenance,
    RevealKind,
    ScratchpadEntry,
    ScratchpadEntryKind,
    Series,
    SessionQuestion,
    ThrustCandidate,
    ThrustCandidateKind,
    Turn,
    WebhookEndpoint,
)
from .selectors import VIEW_PAGE, bounded, dossier_capped

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


class BookEditIn(Schema):
    """What the author changes of her book; a field left out stays as it is."""

    title: Text(limit(Book, "title")) | None = None
    premise: Text(limit(Book, "premise"), required=False) | None = None
    genre_pack: Text(limit(Book, "genre_pack"), required=False) | None = None
    reopen: bool = Field(
        False,
        description="a new premise after G0 passed reopens G0: without this the answer is a 409 "
        "(reopens_g0) carrying the impact, so she sees it first",
    )


# The genre packs an author picks from when she starts a book (the API takes any text).
GENRE_PACKS: tuple[tuple[str, str], ...] = (
    ("mystery", "Mystery"),
    ("thriller", "Thriller"),
    ("romance", "Romance"),
    ("fantasy", "Fantasy"),
    ("science-fiction", "Science fiction"),
    ("literary", "Literary fiction"),
    ("historical", "Historical fiction"),
)


class EditorIn(Schema):
    """A person the author invites to edit her book, by username."""

    username: Text(150)


class ObservationIn(Schema):
    key: Text(limit(Observation, "key"))
    value: Text(limit(Observation, "value"))
    provenance: Provenance
    confidence: Confidence | None = None
    # An observation always enters as working: only the author's act (ObservationResolveIn) confirms, corrects or
    # retires it, leaving a revision. Any other status on input is a 422 naming the field.
    status: Literal["working"] = Field("working", description="Always working: the author confirms it later.")


class ObservationResolveIn(Schema):
    """The author confirms, corrects (with the new value) or retires an observation."""

    action: Literal["confirm", "correct", "retire"]
    value: Text(limit(Observation, "value"), required=False) | None = None
    rationale: Text(LONG_TEXT, required=False) | None = None


class TurnIn(Schema):
    role: Literal["author", "editor", "sol"]
    content: Text(limit(Turn, "content"))
    observations: list[ObservationIn] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)


# What a contradiction's two sides may be: two claims, two observations, a claim and a turn, a claim
# and a charter field (a charter reference whose label names the field), or earlier entries.
CONTRADICTION_SIDE_TYPES = ("claim", "observation", "turn", "charter", "entry")


class EntryIn(Schema):
    kind: ScratchpadEntryKind
    content: Text(limit(ScratchpadEntry, "content"))
    confidence: Confidence | None = None
    source_refs: SourceRefs = Field(default_factory=list)

    @field_validator("source_refs")
    @classmethod
    def _contradiction_names_both_sides(cls, value, info: ValidationInfo):
        if info.data.get("kind") == ScratchpadEntryKind.CONTRADICTION:
            sides = {(ref.type, ref.id) for ref in value if ref.type in CONTRADICTION_SIDE_TYPES}
            if len(sides) < 2:
                raise input_error(
                    "a contradiction names its two sides: at least two references of type "
                    + ", ".join(CONTRADICTION_SIDE_TYPES)
                    + f" ({len(sides)} given)"
                )
        return value

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


Chapter = Annotated[int, Field(ge=1, le=100_000)]
CHARACTER_NAME = 200


class StoryRecordIn(Schema):
    """A claim's story record (seed 001): when it is true, who knows it, where the reader first
    sees it, whether it is decisive evidence (and for which reveal), and whether it is a reveal.
    Field order matters: each check reads the fields before it."""

    true_from_chapter: Chapter | None = None
    true_until_chapter: Chapter | None = Field(
        None, description="the last chapter in which it holds; a later claim supersedes it from there"
    )
    known_by: KnownBy = KnownBy.READER
    known_by_characters: Annotated[list[Text(CHARACTER_NAME)], Field(max_length=MAX_LIST_ITEMS)] = Field(
        default_factory=list, validate_default=True
    )
    first_shown_chapter: Chapter | None = Field(None, description="where the reader first sees it")
    decisive: StrictBool = False
    evidence_for: uuid.UUID | None = Field(None, description="the reveal (a claim) this decisive evidence supports")
    reveal: RevealKind = RevealKind.NONE

    @field_validator("true_until_chapter")
    @classmethod
    def _until_not_before_from(cls, value, info: ValidationInfo):
        start = info.data.get("true_from_chapter")
        if value is not None and start is not None and value < start:
            raise input_error(f"must not be before true_from_chapter ({start})")
        return value

    @field_validator("known_by_characters")
    @classmethod
    def _characters_when_named(cls, value, info: ValidationInfo):
        known_by = info.data.get("known_by")
        if known_by == KnownBy.CHARACTERS and not value:
            raise input_error("name the characters who know it (known_by is characters)")
        if known_by is not None and known_by != KnownBy.CHARACTERS and value:
            raise input_error("only when known_by is characters")
        return list(dict.fromkeys(value))

    @field_validator("evidence_for")
    @classmethod
    def _evidence_is_decisive(cls, value, info: ValidationInfo):
        if value is not None and not info.data.get("decisive"):
            raise input_error("only decisive evidence supports a reveal (set decisive)")
        return value

    @field_validator("reveal")
    @classmethod
    def _reveal_is_shown(cls, value, info: ValidationInfo):
        if value != RevealKind.NONE:
            if "first_shown_chapter" in info.data and info.data["first_shown_chapter"] is None:
                raise input_error("a reveal needs first_shown_chapter, the chapter in which it is revealed")
            if info.data.get("evidence_for") is not None:
                raise input_error("a reveal is not evidence for another reveal (evidence_for)")
        return value

    def story(self) -> dict:
        """The story-record fields as stored on the claim (``evidence_for`` as its id)."""
        data = self.dict(include=set(StoryRecordIn.model_fields))
        data["evidence_for_id"] = data.pop("evidence_for")
        return data


class ClaimIn(StoryRecordIn):
    scope: KnowledgeBaseScope
    scope_id: Text(64)
    subject: Text(limit(KnowledgeClaim, "subject"))
    predicate: Text(limit(KnowledgeClaim, "predicate"))
    value: Annotated[JsonValue, AfterValidator(_not_empty)]
    provenance: Provenance
    source_refs: SourceRefs = Field(default_factory=list)
    evidence: EvidenceIn | None = None
    status: Literal["proposed"] | None = Field(None, description="Claims always enter as proposed.")
    revises: uuid.UUID | None = Field(
        None, description="an approved claim this one revises; approving this one supersedes it"
    )


class ClaimStoryIn(StoryRecordIn):
    """A new story record for a proposed claim: a new proposal, so a pending approval lapses."""

    book_id: uuid.UUID


class ClaimSupersedeIn(Schema):
    """The author replaces approved canon with a new value, with her rationale (a logged decision)."""

    book_id: uuid.UUID
    value: Annotated[JsonValue, AfterValidator(_not_empty)]
    rationale: Text(LONG_TEXT)


class ClaimSupersedeForm(Schema):
    """The codex page's form: the new value as text and the rationale."""

    value: Text(LONG_TEXT)
    rationale: Text(LONG_TEXT)


class FactStateForm(Schema):
    """The codex page's "State a fact": the author's rationale beside her claim (the claim itself is a ``ClaimIn``)."""

    rationale: Text(LONG_TEXT)


class ClaimRetractIn(Schema):
    """The author withdraws approved canon, with her rationale (a logged decision)."""

    book_id: uuid.UUID
    rationale: Text(LONG_TEXT)


class ClaimRetractForm(Schema):
    rationale: Text(LONG_TEXT)


class RequestApprovalIn(Schema):
    book_id: uuid.UUID
    note: Text(LONG_TEXT, required=False) = ""


class ClaimDecisionIn(Schema):
    book_id: uuid.UUID
    rationale: Text(LONG_TEXT, required=False)


class DossierIn(Schema):
    agent_role: AgentRole
    as_of_chapter: Chapter | None = Field(
        None, description="only what is true by this chapter; later reveals withheld, secrets marked"
    )


class AsOfFilter(Schema):
    as_of_chapter: Chapter | None = None


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
    """Facts, inferences, options (the alternatives) and questions; a Terra result to Sol also carries
    its structural analysis, the risks and charter-ready language (seed 000, "Terra to Sol")."""

    facts: list[ResultItem] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    inferences: list[ResultItem] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    options: list[ResultItem] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    questions: list[ResultItem] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    analysis: Text(LONG_TEXT, required=False) | None = None
    risks: TextList() = Field(default_factory=list)
    charter_language: Text(LONG_TEXT, required=False) | None = None


# --- Outputs ---------------------------------------------------------------------


class WhoAmI(Schema):
    username: str
    role: str
    capabilities: list[str]
    book_ids: list[str] = Field(
        description="the first page (VIEW_PAGE) of the caller's books, as GET /books orders them"
    )
    next: dict[str, str | None] = Field(description="book_ids: the paged route with the rest, or null")


class EditorOut(Schema):
    id: int
    username: str


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


class ChapterOut(Schema):
    number: int
    title: str
    spec: str


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
    stated_value: str | None = None
    provenance: str
    confidence: float | None
    status: str
    created_at: datetime


class ObservationRevisionOut(Schema):
    id: uuid.UUID
    sequence: int
    action: str
    previous_value: str
    value: str
    previous_status: str
    status: str
    rationale: str
    created_at: datetime


class ObservationDetailOut(Schema):
    id: uuid.UUID
    session_id: uuid.UUID
    turn_id: uuid.UUID
    key: str
    value: str
    stated_value: str
    provenance: str
    confidence: float | None
    status: str
    revisions: list[ObservationRevisionOut] = Field(
        description="the first page (VIEW_PAGE) of its history, oldest first"
    )
    next: dict[str, str | None] = Field(description="revisions: the paged route with the rest, or null")


class BookObservationOut(Schema):
    id: uuid.UUID
    session_id: uuid.UUID
    turn_id: uuid.UUID
    key: str
    value: str
    stated_value: str
    provenance: str
    confidence: float | None
    status: str


class CanonPageClaimOut(Schema):
    """A claim as the paged canon route (a dossier's rest) gives it."""

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
    answers_id: uuid.UUID | None = None
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
    not_chosen_reason: str = ""
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
    true_from_chapter: int | None
    true_until_chapter: int | None
    known_by: str
    known_by_characters: list[str]
    first_shown_chapter: int | None
    decisive: bool
    evidence_for_id: uuid.UUID | None
    reveal: str
    revises_id: uuid.UUID | None


class ConflictSideOut(Schema):
    type: str
    id: str
    label: str
    status: str


class ConflictOut(Schema):
    kind: Literal["value", "visibility"]
    reason: str
    sides: list[ConflictSideOut]


class CanonClaimOut(Schema):
    id: uuid.UUID
    base_id: uuid.UUID
    subject: str
    predicate: str
    value: Any
    provenance: str
    true_from_chapter: int | None
    true_until_chapter: int | None
    true_until_effective: int | None
    known_by: str
    known_by_characters: list[str]
    first_shown_chapter: int | None
    decisive: bool
    evidence_for_id: uuid.UUID | None
    reveal: str
    visibility: str
    secret: bool | None = None


class FairPlayOut(Schema):
    ok: bool | None = Field(description="null as of a chapter: fair play is judged on the whole book")
    findings: list[dict]
    reveals: int = Field(0, description="the reveals (solution or twist) in canon: with none, nothing to check yet")


class CodexOut(Schema):
    book_id: uuid.UUID
    as_of_chapter: int | None
    chapters: list[dict]
    claims: list[CanonClaimOut]
    withheld: list[str]
    fair_play: FairPlayOut
    next: dict[str, str | None] = Field(
        description="chapters, claims, withheld, findings (fair_play's): each list holds a page (VIEW_PAGE); "
        "its paged route with the rest, or null"
    )


class ClaimDecisionLogOut(Schema):
    sequence: int
    ts: datetime
    decision: str
    effect: str = Field(description="what the decision did to this version, in plain words")
    ratified_by: str
    rationale: str
    in_this_book: bool = Field(description="false for series canon decided in another book of the series")
    approval_id: uuid.UUID | None = Field(description="the approval it decided (this book's entries only)")
    log_url: str | None = Field(description="the entry on this book's decision log page")


class ClaimVersionOut(Schema):
    id: uuid.UUID
    number: int = Field(description="1 for the first version, in the order they were proposed")
    subject: str
    predicate: str
    value: Any
    provenance: str
    status: str
    proposed_by: str
    created_at: datetime
    true_from_chapter: int | None
    true_until_chapter: int | None
    revises_id: uuid.UUID | None
    revises_number: int | None
    revised_by_numbers: list[int] = Field(
        description="the first VIEW_PAGE versions that revise it (each version names its revises_number)"
    )
    approval_id: uuid.UUID | None
    source_refs: list[dict] = Field(description="each resolved for the reader (withheld when her role may not read it)")
    decisions: list[ClaimDecisionLogOut] = Field(description="the first page (VIEW_PAGE) of its decisions")
    decisions_count: int = Field(description="how many decisions name this version")
    next: dict[str, str | None] = Field(description="decisions: the paged route with the rest, or null")
    requested: bool = Field(description="the version the history was asked for")


class ClaimHistoryOut(Schema):
    book_id: uuid.UUID
    claim_id: uuid.UUID
    base: dict
    subject: str
    predicate: str
    canon: ClaimVersionOut | None = Field(description="the version that is canon now, or null")
    versions: list[ClaimVersionOut] = Field(description="the first page (VIEW_PAGE) of the versions, oldest first")
    versions_count: int = Field(description="how many versions the claim has")
    offset: int = Field(description="the number of versions before this page")
    next: dict[str, str | None] = Field(description="versions: the paged route with the rest, or null")


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
    result: dict = Field(default_factory=dict)
    result_entries: list[EntryOut] = Field(description="the first page (VIEW_PAGE) of the result's entries")
    next: dict[str, str | None] = Field(description="result_entries: the paged route with the rest, or null")


class QuestionClosedOut(Schema):
    session_id: uuid.UUID
    closed: bool = Field(description="whether a current question was open (false: it was already closed)")


class SessionOut(Schema):
    id: uuid.UUID
    status: str
    current_question: str
    created_at: datetime


class ViewTurn(Schema):
    id: uuid.UUID
    session_id: uuid.UUID
    ordinal: int
    role: str
    content: str
    answers_id: uuid.UUID | None = None
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

    sessions: str | None
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
    sessions: list[SessionOut]
    limit: int
    turns: list[ViewTurn]
    observations: list[ObservationOut]
    thrusts: list[ThrustOut]
    scratchpad: list[EntryOut]
    charters: list[ViewCharter]
    knowledge_bases: list[ViewBase]
    next: DiscoveryNext


def handoff_out(handoff) -> dict:
    """A handoff as ``HandoffOut`` shows it (the API and the MCP server)."""
    entries, more = bounded(handoff.result_entries.order_by("sequence", "id"), VIEW_PAGE)
    link = rest_link(f"handoffs/{handoff.pk}/result-entries")
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
        "result": handoff.result or {},
        # A page of the entries its result wrote (up to four lists of MAX_LIST_ITEMS); the rest is paged.
        "result_entries": entries,
        "next": {"result_entries": link if more else None},
    }


# --- Searching a book's own record (discovery.record_search) --------------------


class RecordSearchParams(Schema):
    q: Text(MAX_QUERY_CHARS, required=False) = Field("", description="Words to find, in any order. Blank: no results.")
    limit: int = Field(20, ge=1, le=MAX_LIMIT)


class RecordHit(Schema):
    kind: Literal["turn", "entry", "claim", "charter"]
    id: str
    label: str = Field(
        description="turn: the speaker; entry: role and kind; claim: status; charter: version and status"
    )
    text: str = Field(description="the start of the searchable text")
    score: float


class RecordSearchOut(Schema):
    mode: str
    results: list[RecordHit]
    withheld: list[str] = Field(description="what this role may not read, left out of the search (e.g. series canon)")


def turn_out(turn) -> dict:
    """A turn as its route answers it (``TurnOut``): with its observations, oldest first."""
    return {
        "id": turn.pk,
        "session_id": turn.session_id,
        "ordinal": turn.ordinal,
        "role": turn.role,
        "content": turn.content,
        "answers_id": turn.answers_id,
        "created_at": turn.created_at,
        "observations": list(turn.observations.order_by("created_at")),
    }


class WebhookIn(Schema):
    """The address a book's events are posted to (it must pass the address guards of novelgraph.core.fetch)."""

    url: Text(limit(WebhookEndpoint, "url"))


class WebhookDeliveryOut(Schema):
    id: uuid.UUID
    event_id: uuid.UUID
    kind: str
    attempt: int
    status_code: int | None
    error: str
    delivered: bool
    retry_at: datetime | None
    created_at: datetime


class WebhookOut(Schema):
    url: str
    secret: str
    active: bool
    deliveries: list[WebhookDeliveryOut]


class FindingItem(Schema):
    """One continuity finding: its kind, the quoted span of the checked revision's text, the canon it concerns."""

    kind: FindingKind
    key: Text(400)
    span_start: int = Field(ge=0)
    span_end: int = Field(ge=0)
    quote: Text(LONG_TEXT)
    claim_ids: list[uuid.UUID] = Field(default_factory=list, max_length=20)
    entry_ids: list[uuid.UUID] = Field(default_factory=list, max_length=20)
    message: Text(LONG_TEXT)


class FindingsIn(Schema):
    """What a continuity check of one revision of a chapter found (Luna)."""

    revision: int = Field(ge=1)
    findings: list[FindingItem] = Field(default_factory=list, max_length=1_000)
