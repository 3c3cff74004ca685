"""One serialiser per loop model: the fields that the export file, the import and the API share.

Each model's shared fields are declared once, typed, as a ninja ``Schema`` (``<Model>Fields``). The API's
output schema in ``schemas.py`` extends it with what only the API shows (its uuid, timestamps, ...). The
model's ``Serializer`` writes the export record (the shared fields plus the file's own keys: its id, its
references, its creation time). The import reads a record back through the input schemas (``schemas``'s
``...Record``), whose limits and choices are the model's.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ninja import Schema

from .models import (
    BlackboardArtifact,
    Candidate,
    LensRerun,
    LensReview,
    LoopMeta,
    OpenQuestion,
    OptionCard,
    PlanNode,
    TraceEdge,
    TraceNode,
    ValidationPlanItem,
)


def ts(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def text_id(value) -> str | None:
    return str(value) if value else None


def parent_slug(artifact: BlackboardArtifact) -> str | None:
    """An artifact names its parent by slug (in the file and in the API)."""
    return artifact.parent.slug if artifact.parent_id else None


def artifact_slug(node: TraceNode) -> str | None:
    """A traceability node names the slot backing it by slug (in the file and in the API)."""
    return node.artifact.slug if node.artifact_id else None


# The plan node's validation hook: flat on the model and the API, nested in the file.
HOOK = ("assumption", "kill_condition", "activity")


class Serializer:
    """A loop model's record in the export file."""

    def __init__(
        self,
        model,
        fields: type[Schema],
        *,
        file_only: tuple[str, ...] = (),
        stamped: bool = True,
        **keys: Callable[[Any], Any],
    ):
        self.model = model
        self.fields = fields
        # Plain fields of the model the file carries but the API does not show.
        self.file_only = file_only
        # The file's own keys (its id, its references by slug or id), computed from the row.
        self.keys = ({"id": lambda obj: str(obj.pk)} if stamped else {}) | keys
        if stamped:
            self.keys["created_at"] = lambda obj: ts(obj.created_at)

    @property
    def names(self) -> tuple[str, ...]:
        return (*self.fields.model_fields, *self.file_only)

    def record(self, obj) -> dict:
        return {
            **{name: getattr(obj, name) for name in self.names},
            **{key: value(obj) for key, value in self.keys.items()},
        }


# --- The shared fields, one schema per model -------------------------------------------------------


class MetaFields(Schema):
    schema_version: str
    round: int
    round_cap: int
    cost_budget: float
    cost_spent: float
    gate: str
    status: str
    saturation: bool
    max_depth: int
    max_breadth: int
    concentration: float
    bound: str
    trace_root: str
    leaf_kind: str
    constraints: list[Any]


class CardFields(Schema):
    schema_version: str
    kind: str
    gate: str
    summary: str
    decisions_requested: list[str]
    recommended: str
    reversibility_class: str
    artifacts: list[str]
    trace_seed: str
    bound: str
    proposed_extension: dict
    risk_triggers: list[str]
    payload: dict
    status: str
    verdict: str
    raised_by: str
    round: int


class NodeFields(Schema):
    schema_version: str
    is_root: bool
    depth: int
    intent: str
    altitude: str
    lifecycle: str
    validation_status: str
    sub_idea: str
    round: int
    round_cap: int
    cost_spent: float
    produced_by: str


class CandidateFields(Schema):
    schema_version: str
    altitude: str
    mechanic: str
    shape: str
    riskiest_assumption: str
    status: str
    rationale: str
    proposed_by: str
    untrusted: bool


class QuestionFields(Schema):
    schema_version: str
    kind: str
    raised_by: str
    target_discipline: str
    question: str
    status: str
    resolution: str
    resolution_ref: str
    round: int
    untrusted: bool


class TraceNodeFields(Schema):
    schema_version: str
    kind: str
    label: str
    backed_by: str
    produced_by: str
    status: str
    status_reason: str


class TraceEdgeFields(Schema):
    schema_version: str
    active: bool
    inactive_reason: str


class ValidationItemFields(Schema):
    schema_version: str
    assumption: str
    kill_condition: str
    activity: str
    validation_status: str


class ArtifactFields(Schema):
    schema_version: str
    type: str
    status: str
    version: int
    produced_by: str
    lens: str
    path: str
    round_last_touched: int
    stale_reason: str
    untrusted: bool
    data_class: str
    content: dict
    # A proposed next version waiting beside a ratified one ({} when none): the author ratifies it at a gate.
    successor: dict


class ReviewFields(Schema):
    schema_version: str
    gate: str
    round: int
    reviewer_role: str
    summary: str
    findings: list[dict]
    untrusted: bool


class RerunFields(Schema):
    schema_version: str
    lens: str
    artifacts: list[str]
    reason: str
    status: str
    cost: float
    round: int


# --- The serialisers -----------------------------------------------------------------------------

META = Serializer(LoopMeta, MetaFields, file_only=("round_invalidated", "last_round_clean"), stamped=False)
CARD = Serializer(
    OptionCard,
    CardFields,
    node=lambda c: text_id(c.node_id),
    approval_id=lambda c: text_id(c.approval_id),
)
CANDIDATE = Serializer(Candidate, CandidateFields)
PLAN_NODE = Serializer(
    PlanNode,
    NodeFields,
    parent_id=lambda n: text_id(n.parent_id),
    selection=lambda n: text_id(n.selection_id),
    validation_hook=lambda n: {name: getattr(n, name) for name in HOOK},
    candidates=lambda n: [CANDIDATE.record(c) for c in n.candidates.order_by("created_at", "id")],
)
VALIDATION_ITEM = Serializer(ValidationPlanItem, ValidationItemFields, node=lambda v: text_id(v.node_id))
QUESTION = Serializer(OpenQuestion, QuestionFields)
TRACE_NODE = Serializer(
    TraceNode,
    TraceNodeFields,
    id=lambda n: n.node_id,
    artifact=artifact_slug,
)
TRACE_EDGE = Serializer(TraceEdge, TraceEdgeFields, **{"from": lambda e: e.from_id, "to": lambda e: e.to_id})
ARTIFACT = Serializer(
    BlackboardArtifact,
    ArtifactFields,
    id=lambda a: a.slug,
    parent_id=parent_slug,
)
REVIEW = Serializer(LensReview, ReviewFields, lens=lambda r: r.lens_id)
RERUN = Serializer(LensRerun, RerunFields)
