"""The loop controller's duties for agents through MCP (Sol's): gates, rounds, cost, the plan tree,
questions and the traceability settings, each a thin call into the service its REST route calls.

Registered from ``LoopConfig.ready()`` into the kernel's registry (``novelgraph.core.duties``). No
tool decides: the author's verdict on a gate has no tool.
"""

from __future__ import annotations

from approvals.models import Gate
from discovery.access import book_access
from novelgraph.core.auth import Principal
from novelgraph.core.duties import CONTROLLER, ToolSpec, path_parameter, register_tools

from . import services as loop
from .schemas import (
    CostIn,
    GateIn,
    GateOut,
    MetaOut,
    NodeIn,
    NodeOut,
    NodePatch,
    RoundIn,
    RouteIn,
    SelectIn,
    SelectOut,
    TraceSettingsIn,
)
from .schemas import QuestionOut as LoopQuestionOut


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
    ),
)


def register() -> None:
    path_parameter("gate", Gate, "The gate asked for: G0, G1, G1.5, G2 or G3 (the loop's current gate).")
    register_tools(*TOOLS)
