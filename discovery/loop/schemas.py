"""Request and response schemas of the loop's API. An output schema extends its model's shared fields
(``serializers.py``, also what the export and the import carry) with what only the API shows."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import AfterValidator, StrictBool

from approvals.models import Approval, Gate, Reversibility, Verdict
from approvals.schemas import ThrustChoiceIn
from discovery.selectors import VIEW_PAGE
from novelgraph.core.schemas import (
    LIST_ITEM_TEXT,
    MAX_LIST_ITEMS,
    Text,
    TextList,
    bounded,
    default,
    input_error,
    limit,
)

from .models import (
    WRITER_ROLES,
    Altitude,
    ArtifactStatus,
    BackedBy,
    BlackboardArtifact,
    Candidate,
    CandidateStatus,
    DataClass,
    LensRerun,
    LensReview,
    Lifecycle,
    LoopMeta,
    OpenQuestion,
    OptionCard,
    PlanNode,
    QuestionKind,
    QuestionStatus,
    Resolution,
    RosterEntry,
    SubIdea,
    TraceEdge,
    TraceNode,
    TraceStatus,
    ValidationPlanItem,
    ValidationStatus,
)
from .selectors import loop_link, meta_constraints_page
from .serializers import (
    ArtifactFields,
    CandidateFields,
    CardFields,
    MetaFields,
    NodeFields,
    QuestionFields,
    RerunFields,
    ReviewFields,
    TraceEdgeFields,
    TraceNodeFields,
    ValidationItemFields,
    artifact_slug,
    parent_slug,
)

# Limits with no model column of their own (the rest are read from the model fields with ``limit``):
# a review's findings are JSON items ({text, resolution, reason}) in LensReview.findings.
FINDING_TEXT = 2_000
MAX_FINDINGS = 100
# A gate card's decisions_requested is a JSON list in OptionCard.decisions_requested.
MAX_DECISIONS_REQUESTED = 20
# A roster lens is named by its slug (RosterEntry.slug) wherever a request names a lens.
LENS = limit(RosterEntry, "slug")
ARTIFACT_SLUG = limit(BlackboardArtifact, "slug")
TRACE_ID = limit(TraceNode, "node_id")

# The formats of the loop's identifiers (a slot's slug and type, a trace node's id and kind); the lengths are
# the columns'.
SLUG_FORMAT = re.compile(r"[a-z0-9][a-z0-9-]*")
NODE_ID_FORMAT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")


def _format(pattern: re.Pattern, message: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise input_error(message)
        return value

    return AfterValidator(check)


def Slug(max_length: int) -> Any:
    """A lowercase slug (letters, digits, hyphens) of at most ``max_length`` characters."""
    return Annotated[Text(max_length), _format(SLUG_FORMAT, "must be a lowercase slug (letters, digits, hyphens)")]


def NodeId(max_length: int) -> Any:
    """A traceability node id: letters, digits, '-', '_', '.', ':'."""
    return Annotated[
        Text(max_length), _format(NODE_ID_FORMAT, "must be a node id (letters, digits, '-', '_', '.', ':')")
    ]


class MetaOut(MetaFields):
    """The loop's counters and bounds (the file also carries round_invalidated and last_round_clean).
    ``constraints`` is capped at a page: ``constraints_count`` counts them all, ``next.constraints`` pages the rest
    (the export's meta.json carries them all: it is the state, not a response)."""

    constraints: list[Any] = Field(description="the first page (VIEW_PAGE) of the recorded constraints, oldest first")
    constraints_count: int
    next: dict[str, str | None] = Field(description="constraints: the paged route with the rest, or null")

    @staticmethod
    def resolve_constraints(meta: LoopMeta) -> list:
        return meta_constraints_page(meta)[0]

    @staticmethod
    def resolve_constraints_count(meta: LoopMeta) -> int:
        return len(meta.constraints or [])

    @staticmethod
    def resolve_next(meta: LoopMeta) -> dict[str, str | None]:
        return {"constraints": meta_constraints_page(meta)[2]}


class CardOut(CardFields):
    id: uuid.UUID
    node: uuid.UUID | None = None
    approval_id: uuid.UUID | None = None
    created_at: datetime

    @staticmethod
    def resolve_node(obj) -> uuid.UUID | None:
        return obj.node_id


class LoopOut(Schema):
    book_id: uuid.UUID
    meta: MetaOut
    pending_card: CardOut | None = None
    saturation: dict
    queued_reruns: list[dict] = Field(description="the first page (VIEW_PAGE) of the queued re-runs, oldest first")
    roster: list[dict] = Field(description="one row per lens of the fixed roster: bounded by construction")
    next: dict[str, str | None] = Field(description="queued_reruns: the paged route with the rest, or null")


class NodeOut(NodeFields):
    id: uuid.UUID
    parent_id: uuid.UUID | None = None
    selection_id: uuid.UUID | None = None
    assumption: str
    kill_condition: str
    activity: str


# A plan node's fields, taken by NodeIn, NodePatch and the imported PlanNodeRecord.
Intent = Text(limit(PlanNode, "intent"))
RoundCap = bounded(PlanNode, "round_cap")
Assumption = Text(limit(PlanNode, "assumption"), required=False)
KillCondition = Text(limit(PlanNode, "kill_condition"), required=False)
Activity = Text(limit(PlanNode, "activity"), required=False)


class NodeIn(Schema):
    parent_id: uuid.UUID
    intent: Intent
    altitude: Altitude = Altitude.PLOTLINE
    round_cap: RoundCap = 3
    assumption: Assumption = ""
    kill_condition: KillCondition = ""
    activity: Activity = ""


class NodePatch(Schema):
    intent: Intent | None = None
    lifecycle: Lifecycle | None = None
    validation_status: ValidationStatus | None = None
    assumption: Assumption | None = None
    kill_condition: KillCondition | None = None
    activity: Activity | None = None


class CandidateOut(CandidateFields):
    id: uuid.UUID
    node_id: uuid.UUID


class CandidateIn(Schema):
    altitude: Altitude
    mechanic: Text(limit(Candidate, "mechanic"))
    shape: Text(limit(Candidate, "shape"))
    riskiest_assumption: Text(limit(Candidate, "riskiest_assumption"))
    rationale: Text(limit(Candidate, "rationale"), required=False) = ""


class SelectIn(Schema):
    candidate_id: uuid.UUID
    # Kept on every not-chosen candidate (Candidate.rationale) and logged with the selection.
    rationale: Text(limit(Candidate, "rationale"))
    reversibility_class: Reversibility = Reversibility.REVERSIBLE


class SelectOut(Schema):
    selected: bool
    consent_required: bool
    approval_id: uuid.UUID | None = None


class QuestionOut(QuestionFields):
    id: uuid.UUID
    resolved_by: str = ""


class QuestionIn(Schema):
    question: Text(limit(OpenQuestion, "question"))
    target_discipline: Text(limit(OpenQuestion, "target_discipline"))
    kind: QuestionKind = QuestionKind.QUESTION


class RouteIn(Schema):
    target_discipline: Text(limit(OpenQuestion, "target_discipline"))


class QuestionResolveIn(Schema):
    resolution: Text(limit(OpenQuestion, "resolution"))
    cites: Text(limit(OpenQuestion, "resolution_ref")) = Field(
        description="artifact:<slug> | trace:<id> | decision:<n> | question:<id>"
    )


class TraceNodeOut(TraceNodeFields):
    node_id: str
    artifact: str | None = None

    @staticmethod
    def resolve_artifact(obj) -> str | None:
        return artifact_slug(obj)


class TraceNodeIn(Schema):
    node_id: NodeId(TRACE_ID)
    kind: Slug(limit(TraceNode, "kind"))
    label: Text(limit(TraceNode, "label"), required=False) = ""
    backed_by: BackedBy = BackedBy.FILE
    artifact: Text(ARTIFACT_SLUG) | None = None
    # Signed by the caller: this only chooses among its own names (its role, or a lens the roster names for it).
    produced_by: Text(limit(TraceNode, "produced_by"), required=False) = Field(
        "", description="one of your own names: your role or a lens the roster names for it (default: your role)"
    )


class TraceEdgeOut(TraceEdgeFields):
    id: uuid.UUID
    from_id: str = Field(alias="from_id")
    to_id: str


class TraceEdgeIn(Schema):
    from_id: NodeId(limit(TraceEdge, "from_id"))
    to_id: NodeId(limit(TraceEdge, "to_id"))


class WithdrawIn(Schema):
    # Kept as the trace node's status_reason.
    reason: Text(limit(TraceNode, "status_reason"), required=False) = ""


class TraceEdgeWithdrawIn(TraceEdgeIn):
    # Kept as the edge's inactive_reason.
    reason: Text(limit(TraceEdge, "inactive_reason"), required=False) = ""


class ValidationItemIn(Schema):
    assumption: Text(limit(ValidationPlanItem, "assumption"))
    kill_condition: Text(limit(ValidationPlanItem, "kill_condition"))
    activity: Text(limit(ValidationPlanItem, "activity"))
    node_id: uuid.UUID | None = None


class ValidationStatusIn(Schema):
    validation_status: ValidationStatus


class ValidationItemOut(ValidationItemFields):
    id: uuid.UUID
    node_id: uuid.UUID | None = None
    created_at: datetime
    updated_at: datetime


class TraceSettingsIn(Schema):
    root: NodeId(limit(LoopMeta, "trace_root")) | None = None
    leaf_kind: Slug(limit(LoopMeta, "leaf_kind")) | None = None


class MissingActionOut(Schema):
    kind: Literal["run", "hand-off", "link"] = Field(
        description="run: queue the in-app task; hand-off: ask for G3 (the loop page's button); link: the place to act"
    )
    label: str
    task: str = Field(description="run: the agents' task that supplies the item (POST /books/{id}/agents/runs)")
    href: str = Field(description="link: the page where the author acts")


class MissingItemOut(Schema):
    code: str = Field(
        description="charter, lens-review, lens-role, distinct-lenses, conflict, lint, round, "
        "questions, brief, brief-metrics, brief-ratified, thrusts, decision, paused, rerun, ask-gate"
    )
    what: str = Field(description="the missing item in plain words")
    reason: str = Field(description="the gate's own refusal text for it")
    action: MissingActionOut | None = None
    detail: dict = Field(default_factory=dict)


class MissingOut(Schema):
    gate: Gate | None = Field(description="the loop's current gate (null before the discovery starts)")
    status: str | None
    started: bool
    missing: list[MissingItemOut] = Field(
        description="what the current gate still needs, in order; empty once handed off (bounded by the roster "
        "and the conflicts waiting for the author)"
    )


class LintOut(Schema):
    strict: bool
    ok: bool
    root: str
    leaf_kind: str
    counts: dict[str, int]
    findings: list[dict] = Field(description="the first page (VIEW_PAGE) of the findings; counts counts them all")
    next: dict[str, str | None] = Field(description="findings: the paged route with the rest, or null")


class ArtifactOut(ArtifactFields):
    id: uuid.UUID
    slug: str
    parent: str | None = None

    @staticmethod
    def resolve_parent(obj) -> str | None:
        return parent_slug(obj)


class ArtifactIn(Schema):
    slug: Slug(ARTIFACT_SLUG)
    type: Slug(limit(BlackboardArtifact, "type"))
    status: ArtifactStatus = ArtifactStatus.PROPOSED
    content: dict = Field(default_factory=dict)
    lens: Text(limit(BlackboardArtifact, "lens"), required=False) = ""
    path: Text(limit(BlackboardArtifact, "path"), required=False) = ""
    parent: Text(ARTIFACT_SLUG) | None = None
    untrusted: StrictBool | None = None
    data_class: DataClass = DataClass.INTERNAL


class FindingIn(Schema):
    text: Text(FINDING_TEXT)
    resolution: Resolution
    reason: Text(FINDING_TEXT)


class ReviewIn(Schema):
    lens: Text(LENS)
    gate: Gate
    summary: Text(limit(LensReview, "summary"), required=False) = ""
    findings: list[FindingIn] = Field(default_factory=list, max_length=MAX_FINDINGS)


class ReviewOut(ReviewFields):
    id: uuid.UUID
    lens_id: str


class RoundIn(Schema):
    node_id: uuid.UUID | None = None


class CostIn(Schema):
    amount: float = Field(gt=0, le=1_000_000)
    node_id: uuid.UUID | None = None
    lens: Text(LENS, required=False) = ""


class RerunOut(RerunFields):
    """A queued or done re-run. ``artifacts`` is capped at a page: ``artifacts_count`` counts them all,
    ``next.artifacts`` pages the rest."""

    id: uuid.UUID
    artifacts: list[str] = Field(description="the first page (VIEW_PAGE) of the slots the lens re-runs")
    artifacts_count: int
    next: dict[str, str | None] = Field(description="artifacts: the paged route with the rest, or null")

    @staticmethod
    def resolve_artifacts(rerun: LensRerun) -> list[str]:
        return list(rerun.artifacts or [])[:VIEW_PAGE]

    @staticmethod
    def resolve_artifacts_count(rerun: LensRerun) -> int:
        return len(rerun.artifacts or [])

    @staticmethod
    def resolve_next(rerun: LensRerun) -> dict[str, str | None]:
        more = len(rerun.artifacts or []) > VIEW_PAGE
        return {"artifacts": loop_link(rerun.book_id, f"reruns/{rerun.pk}/artifacts") if more else None}


class BriefChapterIn(Schema):
    """One chapter a decision brief plans (its ``chapters``): the hand-off makes it."""

    number: int = Field(ge=1, le=100_000)
    title: Text(200, required=False) = ""
    spec: Text(20_000, required=False) = ""


class GateIn(Schema):
    summary: Text(limit(OptionCard, "summary"))
    decisions_requested: TextList(item_length=LIST_ITEM_TEXT, max_items=MAX_DECISIONS_REQUESTED, min_items=1)
    recommended: Text(limit(OptionCard, "recommended"), required=False) = ""
    reversibility_class: Reversibility
    artifacts: TextList(item_length=ARTIFACT_SLUG, max_items=MAX_LIST_ITEMS) = Field(default_factory=list)
    node_id: uuid.UUID | None = None
    trace_seed: Text(limit(OptionCard, "trace_seed"), required=False) = ""
    thrust_id: uuid.UUID | None = Field(None, description="G1.5: the thrust candidate the author is asked to ratify")


class GateOut(Schema):
    outcome: str
    gate: str
    card: CardOut
    approval_id: uuid.UUID | None = None
    decision_sequence: int | None = None


class ImpactOut(Schema):
    seed: str
    already_applied: bool
    seed_status: str
    affected: list[dict] = Field(description="the first page (VIEW_PAGE) of the slots it would touch")
    affected_count: int
    lenses: list[str] = Field(description="the lenses that would re-run: at most the fixed roster's")
    next: dict[str, str | None] = Field(description="affected: the paged route with the rest, or null")
    active_count: int
    limit: float
    breaker: bool


class LoopBounds(Schema):
    """The bounds a book's loop runs within, each in the range its LoopMeta field declares: what an imported
    meta file may set. A caller names only what it sets (read with ``model_dump(exclude_unset=True)``)."""

    round_cap: bounded(LoopMeta, "round_cap") = default(LoopMeta, "round_cap")
    cost_budget: bounded(LoopMeta, "cost_budget") = default(LoopMeta, "cost_budget")
    max_depth: bounded(LoopMeta, "max_depth") = default(LoopMeta, "max_depth")
    max_breadth: bounded(LoopMeta, "max_breadth") = default(LoopMeta, "max_breadth")
    concentration: bounded(LoopMeta, "concentration") = default(LoopMeta, "concentration")


class BoundsGrant(LoopBounds):
    """What an extend verdict grants, written in its text (``round_cap=8 cost_budget=150``): the loop's bounds,
    or the round cap of the node the card is about (in PlanNode.round_cap's range)."""

    node_round_cap: RoundCap = default(PlanNode, "round_cap")


class LoopVerdictIn(ThrustChoiceIn):
    verdict: Verdict
    rationale: Text(limit(Approval, "rationale"))
    constraint: Text(limit(Approval, "constraint"), required=False) = Field(
        "",
        description="approve-with-constraint: the constraint; redirect: the steer; extend: what is granted, as "
        f"name=number ({', '.join(BoundsGrant.model_fields)}), each in its bound's range (else 422 naming "
        "constraint.<name>)",
    )


class LoopVerdictOut(Schema):
    sequence: int
    decision: str
    gate: str | None = None
    ratified_by: str
    detail: dict
    meta: MetaOut


class ImportOut(Schema):
    imported: dict[str, int]
    skipped: list[dict]
    # What the file called ratified or settled lands as proposed (or surfaced to the author): listed here.
    downgraded: list[str] = []
    decision_sequence: int | None = None


# --- Records of an imported loop (``services.transfer.loop_import``) ---------------------------------------
# Each extends the input schema of the write that makes the record in the book (so a limit, a choice or a
# format is the same as the API's), with what only the file carries. The file's own names are aliases.

WriterRole = Literal[tuple(value for value, _ in WRITER_ROLES)]
ROUNDS = Field(0, ge=0, le=1_000_000_000)


class ArtifactRecord(ArtifactIn):
    slug: Slug(ARTIFACT_SLUG) = Field(alias="id")
    status: ArtifactStatus = default(BlackboardArtifact, "status")
    version: int = Field(1, ge=1, le=1_000_000)
    produced_by: WriterRole = "sol"
    round_last_touched: int = ROUNDS
    untrusted: StrictBool = False


class QuestionRecord(QuestionIn):
    raised_by: Text(limit(OpenQuestion, "raised_by"))
    status: QuestionStatus = default(OpenQuestion, "status")
    resolution: Text(limit(OpenQuestion, "resolution"), required=False) = ""
    resolution_ref: Text(limit(OpenQuestion, "resolution_ref"), required=False) = ""
    round: int = ROUNDS
    untrusted: StrictBool = False


class TraceNodeRecord(TraceNodeIn):
    node_id: NodeId(TRACE_ID) = Field(alias="id")
    status: TraceStatus = default(TraceNode, "status")
    status_reason: Text(limit(TraceNode, "status_reason"), required=False) = ""


class TraceEdgeRecord(TraceEdgeIn):
    from_id: NodeId(limit(TraceEdge, "from_id")) = Field(alias="from")
    to_id: NodeId(limit(TraceEdge, "to_id")) = Field(alias="to")
    active: StrictBool = True
    inactive_reason: Text(limit(TraceEdge, "inactive_reason"), required=False) = ""


class ValidationHookRecord(Schema):
    """A plan node's validation hook, nested in the file (flat on NodeIn)."""

    assumption: Assumption = ""
    kill_condition: KillCondition = ""
    activity: Activity = ""


class PlanNodeRecord(Schema):
    """A plan node of the file: NodeIn's fields (its parent is the file's ``parent_id``, remapped by the
    import) with the state the file carries."""

    intent: Intent
    altitude: Altitude = Altitude.PLOTLINE
    round_cap: RoundCap = 3
    validation_hook: ValidationHookRecord = Field(default_factory=ValidationHookRecord)
    lifecycle: Lifecycle = default(PlanNode, "lifecycle")
    validation_status: ValidationStatus = default(PlanNode, "validation_status")
    sub_idea: SubIdea = default(PlanNode, "sub_idea")
    produced_by: WriterRole = default(PlanNode, "produced_by")


class CandidateRecord(CandidateIn):
    status: CandidateStatus = default(Candidate, "status")
    proposed_by: WriterRole = "terra"
    untrusted: StrictBool = False


class ValidationItemRecord(ValidationItemIn):
    validation_status: ValidationStatus = default(ValidationPlanItem, "validation_status")


class ReopenIn(Schema):
    """The author reopens her handed-off discovery at a gate, saying why; she confirms once she saw the impact."""

    gate: Gate = Field(description="the gate the loop goes back to: G0, G1, G1.5, G2 or G3")
    rationale: Text(limit(Approval, "rationale"))
    confirm: StrictBool = Field(
        False,
        description="without it the answer is a 409 (reopens_discovery) carrying the impact, so she sees it first",
    )


class ReopenImpactOut(Schema):
    gate: str
    gates: list[dict] = Field(description="the gates passed again, each with the decision-log row that passed it")
    artifacts: list[dict] = Field(description="the ratified slots those gates ratified, and what happens to each")
    charter: dict | None = Field(description="the governing Story Charter (G2 ratifies it or a newer one again)")
    thrust: dict | None = Field(description="the chosen story thrust (G1.5 ratifies it or another again)")
    chapters: list[dict] = Field(description="the first page of the chapters, each kept with its text")
    chapters_count: int
    downstream: dict = Field(description="the cascade preview of the parts downstream (nothing goes stale)")


class ReopenOut(Schema):
    gate: str
    status: str
    decision_sequence: int
    impact: ReopenImpactOut
