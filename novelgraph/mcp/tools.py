"""The MCP tools: one row per action an agent role may take, each a thin call into the service its
REST route calls.

A tool is listed for a key when the key's role holds at least one of the capabilities the tool
``needs`` (the same any-of rule as ``BookAccess.require``), so a role's tool list is read off its
capabilities. A tool's arguments are its REST route's path parameters plus the route's input
schema, validated by that same schema, so limits and error messages are the REST API's. Access is
resolved exactly as the route resolves it (``book_access`` from the book, or from the object's
book with ``missing=``), and the service enforces every rule: calling a tool the role was not
offered is refused by the service, as the REST route refuses it.

No tool decides. Verdicts, charter resolution, canon promotion and research admission are the
author's, in the browser or with her personal key; they have no row here.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ninja import Schema
from pydantic import BaseModel, Field, create_model

from approvals.models import Gate
from discovery import services
from discovery.access import Cap, book_access, capabilities_of
from discovery.loop import services as loop
from discovery.loop.schemas import (
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
from discovery.loop.schemas import QuestionOut as LoopQuestionOut
from discovery.schemas import (
    ApprovalRefOut,
    CharterCreatedOut,
    CharterIn,
    ClaimIn,
    ClaimOut,
    DossierOut,
    EntryIn,
    EntryOut,
    HandoffIn,
    HandoffOut,
    HandoffResultIn,
    QuestionSetIn,
    RequestApprovalIn,
    SessionQuestionOut,
    ThrustIn,
    ThrustOut,
    handoff_out,
)
from discovery.selectors import handoff_get, session_get
from library import services as library
from library.schemas import SearchOut, SearchParams
from novelgraph.core.auth import Principal

# --- Arguments: the route's path parameters plus its input schema -------------------------------

PATH_PARAMETERS: dict[str, tuple[type, str]] = {
    "book_id": (uuid.UUID, "The book's id (the `book.id` of your dossier)."),
    "session_id": (uuid.UUID, "The discovery session's id (the `session_id` of your dossier)."),
    "handoff_id": (uuid.UUID, "The handoff's id (see the open-handoffs resource)."),
    "claim_id": (uuid.UUID, "The proposed claim's id."),
    "node_id": (uuid.UUID, "The plan node's id."),
    "question_id": (uuid.UUID, "The open question's id."),
    "gate": (Gate, "The gate asked for: G0, G1, G1.5, G2 or G3 (the loop's current gate)."),
}


def arguments_of(name: str, payload: type[BaseModel] | None, *path: str) -> type[BaseModel]:
    """The tool's argument model: ``payload`` (the REST input schema, validators and limits
    included) with the route's path parameters added as required fields."""
    fields: dict[str, Any] = {}
    for parameter in path:
        kind, description = PATH_PARAMETERS[parameter]
        fields[parameter] = (kind, Field(description=description))
    title = "".join(part.title() for part in name.split("_")) + "Arguments"
    return create_model(title, __base__=payload or Schema, **fields)


Run = Callable[[Principal, Any, Any], Any]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what it needs, what it takes (the REST input schema), what it calls, what it answers."""

    name: str
    route: str  # the REST route it mirrors, for the reader and the twin matrix
    description: str
    needs: tuple[Cap, ...]  # listed for a role holding any of these
    run: Run  # (principal, arguments, payload) -> the service's result
    out: type[Schema]
    payload: type[BaseModel] | None = None
    path: tuple[str, ...] = ()
    read_only: bool = False

    @cached_property
    def arguments(self) -> type[BaseModel]:
        return arguments_of(self.name, self.payload, *self.path)

    @cached_property
    def input_schema(self) -> dict:
        return self.arguments.model_json_schema()

    @cached_property
    def output_schema(self) -> dict:
        return self.out.model_json_schema()

    def offered_to(self, role: str | None) -> bool:
        caps = capabilities_of(role)
        return any(cap in caps for cap in self.needs)


# --- The calls: each resolves access as its REST route does, then calls the same service ---------


def _session(principal: Principal, args):
    session = session_get(args.session_id)
    return book_access(principal, session.book, missing="session"), session


def dossier_take(principal: Principal, args, _payload):
    # The route's body names the role; an agent takes only its own, so the key names it here.
    access = book_access(principal, args.book_id)
    return services.dossier_create(access=access, agent_role=principal.key_role)


def library_search(principal: Principal, _args, params: SearchParams):
    result = library.library_search(
        principal=principal,
        query=params.q,
        limit=params.limit,
        applicability=params.applicability or None,
        topic=params.topic or None,
    )
    return result.as_dict()


def scratchpad_append(principal: Principal, args, payload: EntryIn):
    access, session = _session(principal, args)
    return services.scratchpad_append(access=access, session=session, payload=payload)


def handoff_return(principal: Principal, args, payload: HandoffResultIn):
    handoff = handoff_get(args.handoff_id)
    access = book_access(principal, handoff.book, Cap.DISCOVERY_READ, missing="handoff")
    return handoff_out(services.handoff_return(access=access, handoff=handoff, payload=payload))


def thrust_propose(principal: Principal, args, payload: ThrustIn):
    access, session = _session(principal, args)
    return services.thrust_propose(access=access, session=session, payload=payload)


def charter_propose(principal: Principal, args, payload: CharterIn):
    return services.charter_propose(access=book_access(principal, args.book_id), payload=payload)


def claim_propose(principal: Principal, _args, payload: ClaimIn):
    access, base = services.claim_target(principal, payload.scope, payload.scope_id)
    return services.claim_propose(access=access, base=base, payload=payload)


def claim_request_approval(principal: Principal, args, payload: RequestApprovalIn):
    access = book_access(principal, payload.book_id)
    approval = services.claim_request_approval(access=access, claim_id=args.claim_id, note=payload.note)
    return {"approval_id": approval.pk, "claim_id": args.claim_id, "status": approval.status}


def question_set(principal: Principal, args, payload: QuestionSetIn):
    access, session = _session(principal, args)
    return services.question_set(access=access, session=session, payload=payload)


def handoff_create(principal: Principal, args, payload: HandoffIn):
    return handoff_out(services.handoff_create(access=book_access(principal, args.book_id), payload=payload))


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


# --- The table -------------------------------------------------------------------------------------

_SCRATCHPAD = (Cap.SCRATCHPAD_WRITE, Cap.DISCOVERY_WRITE)
_CONTROLLER = (Cap.DISCOVERY_WRITE,)

TOOLS: tuple[ToolSpec, ...] = (
    # Every agent role: its own dossier, the library, the scratchpad, the handoffs addressed to it.
    ToolSpec(
        name="dossier_take",
        route="POST /books/{book_id}/dossiers",
        description="Take a fresh, immutable snapshot of what your role is given on a book now: the approved "
        "charter, the knowledge bases and approved claims you may read, the scratchpad, the working "
        "observations and your capabilities; what your role may not read is listed under `withheld`.",
        needs=(Cap.BOOK_READ,),
        run=dossier_take,
        out=DossierOut,
        path=("book_id",),
    ),
    ToolSpec(
        name="library_search",
        route="GET /library/search",
        description="Search the curated literary library. Every word must appear; results are cited chunks "
        "(read one whole with the novelgraph://chunks/{chunk_id} resource).",
        needs=(Cap.LITERARY_READ,),
        run=library_search,
        out=SearchOut,
        payload=SearchParams,
        read_only=True,
    ),
    ToolSpec(
        name="scratchpad_append",
        route="POST /sessions/{session_id}/scratchpad",
        description="Append one provisional entry (observation, hypothesis, question, contradiction, alternative "
        "or digest) to a session's append-only scratchpad. Source references must be things of the book "
        "your role may read; a digest cites at least one earlier entry.",
        needs=_SCRATCHPAD,
        run=scratchpad_append,
        out=EntryOut,
        payload=EntryIn,
        path=("session_id",),
    ),
    ToolSpec(
        name="handoff_return",
        route="POST /handoffs/{handoff_id}/result",
        description="Return the result of a handoff addressed to your role, once: facts, inferences, options "
        "and questions, each of which becomes a scratchpad entry linked to the handoff.",
        needs=(Cap.SCRATCHPAD_WRITE,),
        run=handoff_return,
        out=HandoffOut,
        payload=HandoffResultIn,
        path=("handoff_id",),
    ),
    # Proposing (Terra, Sol): nothing proposed is binding until the author decides.
    ToolSpec(
        name="thrust_propose",
        route="POST /sessions/{session_id}/thrusts",
        description="Propose a story-thrust candidate for a discovery session (stored as proposed).",
        needs=(Cap.CHARTER_PROPOSE, Cap.DISCOVERY_WRITE),
        run=thrust_propose,
        out=ThrustOut,
        payload=ThrustIn,
        path=("session_id",),
    ),
    ToolSpec(
        name="charter_propose",
        route="POST /books/{book_id}/charters",
        description="Propose the next Story Charter version of a book; it opens a pending approval that only "
        "the author decides.",
        needs=(Cap.CHARTER_PROPOSE,),
        run=charter_propose,
        out=CharterCreatedOut,
        payload=CharterIn,
        path=("book_id",),
    ),
    # Sol, the coordinator.
    ToolSpec(
        name="claim_propose",
        route="POST /claims",
        description="Propose a knowledge claim for a book, its series or a session's run notes; it always "
        "enters as proposed.",
        needs=(Cap.CANON_PROPOSE,),
        run=claim_propose,
        out=ClaimOut,
        payload=ClaimIn,
    ),
    ToolSpec(
        name="claim_request_approval",
        route="POST /claims/{claim_id}/request-approval",
        description="Ask the author to promote a proposed claim to canon (a pending canon-promotion approval).",
        needs=(Cap.APPROVAL_REQUEST,),
        run=claim_request_approval,
        out=ApprovalRefOut,
        payload=RequestApprovalIn,
        path=("claim_id",),
    ),
    ToolSpec(
        name="question_set",
        route="POST /sessions/{session_id}/question",
        description="Put the next question to the author, citing the turn, entry or observation that prompted "
        "it; it becomes the session's current question and the earlier ones stay in its history.",
        needs=_CONTROLLER,
        run=question_set,
        out=SessionQuestionOut,
        payload=QuestionSetIn,
        path=("session_id",),
    ),
    ToolSpec(
        name="handoff_create",
        route="POST /books/{book_id}/handoffs",
        description="Hand a bounded task to Terra or Luna: the decision it informs, the sources it may use and "
        "the status of each statement; a dossier snapshot for the target role is taken with it.",
        needs=_CONTROLLER,
        run=handoff_create,
        out=HandoffOut,
        payload=HandoffIn,
        path=("book_id",),
    ),
    # The loop controller's actions (Sol).
    ToolSpec(
        name="loop_gate_request",
        route="POST /books/{book_id}/loop/gates/{gate}/request",
        description="Ask for the loop's current gate: an option card waits for the author's verdict, or the "
        "gate passes on its own (G1 without a risk trigger).",
        needs=_CONTROLLER,
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
        needs=_CONTROLLER,
        run=loop_round_advance,
        out=MetaOut,
        payload=RoundIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_cost_spend",
        route="POST /books/{book_id}/loop/cost",
        description="Record cost spent against the loop's budget; a bound reached pauses and asks the author.",
        needs=_CONTROLLER,
        run=loop_cost_spend,
        out=MetaOut,
        payload=CostIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="loop_node_add",
        route="POST /books/{book_id}/loop/nodes",
        description="Add a plan-tree node under a parent node (draft, hypothesis).",
        needs=_CONTROLLER,
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
        needs=_CONTROLLER,
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
        needs=_CONTROLLER,
        run=loop_candidate_select,
        out=SelectOut,
        payload=SelectIn,
        path=("book_id", "node_id"),
    ),
    ToolSpec(
        name="loop_question_route",
        route="POST /books/{book_id}/loop/questions/{question_id}/route",
        description="Route an open question to the discipline (lens or role) that should answer it.",
        needs=_CONTROLLER,
        run=loop_question_route,
        out=LoopQuestionOut,
        payload=RouteIn,
        path=("book_id", "question_id"),
    ),
    ToolSpec(
        name="loop_question_surface",
        route="POST /books/{book_id}/loop/questions/{question_id}/surface",
        description="Surface an open question to the author.",
        needs=_CONTROLLER,
        run=loop_question_surface,
        out=LoopQuestionOut,
        path=("book_id", "question_id"),
    ),
    ToolSpec(
        name="loop_trace_settings",
        route="POST /books/{book_id}/loop/trace/settings",
        description="Set the traceability graph's root node and the kind of its leaves (what the lint checks).",
        needs=_CONTROLLER,
        run=loop_trace_settings,
        out=MetaOut,
        payload=TraceSettingsIn,
        path=("book_id",),
    ),
)

TOOLS_BY_NAME: dict[str, ToolSpec] = {tool.name: tool for tool in TOOLS}
assert len(TOOLS_BY_NAME) == len(TOOLS), "tool names are unique"
assert all(re.fullmatch(r"[a-z_]+", tool.name) for tool in TOOLS)
assert all(Cap.DECIDE not in tool.needs for tool in TOOLS), "no tool decides"


def tools_for(role: str | None) -> list[ToolSpec]:
    """The tools a key of ``role`` is offered: those whose needs its capabilities meet."""
    return [tool for tool in TOOLS if tool.offered_to(role)]
