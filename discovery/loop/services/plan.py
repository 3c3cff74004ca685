"""The plan-tree: nodes (intent, altitude, lifecycle, validation hook), candidates
(not-chosen kept with their rationale), selection and the validation plan.

Depth and breadth are bounds: a node that would exceed them is not created; the
loop pauses at the bound with an option card (409 ``paused_at_bound``).
Lifecycle writes are limited to draft/diverging/converging: ``ratified``,
``stale``, ``parked`` and ``abandoned`` come only from verdicts and the cascade.
A one-way-door selection forces a consent gate.
"""

from __future__ import annotations

from django.db import transaction

from approvals.models import Reversibility
from discovery.access import BookAccess, Cap, refusal
from novelgraph.core.errors import Conflict, Invalid, NotFound

from ..models import (
    Candidate,
    CandidateStatus,
    Lifecycle,
    PlanNode,
    RosterEntry,
    RosterKind,
    ValidationPlanItem,
    ValidationStatus,
)
from ..schemas import CandidateIn, NodeIn, NodePatch, SelectIn, ValidationItemIn, ValidationStatusIn
from .base import CONTROLLER_ROLES, controller_book, lens_book, lock_meta, refresh, refuse_when_paused
from .bounds import pause_at_bound
from .cards import raise_card

WRITABLE_LIFECYCLE = {Lifecycle.DRAFT, Lifecycle.DIVERGING, Lifecycle.CONVERGING}


def _node(book, node_id, lock: bool = False) -> PlanNode:
    qs = PlanNode.objects.filter(book=book, pk=node_id)
    node = (qs.select_for_update() if lock else qs).first()
    if node is None:
        raise NotFound("plan node not found")
    return node


def plan_node_add(*, access: BookAccess, payload: NodeIn) -> PlanNode:
    book, role = controller_book(access)
    hit = None
    with transaction.atomic():
        meta = lock_meta(book)
        refuse_when_paused(meta)
        parent = _node(book, payload.parent_id)
        if parent.lifecycle in {Lifecycle.ABANDONED, Lifecycle.STALE}:
            raise Conflict(f"the parent node is {parent.lifecycle}", code="parent_closed")
        depth = parent.depth + 1
        siblings = PlanNode.objects.filter(parent=parent).exclude(lifecycle=Lifecycle.ABANDONED).count()
        if depth > meta.max_depth:
            hit = pause_at_bound(
                meta=meta, bound="depth", node=parent, why=f"depth {depth} would exceed max_depth {meta.max_depth}"
            )
        elif siblings + 1 > meta.max_breadth:
            hit = pause_at_bound(
                meta=meta,
                bound="breadth",
                node=parent,
                why=f"{siblings + 1} children would exceed max_breadth {meta.max_breadth}",
            )
        else:
            node = PlanNode.objects.create(
                book=book,
                parent=parent,
                depth=depth,
                intent=payload.intent,
                altitude=payload.altitude,
                round_cap=payload.round_cap,
                assumption=payload.assumption,
                kill_condition=payload.kill_condition,
                activity=payload.activity,
                produced_by=role,
            )
            refresh(meta)
    if hit is not None:
        raise Conflict(
            f"paused at the {hit.bound} bound: {hit.summary}",
            code="paused_at_bound",
            bound=hit.bound,
            approval_id=str(hit.approval_id),
        )
    return node


def plan_node_update(*, access: BookAccess, node_id, payload: NodePatch) -> PlanNode:
    """Write what the patch names (a field left out or null is kept)."""
    book, _ = controller_book(access)
    lifecycle = payload.lifecycle
    with transaction.atomic():
        meta = lock_meta(book)
        node = _node(book, node_id, lock=True)
        if lifecycle is not None:
            if lifecycle not in WRITABLE_LIFECYCLE:
                raise Invalid(
                    f"{lifecycle} comes only from an author verdict or the cascade; write draft, diverging or "
                    "converging",
                    field="lifecycle",
                )
            if node.lifecycle not in WRITABLE_LIFECYCLE:
                raise Conflict(f"the node is {node.lifecycle}; a verdict moves it", code="node_closed")
            node.lifecycle = lifecycle
        if payload.validation_status is not None:
            node.validation_status = validation_forward(node.validation_status, payload.validation_status)
        for name in ("intent", "assumption", "kill_condition", "activity"):
            value = getattr(payload, name)
            if value is not None:
                setattr(node, name, value)
        node.save()
        refresh(meta)
        return node


def candidate_add(*, access: BookAccess, node_id, payload: CandidateIn) -> Candidate:
    """A divergence candidate (Terra, Luna or Sol); it starts proposed and the node diverges."""
    book, role = lens_book(access)
    with transaction.atomic():
        meta = lock_meta(book)
        node = _node(book, node_id, lock=True)
        if node.lifecycle not in WRITABLE_LIFECYCLE:
            raise Conflict(f"the node is {node.lifecycle}; it takes no new candidates", code="node_closed")
        candidate = Candidate.objects.create(
            node=node,
            altitude=payload.altitude,
            mechanic=payload.mechanic,
            shape=payload.shape,
            riskiest_assumption=payload.riskiest_assumption,
            rationale=payload.rationale,
            proposed_by=role,
            untrusted=role in {"terra", "luna"},
        )
        if node.lifecycle == Lifecycle.DRAFT:
            node.lifecycle = Lifecycle.DIVERGING
            node.save(update_fields=["lifecycle", "updated_at"])
        refresh(meta)
        return candidate


def apply_selection(node: PlanNode, candidate: Candidate, not_chosen_rationale: str) -> None:
    """Select one candidate; every other open one is rejected and kept with a rationale."""
    for other in node.candidates.exclude(pk=candidate.pk).filter(status=CandidateStatus.PROPOSED):
        other.status = CandidateStatus.REJECTED
        other.rationale = other.rationale or not_chosen_rationale
        other.save(update_fields=["status", "rationale", "updated_at"])
    candidate.status = CandidateStatus.SELECTED
    candidate.save(update_fields=["status", "updated_at"])
    node.selection = candidate
    node.lifecycle = Lifecycle.CONVERGING
    node.save(update_fields=["selection", "lifecycle", "updated_at"])


def candidate_select(*, access: BookAccess, node_id, payload: SelectIn) -> dict:
    """The controller selects; a one-way-door selection raises a consent card instead."""
    book, role = controller_book(access)
    candidate_id, rationale = payload.candidate_id, payload.rationale
    reversibility_class = Reversibility(payload.reversibility_class).value
    with transaction.atomic():
        meta = lock_meta(book)
        node = _node(book, node_id, lock=True)
        candidate = Candidate.objects.filter(node=node, pk=candidate_id).first()
        if candidate is None:
            raise NotFound("candidate not found")
        if node.lifecycle not in WRITABLE_LIFECYCLE:
            raise Conflict(f"the node is {node.lifecycle}", code="node_closed")
        if candidate.status != CandidateStatus.PROPOSED:
            raise Conflict(f"the candidate is {candidate.status}", code="candidate_closed")
        if reversibility_class == Reversibility.ONE_WAY_DOOR:
            card = raise_card(
                meta=meta,
                kind="consent",
                summary=f"one-way door: select '{candidate.mechanic}' for '{node.intent[:80]}'",
                decisions_requested=["approve the selection", "explore-alternatives", "park"],
                recommended=rationale,
                reversibility_class=reversibility_class,
                node=node,
                payload={"action": "select", "candidate": str(candidate.pk), "rationale": rationale},
                raised_by=role,
            )
            refresh(meta)
            return {"selected": False, "consent_required": True, "approval_id": str(card.approval_id)}
        apply_selection(node, candidate, rationale)
        refresh(meta)
        return {"selected": True, "consent_required": False, "approval_id": None}


def validation_item_add(*, access: BookAccess, payload: ValidationItemIn) -> ValidationPlanItem:
    book, _ = lens_book(access)
    with transaction.atomic():
        meta = lock_meta(book)
        node = _node(book, payload.node_id) if payload.node_id else None
        item = ValidationPlanItem.objects.create(
            book=book,
            node=node,
            assumption=payload.assumption,
            kill_condition=payload.kill_condition,
            activity=payload.activity,
        )
        refresh(meta)
        return item


# Validation status moves only forward: hypothesis -> validating -> validated | refuted.
VALIDATION_NEXT = {
    ValidationStatus.HYPOTHESIS: {ValidationStatus.VALIDATING},
    ValidationStatus.VALIDATING: {ValidationStatus.VALIDATED, ValidationStatus.REFUTED},
    ValidationStatus.VALIDATED: set(),
    ValidationStatus.REFUTED: set(),
}


def validation_forward(current: str, wanted: str, field: str = "validation_status") -> str:
    """``wanted`` (a ValidationStatus, the input schema's choice) if it is ``current`` or the next step
    forward; otherwise 422 naming the field."""
    if wanted == current:
        return current
    allowed = VALIDATION_NEXT[ValidationStatus(current)]
    if wanted not in allowed:
        nexts = " or ".join(sorted(allowed)) or "nothing (it is final)"
        raise Invalid(
            f"{field}: validation moves only forward; from {current} it goes to {nexts}, not {wanted}", field=field
        )
    return wanted


def validation_movers() -> set[str]:
    """Who moves the validation plan: the validation lens (the role the roster names for it), Sol and the author."""
    lens = RosterEntry.objects.filter(kind=RosterKind.VALIDATION).values_list("agent_role", flat=True)
    return set(CONTROLLER_ROLES) | {role for role in lens if role}


def validation_item_status(*, access: BookAccess, item_id, payload: ValidationStatusIn) -> ValidationPlanItem:
    """A validation plan item's status moves forward, only by the validation lens, Sol or the author (403 for any
    other lens: Terra explores options, she does not judge whether an assumption held)."""
    book, role = lens_book(access)
    movers = validation_movers()
    if role not in movers:
        raise refusal(
            role,
            Cap.LOOP_WRITE,
            f"the validation plan is moved by the validation lens, Sol or the author ({', '.join(sorted(movers))})",
        )
    with transaction.atomic():
        meta = lock_meta(book)
        item = ValidationPlanItem.objects.select_for_update().filter(book=book, pk=item_id).first()
        if item is None:
            raise NotFound("validation plan item not found")
        item.validation_status = validation_forward(item.validation_status, payload.validation_status)
        item.save(update_fields=["validation_status", "updated_at"])
        refresh(meta)
        return item
