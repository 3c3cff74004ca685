"""Request and response schemas of the loop's API. An output schema extends its model's shared fields
(``serializers.py``, also what the export and the import carry) with what only the API shows."""

from __future__ import annotations

import uuid
from datetime import datetime

from ninja import Field, Schema
from pydantic import StrictBool

from approvals.models import Reversibility

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


class MetaOut(MetaFields):
    """The loop's counters and bounds (the file also carries round_invalidated and last_round_clean)."""


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


class NodeIn(Schema):
    parent_id: uuid.UUID
    intent: str = Field(max_length=5000)
    altitude: str = Field("plotline", max_length=20)
    round_cap: int = Field(3, ge=1, le=1000)
    assumption: str = Field("", max_length=5000)
    kill_condition: str = Field("", max_length=5000)
    activity: str = Field("", max_length=5000)


class NodePatch(Schema):
    intent: str | None = Field(None, max_length=5000)
    lifecycle: str | None = Field(None, max_length=20)
    validation_status: str | None = Field(None, max_length=20)
    assumption: str | None = Field(None, max_length=5000)
    kill_condition: str | None = Field(None, max_length=5000)
    activity: str | None = Field(None, max_length=5000)


class CandidateOut(CandidateFields):
    id: uuid.UUID
    node_id: uuid.UUID


class CandidateIn(Schema):
    altitude: str = Field(max_length=20)
    mechanic: str = Field(max_length=120)
    shape: str = Field(max_length=5000)
    riskiest_assumption: str = Field(max_length=5000)
    rationale: str = Field("", max_length=5000)


class SelectIn(Schema):
    candidate_id: uuid.UUID
    rationale: str = Field(max_length=5000)
    reversibility_class: Reversibility = Reversibility.REVERSIBLE


class SelectOut(Schema):
    selected: bool
    consent_required: bool
    approval_id: uuid.UUID | None = None


class QuestionOut(QuestionFields):
    id: uuid.UUID
    resolved_by: str = ""


class QuestionIn(Schema):
    question: str = Field(max_length=5000)
    target_discipline: str = Field(max_length=60)
    kind: str = Field("question", max_length=20)


class RouteIn(Schema):
    target_discipline: str = Field(max_length=60)


class QuestionResolveIn(Schema):
    resolution: str = Field(max_length=5000)
    cites: str = Field(max_length=200, description="artifact:<slug> | trace:<id> | decision:<n> | question:<id>")


class TraceNodeOut(TraceNodeFields):
    node_id: str
    artifact: str | None = None

    @staticmethod
    def resolve_artifact(obj) -> str | None:
        return artifact_slug(obj)


class TraceNodeIn(Schema):
    node_id: str = Field(max_length=100)
    kind: str = Field(max_length=60)
    label: str = Field("", max_length=200)
    backed_by: str = Field("file", max_length=12)
    artifact: str | None = Field(None, max_length=100)
    produced_by: str = Field("", max_length=60)


class TraceEdgeOut(TraceEdgeFields):
    id: uuid.UUID
    from_id: str = Field(alias="from_id")
    to_id: str


class TraceEdgeIn(Schema):
    from_id: str = Field(max_length=100)
    to_id: str = Field(max_length=100)


class WithdrawIn(Schema):
    reason: str = Field("", max_length=2000)


class TraceEdgeWithdrawIn(TraceEdgeIn):
    reason: str = Field("", max_length=2000)


class ValidationItemIn(Schema):
    assumption: str = Field(max_length=5000)
    kill_condition: str = Field(max_length=5000)
    activity: str = Field(max_length=5000)
    node_id: uuid.UUID | None = None


class ValidationStatusIn(Schema):
    validation_status: str = Field(max_length=12)


class ValidationItemOut(ValidationItemFields):
    id: uuid.UUID
    node_id: uuid.UUID | None = None
    created_at: datetime
    updated_at: datetime


class TraceSettingsIn(Schema):
    root: str | None = Field(None, max_length=100)
    leaf_kind: str | None = Field(None, max_length=60)


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
    slug: str = Field(max_length=100)
    type: str = Field(max_length=60)
    status: str = Field("proposed", max_length=12)
    content: dict = Field(default_factory=dict)
    lens: str = Field("", max_length=60)
    path: str = Field("", max_length=300)
    parent: str | None = Field(None, max_length=100)
    untrusted: StrictBool | None = None
    data_class: str = Field("internal", max_length=12)


class FindingIn(Schema):
    text: str = Field(max_length=2000)
    resolution: str = Field(max_length=12)
    reason: str = Field(max_length=2000)


class ReviewIn(Schema):
    lens: str = Field(max_length=60)
    gate: str = Field(max_length=4)
    summary: str = Field("", max_length=5000)
    findings: list[FindingIn] = Field(default_factory=list, max_length=100)


class ReviewOut(ReviewFields):
    id: uuid.UUID
    lens_id: str


class RoundIn(Schema):
    node_id: uuid.UUID | None = None


class CostIn(Schema):
    amount: float = Field(gt=0, le=1_000_000)
    node_id: uuid.UUID | None = None
    lens: str = Field("", max_length=60)


class RerunOut(RerunFields):
    id: uuid.UUID


class GateIn(Schema):
    summary: str = Field(max_length=500)
    decisions_requested: list[str] = Field(min_length=1, max_length=20)
    recommended: str = Field("", max_length=2000)
    reversibility_class: Reversibility
    artifacts: list[str] = Field(default_factory=list, max_length=50)
    node_id: uuid.UUID | None = None
    trace_seed: str = Field("", max_length=100)
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


class LoopVerdictIn(Schema):
    verdict: str = Field(max_length=30)
    rationale: str = Field(max_length=10_000)
    constraint: str = Field("", max_length=10_000)


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
