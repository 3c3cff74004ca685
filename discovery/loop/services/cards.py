"""Option cards: what the controller puts before the author, as a pending approval of kind ``gate``."""

from __future__ import annotations

from approvals.models import Approval, ApprovalKind
from approvals.services import approval_request, fingerprint

from ..models import BlackboardArtifact, CardStatus, LoopMeta, OptionCard, PlanNode

SUBJECT_TYPE = "loop-option-card"


def card_digest(card: OptionCard) -> str:
    """What the author sees: the card and the current version and status of each slot it names."""
    slots = list(
        BlackboardArtifact.objects.filter(book_id=card.book_id, slug__in=card.artifacts or [])
        .order_by("slug")
        .values_list("slug", "version", "status")
    )
    return fingerprint(
        {
            "kind": card.kind,
            "gate": card.gate,
            "summary": card.summary,
            "decisions_requested": card.decisions_requested,
            "recommended": card.recommended,
            "reversibility_class": card.reversibility_class,
            "artifacts": card.artifacts,
            "slots": slots,
            "node": str(card.node_id or ""),
            "trace_seed": card.trace_seed,
            "bound": card.bound,
            "payload": card.payload,
        }
    )


def raise_card(
    *,
    meta: LoopMeta,
    kind: str,
    summary: str,
    decisions_requested: list[str],
    recommended: str = "",
    reversibility_class: str = "reversible",
    artifacts: list[str] | None = None,
    node: PlanNode | None = None,
    trace_seed: str = "",
    bound: str = "",
    proposed_extension: dict | None = None,
    risk_triggers: list[str] | None = None,
    payload: dict | None = None,
    raised_by: str = "sol",
    requested_by_user=None,
) -> OptionCard:
    """Create an option card and its pending approval (kind ``gate``). Call inside a transaction."""
    card = OptionCard.objects.create(
        book=meta.book,
        kind=kind,
        gate=meta.gate,
        summary=summary[:500],
        decisions_requested=list(decisions_requested),
        recommended=recommended[:2000],
        reversibility_class=reversibility_class,
        artifacts=list(artifacts or []),
        node=node,
        trace_seed=trace_seed,
        bound=bound,
        proposed_extension=proposed_extension or {},
        risk_triggers=list(risk_triggers or []),
        payload=payload or {},
        raised_by=raised_by,
        round=meta.round,
    )
    approval = approval_request(
        book=meta.book,
        kind=ApprovalKind.GATE,
        subject_type=SUBJECT_TYPE,
        subject_id=card.pk,
        summary=f"{meta.gate} · {summary}"[:500],
        requested_by_role="author" if raised_by == "author" else "sol",
        requested_by_user=requested_by_user,
        note=recommended[:10_000],
        gate=meta.gate,
        reversibility_class=reversibility_class,
    )
    card.approval = approval
    card.save(update_fields=["approval", "updated_at"])
    return card


def card_as_dict(card: OptionCard) -> dict:
    return {
        "id": str(card.pk),
        "schema_version": card.schema_version,
        "kind": card.kind,
        "gate": card.gate,
        "summary": card.summary,
        "decisions_requested": card.decisions_requested,
        "recommended": card.recommended,
        "reversibility_class": card.reversibility_class,
        "artifacts": card.artifacts,
        "node": str(card.node_id) if card.node_id else None,
        "trace_seed": card.trace_seed,
        "bound": card.bound,
        "proposed_extension": card.proposed_extension,
        "risk_triggers": card.risk_triggers,
        "payload": card.payload,
        "status": card.status,
        "verdict": card.verdict,
        "raised_by": card.raised_by,
        "round": card.round,
        "approval_id": str(card.approval_id) if card.approval_id else None,
        "created_at": card.created_at.isoformat() if card.created_at else None,
    }


def pending_card(book) -> OptionCard | None:
    return (
        OptionCard.objects.filter(book=book, status=CardStatus.PENDING)
        .select_related("approval")
        .order_by("created_at")
        .first()
    )


def supersede_lapsed(book) -> int:
    """Cards whose approval lapsed (superseded) are marked superseded too; returns how many."""
    lapsed = OptionCard.objects.filter(
        book=book, status=CardStatus.PENDING, approval__status=Approval.Status.SUPERSEDED
    )
    return lapsed.update(status=CardStatus.SUPERSEDED)
