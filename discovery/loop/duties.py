"""The loop's duties for agents through MCP, each a thin call into the service its REST route calls:

- the controller's (Sol's): gates, rounds, cost, the plan tree, routing and surfacing questions and
  the traceability settings;
- every lens's (Sol, Terra, Luna; ``LENS_CAPS``): divergence candidates, open questions raised and
  answered, traceability nodes and edges (and withdrawing its own), the validation plan, blackboard
  slots (the decision brief among them), reviews and re-runs done;
- the reads those duties need (discovery:read): the loop, its plan tree and candidates, questions,
  the traceability graph and its lint, the validation plan, the blackboard and the reviews.

Registered from ``LoopConfig.ready()`` into the kernel's registry (``novelgraph.core.duties``). No
tool decides: the author's verdict on a gate has no tool.
"""

from __future__ import annotations

from typing import Literal

from ninja import Schema

from approvals.models import Gate
from discovery.access import Cap, book_access
from discovery.selectors import MappedRows
from novelgraph.core.auth import Principal
from novelgraph.core.duties import CONTROLLER, ToolSpec, path_parameter, read_tool, register_tools
from novelgraph.core.errors import NotFound

from . import selectors
from . import services as loop
from .api import BASE
from .requirements import gate_missing
from .models import RerunStatus
from .schemas import (
    ArtifactIn,
    ArtifactOut,
    CandidateIn,
    CandidateOut,
    CardOut,
    CostIn,
    GateIn,
    GateOut,
    ImpactOut,
    LintOut,
    LoopOut,
    MetaOut,
    MissingOut,
    NodeIn,
    NodeOut,
    NodePatch,
    QuestionIn,
    QuestionResolveIn,
    RerunOut,
    ReviewIn,
    ReviewOut,
    RoundIn,
    RouteIn,
    SelectIn,
    SelectOut,
    TraceEdgeIn,
    TraceEdgeOut,
    TraceEdgeWithdrawIn,
    TraceNodeIn,
    TraceNodeOut,
    TraceSettingsIn,
    ValidationItemIn,
    ValidationItemOut,
    ValidationStatusIn,
    WithdrawIn,
)
from .schemas import QuestionOut as LoopQuestionOut
from .services.base import LENS_CAPS
from .services.cascade import stale_node_row


def loop_gate_request(principal: Principal, args, payload: GateIn):
    return loop.gate_request(access=book_access(principal, args.book_id), gate=args.gate, payload=payload)


def loop_round_advance(principal: Principal, args, payload: RoundIn):
    return loop.round_advance(access=book_access(principal, args.book_id), node_id=payload.node_id)


def loop_cost_spend(principal: Principal, args, payload: CostIn):
    return loop.cost_spend(access=book_access(principal, args.book_id), payload=payload)


def loop_node_add(principal: Principal, args, payload: NodeIn):
    return loop.plan_node_add(access=book_access(principal, args.book_id), payload=payload)


def loop_node_update(principal: Principal, args, payload: NodePatch):
    return loop.plan_node_update(access=book_access(principal, args.book_id), node_id=args.node_id, payload=payload)


def loop_candidate_select(principal: Principal, args, payload: SelectIn):
    return loop.candidate_select(access=book_access(principal, args.book_id), node_id=args.node_id, payload=payload)


def loop_question_route(principal: Principal, args, payload: RouteIn):
    access = book_access(principal, args.book_id)
    return loop.question_route(access=access, question_id=args.question_id, payload=payload)


def loop_question_surface(principal: Principal, args, _payload):
    return loop.question_surface(access=book_access(principal, args.book_id), question_id=args.question_id)


def loop_trace_settings(principal: Principal, args, payload: TraceSettingsIn):
    return loop.trace_settings(access=book_access(principal, args.book_id), payload=payload)


# --- Every lens (Sol, Terra, Luna): proposed material, questions, the graph, reviews ---------------


def _access(principal: Principal, args):
    return book_access(principal, args.book_id)


def loop_candidate_add(principal: Principal, args, payload: CandidateIn):
    return loop.candidate_add(access=_access(principal, args), node_id=args.node_id, payload=payload)


def loop_question_raise(principal: Principal, args, payload: QuestionIn):
    return loop.question_raise(access=_access(principal, args), payload=payload)


def loop_question_resolve(principal: Principal, args, payload: QuestionResolveIn):
    return loop.question_resolve(access=_access(principal, args), question_id=args.question_id, payload=payload)


def loop_trace_node_add(principal: Principal, args, payload: TraceNodeIn):
    return loop.trace_node_add(access=_access(principal, args), payload=payload)


def loop_trace_edge_add(principal: Principal, args, payload: TraceEdgeIn):
    return loop.trace_edge_add(access=_access(principal, args), payload=payload)


def loop_trace_node_withdraw(principal: Principal, args, payload: WithdrawIn):
    return loop.trace_node_withdraw(access=_access(principal, args), node_id=args.trace_node, payload=payload)


def loop_trace_edge_withdraw(principal: Principal, args, payload: TraceEdgeWithdrawIn):
    return loop.trace_edge_withdraw(access=_access(principal, args), payload=payload)


def loop_validation_add(principal: Principal, args, payload: ValidationItemIn):
    return loop.validation_item_add(access=_access(principal, args), payload=payload)


def loop_validation_status(principal: Principal, args, payload: ValidationStatusIn):
    return loop.validation_item_status(access=_access(principal, args), item_id=args.item_id, payload=payload)


def loop_artifact_write(principal: Principal, args, payload: ArtifactIn):
    return loop.artifact_write(access=_access(principal, args), payload=payload)


def loop_review_record(principal: Principal, args, payload: ReviewIn):
    return loop.lens_review_record(access=_access(principal, args), payload=payload)


def loop_rerun_done(principal: Principal, args, _payload):
    return loop.rerun_done(access=_access(principal, args), rerun_id=args.rerun_id)


# --- Reads (discovery:read), as the REST routes read ---------------------------------------------


def _book(principal: Principal, args):
    return loop.base.started_book(_access(principal, args))


def loop_read(principal: Principal, args, _payload):
    book = _book(principal, args)
    view = selectors.loop_view(book)
    more = view["more"]["queued_reruns"]
    view["next"] = {"queued_reruns": selectors.loop_link(book.pk, "reruns", status="queued") if more else None}
    return view


def loop_missing(principal: Principal, args, _payload):
    return gate_missing(loop.base.reader_book(_access(principal, args)))


def loop_nodes(principal: Principal, args, _payload):
    return selectors.nodes_of(_book(principal, args))


def loop_candidates(principal: Principal, args, _payload):
    node = selectors.nodes_of(_book(principal, args)).filter(pk=args.node_id).first()
    if node is None:
        raise NotFound("plan node not found")
    return selectors.candidates_of(node)


def loop_questions(principal: Principal, args, _payload):
    return selectors.questions_of(_book(principal, args), None)


def loop_trace_nodes(principal: Principal, args, _payload):
    return selectors.trace_nodes_of(_book(principal, args))


def loop_trace_edges(principal: Principal, args, _payload):
    return selectors.trace_edges_of(_book(principal, args), None)


def loop_validation_plan(principal: Principal, args, _payload):
    return selectors.validation_plan_of(_book(principal, args))


def loop_artifacts(principal: Principal, args, _payload):
    return selectors.artifacts_of(_book(principal, args))


def loop_reviews(principal: Principal, args, _payload):
    return selectors.reviews_of(_book(principal, args))


class LintParams(Schema):
    """The lint route's query: ``strict`` makes orphans and unreachable nodes failures (as G2 does)."""

    strict: bool = False


def loop_lint(principal: Principal, args, params: LintParams):
    return selectors.lint_capped(_book(principal, args), strict=params.strict)


LENS: tuple[Cap, ...] = LENS_CAPS  # the service's own rule (``lens_book``): any lens, or the controller
READ: tuple[Cap, ...] = (Cap.DISCOVERY_READ,)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="loop_gate_request",
        route="POST /books/{book_id}/loop/gates/{gate}/request",
        description="Ask for the loop's current gate: an option card waits for the author's verdict, or the "
        "gate passes on its own (G1 without a risk trigger).",
        needs=CONTROLLER,
        run=loop_gate_request,
        out=GateOut,
        payload=GateIn,
        path=("book_id", "gate"),
    ),
    ToolSpec(
        name="loop_round_advance",
        route="POST /books/{book_id}/loop/rounds",
        description="Close a round of the loop (the book's, or one plan node's); reaching a cap pauses and asks "
        "the author.",
        needs=CONTROLLER,
        run=loop_round_advance,
        out=MetaOut,
        payload=RoundIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_cost_spend",
        route="POST /books/{book_id}/loop/cost",
        description="Record cost spent against the loop's budget; a bound reached pauses and asks the author.",
        needs=CONTROLLER,
        run=loop_cost_spend,
        out=MetaOut,
        payload=CostIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_node_add",
        route="POST /books/{book_id}/loop/nodes",
        description="Add a plan-tree node under a parent node (draft, hypothesis).",
        needs=CONTROLLER,
        run=loop_node_add,
        out=NodeOut,
        payload=NodeIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_node_update",
        route="PATCH /books/{book_id}/loop/nodes/{node_id}",
        description="Update a plan-tree node's intent, working lifecycle, validation status or notes (only a "
        "verdict or the cascade closes a node).",
        needs=CONTROLLER,
        run=loop_node_update,
        out=NodeOut,
        payload=NodePatch,
        path=("book_id", "node_id"),
    ),
    ToolSpec(
        name="loop_candidate_select",
        route="POST /books/{book_id}/loop/nodes/{node_id}/select",
        description="Select one divergence candidate of a node; the others are kept, rejected with the "
        "rationale. A one-way door asks the author first.",
        needs=CONTROLLER,
        run=loop_candidate_select,
        out=SelectOut,
        payload=SelectIn,
        path=("book_id", "node_id"),
    ),
    ToolSpec(
        name="loop_question_route",
        route="POST /books/{book_id}/loop/questions/{question_id}/route",
        description="Route an open question to the discipline (lens or role) that should answer it.",
        needs=CONTROLLER,
        run=loop_question_route,
        out=LoopQuestionOut,
        payload=RouteIn,
        path=("book_id", "question_id"),
    ),
    ToolSpec(
        name="loop_question_surface",
        route="POST /books/{book_id}/loop/questions/{question_id}/surface",
        description="Surface an open question to the author.",
        needs=CONTROLLER,
        run=loop_question_surface,
        out=LoopQuestionOut,
        path=("book_id", "question_id"),
    ),
    ToolSpec(
        name="loop_trace_settings",
        route="POST /books/{book_id}/loop/trace/settings",
        description="Set the traceability graph's root node and the kind of its leaves (what the lint checks).",
        needs=CONTROLLER,
        run=loop_trace_settings,
        out=MetaOut,
        payload=TraceSettingsIn,
        path=("book_id",),
        idempotent=True,
    ),
    # Every lens.
    ToolSpec(
        name="loop_candidate_add",
        route=f"POST {BASE}/nodes/{{node_id}}/candidates",
        description="Propose a divergence candidate (altitude, mechanic, shape, riskiest assumption) under a "
        "plan-tree node; the controller selects, the author decides a one-way door.",
        needs=LENS,
        run=loop_candidate_add,
        out=CandidateOut,
        payload=CandidateIn,
        path=("book_id", "node_id"),
    ),
    ToolSpec(
        name="loop_question_raise",
        route=f"POST {BASE}/questions",
        description="Raise an open question (or a contradiction) for a discipline (a lens or a role) to answer.",
        needs=LENS,
        run=loop_question_raise,
        out=LoopQuestionOut,
        payload=QuestionIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_question_resolve",
        route=f"POST {BASE}/questions/{{question_id}}/resolve",
        description="Answer an open question, citing what answers it (artifact:<slug>, trace:<id>, "
        "decision:<n> or question:<id>). A question the author settled stays hers.",
        needs=LENS,
        run=loop_question_resolve,
        out=LoopQuestionOut,
        payload=QuestionResolveIn,
        path=("book_id", "question_id"),
    ),
    ToolSpec(
        name="loop_trace_node_add",
        route=f"POST {BASE}/trace/nodes",
        description="Add a node of the traceability graph (premise, promise, scene, ...), optionally bound to "
        "a blackboard slot.",
        needs=LENS,
        run=loop_trace_node_add,
        out=TraceNodeOut,
        payload=TraceNodeIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_trace_edge_add",
        route=f"POST {BASE}/trace/edges",
        description="Link two traceability nodes (from serves to); the lint checks the graph reaches its leaves.",
        needs=LENS,
        run=loop_trace_edge_add,
        out=TraceEdgeOut,
        payload=TraceEdgeIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_trace_node_withdraw",
        route=f"POST {BASE}/trace/nodes/{{trace_node}}/withdraw",
        description="Withdraw a traceability node your lens produced and nobody ratified (its edges leave the "
        "graph; the node stays in history).",
        needs=LENS,
        run=loop_trace_node_withdraw,
        out=TraceNodeOut,
        payload=WithdrawIn,
        path=("book_id", "trace_node"),
    ),
    ToolSpec(
        name="loop_trace_edge_withdraw",
        route=f"POST {BASE}/trace/edges/withdraw",
        description="Withdraw an edge from a node your lens produced that touches nothing ratified.",
        needs=LENS,
        run=loop_trace_edge_withdraw,
        out=TraceEdgeOut,
        payload=TraceEdgeWithdrawIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_validation_add",
        route=f"POST {BASE}/validation",
        description="Add an item to the validation plan: an assumption, its kill condition and the real-world "
        "activity that tests it.",
        needs=LENS,
        run=loop_validation_add,
        out=ValidationItemOut,
        payload=ValidationItemIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_validation_status",
        route=f"POST {BASE}/validation/{{item_id}}/status",
        description="Move a validation-plan item forward: hypothesis, validating, then validated or refuted.",
        needs=LENS,
        run=loop_validation_status,
        out=ValidationItemOut,
        payload=ValidationStatusIn,
        path=("book_id", "item_id"),
    ),
    ToolSpec(
        name="loop_artifact_write",
        route=f"POST {BASE}/artifacts",
        description="Write a blackboard slot as draft or proposed (the decision brief is the slot "
        "`decision-brief`); only the author's verdict ratifies a slot.",
        needs=LENS,
        run=loop_artifact_write,
        out=ArtifactOut,
        payload=ArtifactIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_review_record",
        route=f"POST {BASE}/reviews",
        description="File your lens's review at a gate (summary and findings); G2 waits for every required lens.",
        needs=LENS,
        run=loop_review_record,
        out=ReviewOut,
        payload=ReviewIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_rerun_done",
        route=f"POST {BASE}/reruns/{{rerun_id}}/done",
        description="Mark a re-run the cascade queued for your lens as done.",
        needs=LENS,
        run=loop_rerun_done,
        out=RerunOut,
        path=("book_id", "rerun_id"),
    ),
    # Reads.
    ToolSpec(
        name="loop_read",
        route=f"GET {BASE}",
        description="The loop: round, cost, gate, status and bounds, the pending option card, saturation, the "
        "queued re-runs and the roster of lenses.",
        needs=READ,
        run=loop_read,
        out=LoopOut,
        path=("book_id",),
        read_only=True,
    ),
    ToolSpec(
        name="loop_missing",
        route=f"GET {BASE}/missing",
        description="What the loop's current gate still needs (the rule the gate is refused by), each item in "
        "plain words with the gate's reason and the action that supplies it: the in-app task to run, the "
        "hand-off, or the author's page to act on.",
        needs=READ,
        run=loop_missing,
        out=MissingOut,
        path=("book_id",),
        read_only=True,
    ),
    ToolSpec(
        name="loop_nodes",
        route=f"GET {BASE}/nodes",
        description="The plan tree's nodes, paged.",
        needs=READ,
        run=loop_nodes,
        out=NodeOut,
        path=("book_id",),
        read_only=True,
        many=True,
    ),
    ToolSpec(
        name="loop_candidates",
        route=f"GET {BASE}/nodes/{{node_id}}/candidates",
        description="A plan node's divergence candidates, paged.",
        needs=READ,
        run=loop_candidates,
        out=CandidateOut,
        path=("book_id", "node_id"),
        read_only=True,
        many=True,
    ),
    ToolSpec(
        name="loop_questions",
        route=f"GET {BASE}/questions",
        description="The loop's open questions (and the answered ones), paged.",
        needs=READ,
        run=loop_questions,
        out=LoopQuestionOut,
        path=("book_id",),
        read_only=True,
        many=True,
    ),
    ToolSpec(
        name="loop_trace_nodes",
        route=f"GET {BASE}/trace/nodes",
        description="The traceability graph's nodes, paged.",
        needs=READ,
        run=loop_trace_nodes,
        out=TraceNodeOut,
        path=("book_id",),
        read_only=True,
        many=True,
    ),
    ToolSpec(
        name="loop_trace_edges",
        route=f"GET {BASE}/trace/edges",
        description="The traceability graph's edges (withdrawn ones included, marked inactive), paged.",
        needs=READ,
        run=loop_trace_edges,
        out=TraceEdgeOut,
        path=("book_id",),
        read_only=True,
        many=True,
    ),
    ToolSpec(
        name="loop_validation_plan",
        route=f"GET {BASE}/validation",
        description="The validation plan: assumption, kill condition, activity and status of each item, paged.",
        needs=READ,
        run=loop_validation_plan,
        out=ValidationItemOut,
        path=("book_id",),
        read_only=True,
        many=True,
    ),
    ToolSpec(
        name="loop_artifacts",
        route=f"GET {BASE}/artifacts",
        description="The blackboard's slots (the decision brief among them), paged.",
        needs=READ,
        run=loop_artifacts,
        out=ArtifactOut,
        path=("book_id",),
        read_only=True,
        many=True,
    ),
    ToolSpec(
        name="loop_reviews",
        route=f"GET {BASE}/reviews",
        description="The lenses' reviews at each gate, paged.",
        needs=READ,
        run=loop_reviews,
        out=ReviewOut,
        path=("book_id",),
        read_only=True,
        many=True,
    ),
    ToolSpec(
        name="loop_lint",
        route=f"GET {BASE}/lint",
        description="The traceability lint (strict: orphans and unreachable nodes fail, as at G2), with the "
        "first page of its findings.",
        needs=READ,
        run=loop_lint,
        out=LintOut,
        payload=LintParams,
        path=("book_id",),
        read_only=True,
    ),
)


# --- The rest of the loop's reads: each through the selector or service its GET route calls -----------


class SeedParams(Schema):
    """The cascade reads' query: the traceability node the cascade starts from."""

    node: str


class StaleParams(SeedParams):
    lens: str | None = None


class RerunFilter(Schema):
    status: RerunStatus | None = None


class ConstraintFilter(Schema):
    kind: Literal["constraint", "steer"] | None = None


def loop_rerun_artifacts(principal: Principal, args, _params):
    rerun = selectors.reruns_of(_book(principal, args)).filter(pk=args.rerun_id).first()
    if rerun is None:
        raise NotFound("re-run not found")
    return list(rerun.artifacts or [])


def loop_constraints(principal: Principal, args, filters: ConstraintFilter):
    recorded = list(selectors.loop_meta(_book(principal, args)).constraints or [])
    return [c for c in recorded if c.get("kind") == filters.kind] if filters.kind else recorded


def loop_reruns(principal: Principal, args, filters: RerunFilter):
    reruns = selectors.reruns_of(_book(principal, args))
    return reruns.filter(status=filters.status) if filters.status else reruns


_B = ("book_id",)

READS: tuple[ToolSpec, ...] = (
    read_tool(
        "loop_lint_findings",
        f"GET {BASE}/lint/findings",
        "Every finding of the traceability lint, paged, in the order loop_lint gives them.",
        lambda p, a, q: loop.trace_lint(_book(p, a), strict=q.strict).findings,
        dict,
        _B,
        READ,
        LintParams,
        many=True,
    ),
    read_tool(
        "loop_cascade_preview",
        f"GET {BASE}/cascade-preview",
        "Impact before blast: what invalidating a traceability node would touch. Changes nothing.",
        lambda p, a, q: selectors.impact_capped(a.book_id, loop.cascade_preview(book=_book(p, a), seed=q.node)),
        ImpactOut,
        _B,
        READ,
        SeedParams,
    ),
    read_tool(
        "loop_cascade_affected",
        f"GET {BASE}/cascade-preview/affected",
        "Every slot invalidating a traceability node would touch, paged.",
        lambda p, a, q: loop.cascade_preview(book=_book(p, a), seed=q.node)["affected"],
        dict,
        _B,
        READ,
        SeedParams,
        many=True,
    ),
    read_tool(
        "loop_cascade_stale",
        f"GET {BASE}/cascade-stale",
        "Every node a confirmed cascade from a node made stale (lens: those its re-run was queued for), paged.",
        lambda p, a, q: MappedRows(loop.cascade_stale(book=_book(p, a), seed=q.node, lens=q.lens), stale_node_row),
        dict,
        _B,
        READ,
        StaleParams,
        many=True,
    ),
    read_tool(
        "loop_cascade_stale_artifacts",
        f"GET {BASE}/cascade-stale/artifacts",
        "Every slot bound to a node the cascade from a node made stale, by slug, paged.",
        lambda p, a, q: loop.cascade_stale_artifacts(book=_book(p, a), seed=q.node),
        str,
        _B,
        READ,
        SeedParams,
        many=True,
    ),
    read_tool(
        "loop_reruns",
        f"GET {BASE}/reruns",
        "The loop's lens re-runs (queued, done), paged.",
        loop_reruns,
        RerunOut,
        _B,
        READ,
        RerunFilter,
        many=True,
    ),
    read_tool(
        "loop_rerun_artifacts",
        f"GET {BASE}/reruns/{{rerun_id}}/artifacts",
        "Every slot a re-run's lens re-runs, paged.",
        loop_rerun_artifacts,
        str,
        ("book_id", "rerun_id"),
        READ,
        many=True,
    ),
    read_tool(
        "loop_constraints",
        f"GET {BASE}/constraints",
        "Every constraint and steer the author recorded in the loop, oldest first, paged.",
        loop_constraints,
        dict,
        _B,
        READ,
        ConstraintFilter,
        many=True,
    ),
    read_tool(
        "loop_cards",
        f"GET {BASE}/cards",
        "The loop's option cards (what was put to the author at each gate), paged.",
        lambda p, a, _q: selectors.cards_of(_book(p, a)),
        CardOut,
        _B,
        READ,
        many=True,
    ),
)


def register() -> None:
    path_parameter("gate", Gate, "The gate asked for: G0, G1, G1.5, G2 or G3 (the loop's current gate).")
    register_tools(*TOOLS, *READS)
