"""The agents' schemas: the API's input and output, and the plan each task returns.

A plan is what a provider answers (the offline rules or a model): it is built from the same
input schemas as the API (``discovery/schemas.py``, ``discovery/loop/schemas.py``), so a model's
reply is validated exactly as an outside agent's request would be, before anything is written.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from ninja import Field, Schema
from pydantic import model_validator

from approvals.models import Gate
from discovery.loop.schemas import ArtifactIn, GateIn, QuestionResolveIn, ReviewIn, TraceEdgeIn, TraceNodeIn
from discovery.models import Provenance, ScratchpadEntryKind
from discovery.schemas import (
    Chapter,
    CharterIn,
    ClaimIn,
    EntryIn,
    FindingItem,
    HandoffIn,
    HandoffResultIn,
    ObservationIn,
    QuestionSetIn,
    ThrustIn,
)
from discovery.selectors import VIEW_PAGE
from library.models import ResearchItem
from novelgraph.core.pagination import rest_link
from novelgraph.core.schemas import LONG_TEXT, Text, limit

from .models import AgentTask, Provider

MAX_PLAN_ITEMS = 10
NOTE = Text(1_000)


# --- API ---------------------------------------------------------------------------


class AgentRunIn(Schema):
    """Queue one role's task for the book. Guidance needs a topic (handed to Luna first) or an open
    handoff to Luna; Terra's tasks may answer an open handoff to Terra."""

    task: AgentTask
    topic: Text(500, required=False) | None = Field(
        None, description="guidance: what Luna should look for in the library (she is handed it as a handoff)"
    )
    handoff_id: uuid.UUID | None = Field(None, description="an open handoff to the task's role that the run answers")
    provider: Provider | None = Field(
        None,
        description="default: the role's NOVELGRAPH_AGENT_<ROLE>_PROVIDER, else the server's NOVELGRAPH_AGENT_PROVIDER",
    )
    as_of_chapter: Chapter | None = Field(
        None,
        description="run as of this chapter: its dossier holds only canon true by then (later reveals withheld, "
        "unseen facts marked secret) and look-ups not placed on the chapter axis are withheld",
    )


class ResearchCollectIn(Schema):
    """Ask Luna to collect a web page as research: her run fetches it through the research guards and proposes
    it for the author's admission."""

    url: Text(limit(ResearchItem, "url")) = Field(description="the page's address (http or https)")
    claim: Text(limit(ResearchItem, "claim"), required=False) = Field(
        "", description="the claim the page supports; blank: Luna takes the page's first sentence"
    )
    citation: Text(limit(ResearchItem, "citation"), required=False) = Field(
        "", description="blank: the page's title and site and the day it was collected"
    )
    provider: Provider | None = Field(None, description="default: Luna's provider")


class RunOutputOut(Schema):
    type: str
    id: str


class AgentRunOut(Schema):
    id: uuid.UUID
    book_id: uuid.UUID
    role: str
    task: str
    input: dict
    provider: str
    model: str
    dossier_id: uuid.UUID | None
    status: str
    reason: str
    notes: list[str] = Field(description="bounded by construction: a plan's notes (at most MAX_PLAN_ITEMS) and one")
    written: list[RunOutputOut] = Field(description="the first page (VIEW_PAGE) of what the run wrote, in order")
    next: dict[str, str | None] = Field(description="written: the paged route with the rest, or null")
    parent_id: uuid.UUID | None
    requested_by_role: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_ms: int | None
    tokens: int
    cost: float

    @staticmethod
    def resolve_written(run) -> list[dict]:
        return [{"type": out.type, "id": out.object_id} for out in run_written(run)[:VIEW_PAGE]]

    @staticmethod
    def resolve_next(run) -> dict[str, str | None]:
        more = len(run_written(run)) > VIEW_PAGE
        link = rest_link(f"agent-runs/{run.pk}/written")
        return {"written": link if more else None}


def run_written(run) -> list:
    """The first ``VIEW_PAGE + 1`` outputs of a run, in order (from its prefetched outputs when the list route
    prefetched them, else one query of at most that many rows), kept on the run for both resolvers."""
    if not hasattr(run, "_written_page"):
        if "outputs" in getattr(run, "_prefetched_objects_cache", {}):
            run._written_page = list(run.outputs.all())[: VIEW_PAGE + 1]
        else:
            run._written_page = list(run.outputs.order_by("position")[: VIEW_PAGE + 1])
    return run._written_page


# --- Plans: what a provider answers for each task -------------------------------------------


class PlannedHandoff(Schema):
    """Work Sol hands to Luna or Terra, and the task their run does with it."""

    task: Literal[
        "guidance", "contradictions", "thrusts", "charter", "extract", "canon-review", "trust-review", "brief"
    ]
    handoff: HandoffIn

    @model_validator(mode="after")
    def _task_of_the_target(self):
        wanted = "luna" if self.task in ("guidance", "contradictions", "extract", "trust-review") else "terra"
        if self.handoff.to_role != wanted:
            raise ValueError(f"the {self.task} task is {wanted}'s; hand it to {wanted}")
        return self


class ApprovalAsk(Schema):
    claim_id: uuid.UUID
    note: Text(LONG_TEXT, required=False) = ""


class GateAsk(GateIn):
    gate: Gate


class SolPlan(Schema):
    """Sol's pass: the next question (citing what prompted it), the work handed on, the approvals
    requested for proposals that are ready, and the current gate's card when its preconditions hold."""

    question: QuestionSetIn | None = None
    done_asking: bool = Field(
        False,
        description="Sol has nothing more to ask the author (no question): her current question closes",
    )
    handoffs: list[PlannedHandoff] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)
    approval_requests: list[ApprovalAsk] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)
    claims: list[ClaimIn] = Field(
        default_factory=list,
        max_length=MAX_PLAN_ITEMS,
        description="canon Sol proposes from the author's confirmed observations (each waits for her verdict)",
    )
    advance_round: bool = Field(
        False, description="close the current round first (at G2, when it is all that keeps saturation from holding)"
    )
    gate: GateAsk | None = None
    notes: list[NOTE] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)


class GuidancePlan(Schema):
    """Luna, for a handoff question: observations drawn from library chunks (each citing its chunk),
    and the handoff's result."""

    observations: list[EntryIn] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)
    result: HandoffResultIn
    notes: list[NOTE] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)

    @model_validator(mode="after")
    def _guidance_cites_the_library(self):
        for i, entry in enumerate(self.observations):
            if entry.kind != ScratchpadEntryKind.OBSERVATION or entry.provenance != Provenance.LITERARY_GUIDANCE:
                raise ValueError(f"observations[{i}] must be an observation with provenance literary-guidance")
        return self


class ContradictionsPlan(Schema):
    """Luna: contradiction entries, each naming both sides (two typed references)."""

    contradictions: list[EntryIn] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)
    result: HandoffResultIn | None = None
    notes: list[NOTE] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)

    @model_validator(mode="after")
    def _both_sides_named(self):
        for i, entry in enumerate(self.contradictions):
            typed = [ref for ref in entry.source_refs if ref.type != "other"]
            if entry.kind != ScratchpadEntryKind.CONTRADICTION or len(typed) < 2:
                raise ValueError(f"contradictions[{i}] must be a contradiction citing both sides")
        return self


class ThrustsPlan(Schema):
    """Terra: thrust candidates (core, stretch, wild) from the premise and the observations."""

    thrusts: list[ThrustIn] = Field(min_length=1, max_length=3)
    result: HandoffResultIn | None = None
    notes: list[NOTE] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)


class CharterPlan(Schema):
    """Terra: a Story Charter version from the confirmed observations, what is unknown listed as
    productive unknowns."""

    charter: CharterIn
    result: HandoffResultIn | None = None
    notes: list[NOTE] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)


class ExtractedObservation(ObservationIn):
    """One thing an author's turn speaks to (a charter field, a named person, place or thing, or a ``fact`` whose
    sentence places it on the chapter axis: "secret until chapter twelve", "dies in chapter 9"), citing the turn.
    A fact's value is her sentence, cue included: Sol reads its story record from those words."""

    turn_id: uuid.UUID
    provenance: Provenance = Provenance.AGENT_INFERRED


class ExtractPlan(Schema):
    """Luna: the observations the author's turns speak to, each citing its turn; they enter ``working`` and wait
    for the author to confirm, correct or retire them."""

    observations: list[ExtractedObservation] = Field(default_factory=list, max_length=3 * MAX_PLAN_ITEMS)
    result: HandoffResultIn | None = None
    notes: list[NOTE] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)

    @model_validator(mode="after")
    def _never_the_authors_words(self):
        for i, obs in enumerate(self.observations):
            if obs.provenance == Provenance.AUTHOR_STATED:
                raise ValueError(f"observations[{i}]: an extracted observation is never author-stated")
        return self


class LensQuestionResolution(QuestionResolveIn):
    question_id: uuid.UUID


class ReviewPlan(Schema):
    """A required lens's review at G2 (Terra's canon integrity, Luna's reader trust): each finding resolved or
    deferred with a reason."""

    review: ReviewIn
    # The loop's open questions routed to the lens, each taken up and resolved with what settles it.
    questions: list[LensQuestionResolution] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)
    result: HandoffResultIn | None = None
    notes: list[NOTE] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)


class BriefPlan(Schema):
    """Terra: the decision brief (the ratified charter's version, the selected thrust, success metrics, the
    chapters with Chapter 1's spec, canon), proposed on the blackboard, and the traceability that links the
    premise through the thrust and the charter's fields to the brief's chapters."""

    brief: ArtifactIn
    nodes: list[TraceNodeIn] = Field(default_factory=list, max_length=2 * MAX_PLAN_ITEMS)
    edges: list[TraceEdgeIn] = Field(default_factory=list, max_length=3 * MAX_PLAN_ITEMS)
    result: HandoffResultIn | None = None
    notes: list[NOTE] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)

    @model_validator(mode="after")
    def _a_decision_brief(self):
        if self.brief.type != "decision-brief":
            raise ValueError("brief.type must be decision-brief")
        return self


class ContinuityPlan(Schema):
    """Luna: what the continuity check of one chapter's revision found (nothing, for a clean chapter)."""

    findings: list[FindingItem] = Field(default_factory=list, max_length=1_000)
    notes: list[NOTE] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)


class ResearchUrlPlan(Schema):
    """Luna: the claim a page she collected supports, and its citation (the author's own words, when she gave
    them, are kept as they are; the page's text itself is what the server collected, never the plan's)."""

    claim: Text(limit(ResearchItem, "claim"), required=False) = ""
    citation: Text(limit(ResearchItem, "citation"), required=False) = ""
    notes: list[NOTE] = Field(default_factory=list, max_length=MAX_PLAN_ITEMS)


PLANS: dict[str, type[Schema]] = {
    AgentTask.NEXT_QUESTION: SolPlan,
    AgentTask.GUIDANCE: GuidancePlan,
    AgentTask.CONTRADICTIONS: ContradictionsPlan,
    AgentTask.THRUSTS: ThrustsPlan,
    AgentTask.CHARTER: CharterPlan,
    AgentTask.EXTRACT: ExtractPlan,
    AgentTask.CANON_REVIEW: ReviewPlan,
    AgentTask.TRUST_REVIEW: ReviewPlan,
    AgentTask.BRIEF: BriefPlan,
    AgentTask.CONTINUITY: ContinuityPlan,
    AgentTask.RESEARCH_URL: ResearchUrlPlan,
}
