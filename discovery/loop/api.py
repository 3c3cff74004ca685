"""Loop routes under /books/{book_id}/loop. Thin: authenticate, validate, call a service.

Sol (discovery:write) writes loop state; Terra and Luna (scratchpad:write /
charter:propose) write proposed slots, candidates, questions, trace nodes and
reviews; only the author gives verdicts (``approval_decide``).
"""

import uuid
from typing import Literal

from django.http import HttpRequest, HttpResponse
from ninja import File, Router, UploadedFile
from ninja.pagination import paginate
from ninja.responses import Status

from approvals.models import Gate
from approvals.services import approval_decide
from discovery.access import BookAccess, Cap, book_access
from discovery.selectors import MappedRows
from novelgraph.core.auth import principal_of
from novelgraph.core.errors import Conflict, Invalid, NotFound
from novelgraph.core.schemas import ERRORS

from . import selectors
from . import services as loop
from .models import RerunStatus
from .requirements import gate_missing
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
    ImportOut,
    LintOut,
    LoopOut,
    LoopVerdictIn,
    LoopVerdictOut,
    MetaOut,
    MissingOut,
    NodeIn,
    NodeOut,
    NodePatch,
    QuestionIn,
    QuestionOut,
    QuestionResolveIn,
    ReopenImpactOut,
    ReopenIn,
    ReopenOut,
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
from .services import discovery_reopen
from .services.base import card_renew_after_lapse
from .services.cards import card_impact
from .services.cascade import stale_node_row
from .services.transfer import loop_export, loop_import

router = Router(tags=["loop"])
BASE = "/books/{book_id}/loop"


def _access(request: HttpRequest, book_id: uuid.UUID) -> BookAccess:
    return book_access(principal_of(request), book_id)


def _book(request: HttpRequest, book_id: uuid.UUID):
    return loop.base.started_book(_access(request, book_id))


def _next(book_id, route: str, more: bool, **query) -> str | None:
    """The link to the rest of a capped list: its paged route, from the second page."""
    if not more:
        return None
    return selectors.loop_link(book_id, route, **query)


def _view(book) -> dict:
    view = selectors.loop_view(book)
    view["next"] = {"queued_reruns": _next(book.pk, "reruns", view["more"]["queued_reruns"], status="queued")}
    return view


@router.get(BASE, response={200: LoopOut, **ERRORS})
def loop_get(request: HttpRequest, book_id: uuid.UUID):
    """The loop: meta (round, cost, gate, status, bounds), the pending option card, saturation, roster."""
    return _view(_book(request, book_id))


@router.get(f"{BASE}/missing", response={200: MissingOut, **ERRORS})
def loop_missing(request: HttpRequest, book_id: uuid.UUID):
    """What the loop's current gate still needs, each item in plain words with the gate's own reason and the
    action that supplies it (the in-app run to queue, the hand-off, or the page to act on). The same rule the
    gate is refused by; the book and loop pages show this list. Before the discovery starts: started false."""
    return gate_missing(loop.base.reader_book(_access(request, book_id)))


# --- Reopening discovery after hand-off ---------------------------------------


@router.get(
    "/books/{book_id}/reopen",
    response={200: ReopenImpactOut, **ERRORS},
    summary="What reopening the handed-off discovery at a gate touches (the author; changes nothing)",
)
def reopen_impact(request: HttpRequest, book_id: uuid.UUID, gate: Gate):
    """Impact before blast: the gates passed again, the ratified slots, the charter and thrust, the chapters (kept
    with their text) and the cascade preview downstream. 409 ``not_handed_off`` before the hand-off."""
    access = _access(request, book_id)
    discovery_reopen.reopen_allowed(access)
    return discovery_reopen.discovery_reopen_impact(book=access.book, gate=gate)


@router.post(
    "/books/{book_id}/reopen",
    response={200: ReopenOut, **ERRORS},
    summary="Reopen the handed-off discovery at a gate (the author, with a rationale)",
)
def reopen(request: HttpRequest, book_id: uuid.UUID, payload: ReopenIn):
    """Without ``confirm: true`` the answer is a 409 ``reopens_discovery`` whose ``impact`` says what it touches;
    with it the loop goes back to the gate and the agents work again. Nothing is deleted; the next hand-off goes
    through G3 and updates the chapters from the new brief's plan, their text kept."""
    return discovery_reopen.discovery_reopen(
        access=_access(request, book_id), gate=payload.gate, rationale=payload.rationale, confirm=payload.confirm
    )


# --- Plan-tree ---------------------------------------------------------------


@router.get(f"{BASE}/nodes", response={200: list[NodeOut], **ERRORS})
@paginate
def nodes_list(request: HttpRequest, book_id: uuid.UUID):
    return selectors.nodes_of(_book(request, book_id))


@router.post(f"{BASE}/nodes", response={201: NodeOut, **ERRORS})
def nodes_create(request: HttpRequest, book_id: uuid.UUID, payload: NodeIn):
    node = loop.plan_node_add(access=_access(request, book_id), payload=payload)
    return Status(201, node)


@router.patch(f"{BASE}/nodes/{{node_id}}", response={200: NodeOut, **ERRORS})
def nodes_update(request: HttpRequest, book_id: uuid.UUID, node_id: uuid.UUID, payload: NodePatch):
    return loop.plan_node_update(access=_access(request, book_id), node_id=node_id, payload=payload)


@router.get(f"{BASE}/nodes/{{node_id}}/candidates", response={200: list[CandidateOut], **ERRORS})
@paginate
def candidates_list(request: HttpRequest, book_id: uuid.UUID, node_id: uuid.UUID):
    book = _book(request, book_id)
    node = selectors.nodes_of(book).filter(pk=node_id).first()
    if node is None:
        raise NotFound("plan node not found")
    return selectors.candidates_of(node)


@router.post(f"{BASE}/nodes/{{node_id}}/candidates", response={201: CandidateOut, **ERRORS})
def candidates_create(request: HttpRequest, book_id: uuid.UUID, node_id: uuid.UUID, payload: CandidateIn):
    candidate = loop.candidate_add(access=_access(request, book_id), node_id=node_id, payload=payload)
    return Status(201, candidate)


@router.post(f"{BASE}/nodes/{{node_id}}/select", response={200: SelectOut, **ERRORS})
def candidates_select(request: HttpRequest, book_id: uuid.UUID, node_id: uuid.UUID, payload: SelectIn):
    """Select a candidate; the others are rejected and kept with their rationale. A one-way door asks the author."""
    return loop.candidate_select(access=_access(request, book_id), node_id=node_id, payload=payload)


# --- Open questions ----------------------------------------------------------------


@router.get(f"{BASE}/questions", response={200: list[QuestionOut], **ERRORS})
@paginate
def questions_list(request: HttpRequest, book_id: uuid.UUID, status: str | None = None):
    return selectors.questions_of(_book(request, book_id), status)


@router.post(f"{BASE}/questions", response={201: QuestionOut, **ERRORS})
def questions_raise(request: HttpRequest, book_id: uuid.UUID, payload: QuestionIn):
    return Status(201, loop.question_raise(access=_access(request, book_id), payload=payload))


@router.post(f"{BASE}/questions/{{question_id}}/route", response={200: QuestionOut, **ERRORS})
def questions_route(request: HttpRequest, book_id: uuid.UUID, question_id: uuid.UUID, payload: RouteIn):
    return loop.question_route(access=_access(request, book_id), question_id=question_id, payload=payload)


@router.post(f"{BASE}/questions/{{question_id}}/resolve", response={200: QuestionOut, **ERRORS})
def questions_resolve(request: HttpRequest, book_id: uuid.UUID, question_id: uuid.UUID, payload: QuestionResolveIn):
    return loop.question_resolve(access=_access(request, book_id), question_id=question_id, payload=payload)


@router.post(f"{BASE}/questions/{{question_id}}/surface", response={200: QuestionOut, **ERRORS})
def questions_surface(request: HttpRequest, book_id: uuid.UUID, question_id: uuid.UUID):
    return loop.question_surface(access=_access(request, book_id), question_id=question_id)


# --- Traceability -------------------------------------------------------------------


@router.get(f"{BASE}/trace/nodes", response={200: list[TraceNodeOut], **ERRORS})
@paginate
def trace_nodes_list(request: HttpRequest, book_id: uuid.UUID):
    return selectors.trace_nodes_of(_book(request, book_id))


@router.post(f"{BASE}/trace/nodes", response={201: TraceNodeOut, **ERRORS})
def trace_nodes_create(request: HttpRequest, book_id: uuid.UUID, payload: TraceNodeIn):
    """A traceability node, signed by the caller: ``produced_by`` names one of its own names (its role or a lens
    the roster names for it), another's is a 403 naming the field."""
    return Status(201, loop.trace_node_add(access=_access(request, book_id), payload=payload))


@router.get(f"{BASE}/trace/edges", response={200: list[TraceEdgeOut], **ERRORS})
@paginate
def trace_edges_list(request: HttpRequest, book_id: uuid.UUID, active: bool | None = None):
    return selectors.trace_edges_of(_book(request, book_id), active)


@router.post(f"{BASE}/trace/edges", response={201: TraceEdgeOut, **ERRORS})
def trace_edges_create(request: HttpRequest, book_id: uuid.UUID, payload: TraceEdgeIn):
    return Status(201, loop.trace_edge_add(access=_access(request, book_id), payload=payload))


@router.post(f"{BASE}/trace/nodes/{{trace_node}}/withdraw", response={200: TraceNodeOut, **ERRORS})
def trace_node_withdraw(request: HttpRequest, book_id: uuid.UUID, trace_node: str, payload: WithdrawIn):
    """A lens withdraws its own unratified traceability node (its edges leave the graph); 403 for another
    lens's node, 409 for a ratified one (the cascade and the author remove those)."""
    return loop.trace_node_withdraw(access=_access(request, book_id), node_id=trace_node, payload=payload)


@router.post(f"{BASE}/trace/edges/withdraw", response={200: TraceEdgeOut, **ERRORS})
def trace_edge_withdraw(request: HttpRequest, book_id: uuid.UUID, payload: TraceEdgeWithdrawIn):
    """A lens withdraws an edge from its own node that touches nothing ratified (403 / 409 otherwise)."""
    return loop.trace_edge_withdraw(access=_access(request, book_id), payload=payload)


# --- The validation plan ----------------------------------------------------------------


@router.get(f"{BASE}/validation", response={200: list[ValidationItemOut], **ERRORS})
@paginate
def validation_list(request: HttpRequest, book_id: uuid.UUID):
    """The validation plan: assumption, kill condition, real-world activity and status of each item."""
    return selectors.validation_plan_of(_book(request, book_id))


@router.post(f"{BASE}/validation", response={201: ValidationItemOut, **ERRORS})
def validation_add(request: HttpRequest, book_id: uuid.UUID, payload: ValidationItemIn):
    return Status(201, loop.validation_item_add(access=_access(request, book_id), payload=payload))


@router.post(f"{BASE}/validation/{{item_id}}/status", response={200: ValidationItemOut, **ERRORS})
def validation_status(request: HttpRequest, book_id: uuid.UUID, item_id: uuid.UUID, payload: ValidationStatusIn):
    """Validation status moves only forward: hypothesis -> validating -> validated | refuted (422 otherwise)."""
    return loop.validation_item_status(access=_access(request, book_id), item_id=item_id, payload=payload)


@router.post(f"{BASE}/trace/settings", response={200: MetaOut, **ERRORS})
def trace_settings(request: HttpRequest, book_id: uuid.UUID, payload: TraceSettingsIn):
    return loop.trace_settings(access=_access(request, book_id), payload=payload)


@router.get(f"{BASE}/lint", response={200: LintOut, **ERRORS})
def lint_get(request: HttpRequest, book_id: uuid.UUID, strict: bool = False):
    """The traceability lint; ``strict=true`` makes orphans and unreachable nodes failures (as G2 does).
    ``findings`` is the first page (``counts`` counts them all); ``next.findings`` pages the rest."""
    return selectors.lint_capped(_book(request, book_id), strict=strict)


@router.get(f"{BASE}/lint/findings", response={200: list[dict], **ERRORS})
@paginate
def lint_findings(request: HttpRequest, book_id: uuid.UUID, strict: bool = False):
    """Every finding of the traceability lint, paged, in the order ``GET lint`` gives them."""
    return loop.trace_lint(_book(request, book_id), strict=strict).findings


@router.get(f"{BASE}/cascade-preview", response={200: ImpactOut, **ERRORS})
def cascade_preview(request: HttpRequest, book_id: uuid.UUID, node: str):
    """Impact before blast: what invalidating ``node`` would touch. Changes nothing. ``affected`` is the first
    page (``affected_count`` counts them all); ``next.affected`` pages the rest. ``lenses`` is bounded by the
    fixed roster."""
    return selectors.impact_capped(book_id, loop.cascade_preview(book=_book(request, book_id), seed=node))


@router.get(f"{BASE}/cascade-preview/affected", response={200: list[dict], **ERRORS})
@paginate
def cascade_affected(request: HttpRequest, book_id: uuid.UUID, node: str):
    """Every slot invalidating ``node`` would touch, paged, in the order ``GET cascade-preview`` gives them."""
    return loop.cascade_preview(book=_book(request, book_id), seed=node)["affected"]


@router.get(f"{BASE}/cascade-stale", response={200: list[dict], **ERRORS})
@paginate
def cascade_stale(request: HttpRequest, book_id: uuid.UUID, node: str, lens: str | None = None):
    """Every node a confirmed cascade from ``node`` made stale (``lens``: those its re-run was queued for), paged,
    by node id: the rest of the lists its decision-log row names (``stale``, a re-run's ``slots``)."""
    return MappedRows(loop.cascade_stale(book=_book(request, book_id), seed=node, lens=lens), stale_node_row)


@router.get(f"{BASE}/cascade-stale/artifacts", response={200: list[str], **ERRORS})
@paginate
def cascade_stale_artifacts(request: HttpRequest, book_id: uuid.UUID, node: str):
    """Every slot bound to a node the cascade from ``node`` made stale, paged, by slug: the rest of the row's
    ``stale_artifacts``."""
    return loop.cascade_stale_artifacts(book=_book(request, book_id), seed=node)


# --- Blackboard, reviews, rounds and cost ---------------------------------------------


@router.get(f"{BASE}/artifacts", response={200: list[ArtifactOut], **ERRORS})
@paginate
def artifacts_list(request: HttpRequest, book_id: uuid.UUID):
    return selectors.artifacts_of(_book(request, book_id))


@router.post(f"{BASE}/artifacts", response={201: ArtifactOut, **ERRORS})
def artifacts_write(request: HttpRequest, book_id: uuid.UUID, payload: ArtifactIn):
    """Write a slot (draft or proposed). Writing ``ratified`` is refused with 403: only a verdict ratifies."""
    return Status(201, loop.artifact_write(access=_access(request, book_id), payload=payload))


@router.get(f"{BASE}/reviews", response={200: list[ReviewOut], **ERRORS})
@paginate
def reviews_list(request: HttpRequest, book_id: uuid.UUID):
    return selectors.reviews_of(_book(request, book_id))


@router.post(f"{BASE}/reviews", response={201: ReviewOut, **ERRORS})
def reviews_create(request: HttpRequest, book_id: uuid.UUID, payload: ReviewIn):
    return Status(201, loop.lens_review_record(access=_access(request, book_id), payload=payload))


@router.get(f"{BASE}/reruns", response={200: list[RerunOut], **ERRORS})
@paginate
def reruns_list(request: HttpRequest, book_id: uuid.UUID, status: RerunStatus | None = None):
    reruns = selectors.reruns_of(_book(request, book_id))
    return reruns.filter(status=status) if status else reruns


@router.get(f"{BASE}/reruns/{{rerun_id}}/artifacts", response={200: list[str], **ERRORS})
@paginate
def rerun_artifacts(request: HttpRequest, book_id: uuid.UUID, rerun_id: uuid.UUID):
    """Every slot a re-run's lens re-runs, paged, in the order the re-run holds them."""
    rerun = selectors.reruns_of(_book(request, book_id)).filter(pk=rerun_id).first()
    if rerun is None:
        raise NotFound("re-run not found")
    return list(rerun.artifacts or [])


@router.get(f"{BASE}/constraints", response={200: list[dict], **ERRORS})
@paginate
def constraints_list(request: HttpRequest, book_id: uuid.UUID, kind: Literal["constraint", "steer"] | None = None):
    """Every constraint and steer the author recorded in the loop (approve-with-constraint, redirect), oldest
    first, paged: the rest of ``meta.constraints`` (``kind=constraint``: the rest of the scope boundary's)."""
    recorded = list(selectors.loop_meta(_book(request, book_id)).constraints or [])
    return [c for c in recorded if c.get("kind") == kind] if kind else recorded


@router.post(f"{BASE}/reruns/{{rerun_id}}/done", response={200: RerunOut, **ERRORS})
def reruns_done(request: HttpRequest, book_id: uuid.UUID, rerun_id: uuid.UUID):
    return loop.rerun_done(access=_access(request, book_id), rerun_id=rerun_id)


@router.post(f"{BASE}/rounds", response={200: MetaOut, **ERRORS})
def rounds_advance(request: HttpRequest, book_id: uuid.UUID, payload: RoundIn):
    """Close a round (the book's, or a node's). Reaching a cap pauses or stalls the loop."""
    return loop.round_advance(access=_access(request, book_id), node_id=payload.node_id)


@router.post(f"{BASE}/cost", response={200: MetaOut, **ERRORS})
def cost_spend(request: HttpRequest, book_id: uuid.UUID, payload: CostIn):
    return loop.cost_spend(access=_access(request, book_id), payload=payload)


# --- Gates and verdicts ------------------------------------------------------------------


@router.get(f"{BASE}/cards", response={200: list[CardOut], **ERRORS})
@paginate
def cards_list(request: HttpRequest, book_id: uuid.UUID):
    return selectors.cards_of(_book(request, book_id))


@router.post(f"{BASE}/gates/{{gate}}/request", response={200: GateOut, 201: GateOut, **ERRORS})
def gate_request(request: HttpRequest, book_id: uuid.UUID, gate: Gate, payload: GateIn):
    """The controller asks for the current gate: 201 with the option card when the author must decide,
    200 when it passed automatically (G1 without a risk trigger; G3 hands off). Another gate: 409."""
    result = loop.gate_request(access=_access(request, book_id), gate=gate, payload=payload)
    return Status(201 if result["outcome"] == "awaiting-human" else 200, result)


@router.post(f"{BASE}/approvals/{{approval_id}}/verdict", response={200: LoopVerdictOut, **ERRORS})
def verdict(request: HttpRequest, book_id: uuid.UUID, approval_id: uuid.UUID, payload: LoopVerdictIn):
    """The author's verdict on an option card (a convenience over /approvals/{id}/verdict): one log row."""
    access = book_access(principal_of(request), book_id, Cap.DISCOVERY_READ)
    book = access.book
    try:
        entry = approval_decide(
            access=access,
            approval_id=approval_id,
            verdict=payload.verdict,
            rationale=payload.rationale,
            constraint=payload.constraint,
            thrust_id=payload.thrust_id,
            not_chosen=payload.not_chosen,
            expected_kind="gate",
        )
    except Conflict as lapsed:
        if lapsed.code != "superseded":
            raise
        # What the author was shown (the card, its slots, its impact preview) changed: the approval lapsed.
        # The card is put before her again with the impact as it is now; she decides on that one.
        card = card_renew_after_lapse(book=book)
        raise Conflict(
            lapsed.message + "; a new option card shows the impact as it is now",
            code="superseded",
            approval_id=str(card.approval_id) if card and card.approval_id else None,
            impact=card_impact(card) if card else None,
        ) from None
    return {
        "sequence": entry.sequence,
        "decision": entry.decision,
        "gate": entry.gate,
        "ratified_by": entry.ratified_by,
        "detail": entry.detail,
        "meta": selectors.loop_meta(book),
    }


# --- Export and import --------------------------------------------------------------------


@router.get(f"{BASE}/export", response={200: None, **ERRORS})
def export(request: HttpRequest, book_id: uuid.UUID):
    """A zip: ``<book-slug>/_state/{blackboard,open-questions,traceability,decision-log,meta,plan-tree}.json``
    plus the committed artifacts beside it."""
    book = _book(request, book_id)
    data = loop_export(book=book)
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{book.slug}-loop.zip"'
    return response


@router.post(f"{BASE}/import", response={200: ImportOut, **ERRORS})
def import_(request: HttpRequest, book_id: uuid.UUID, file: File[UploadedFile]):
    """The author imports an export zip into a loop that has not started (409 otherwise; agents 403). It lands
    as proposed material; gate and status are re-derived; the import is one decision-log row. An unknown
    schema_version is reported and skipped."""
    if file.size and file.size > 20 * 1024 * 1024:
        raise Invalid("the file is larger than 20 MB", field="file")
    return loop_import(access=_access(request, book_id), data=file.read())
