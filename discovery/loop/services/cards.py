"""Option cards: what the controller puts before the author, as a pending approval of kind ``gate``."""

from __future__ import annotations

from approvals.models import Approval, ApprovalKind
from approvals.services import approval_request
from discovery.models import ThrustCandidate
from novelgraph.core.digest import fingerprint
from novelgraph.core.errors import NotFound
from novelgraph.core.schemas import limit

from ..models import BlackboardArtifact, CardStatus, LoopMeta, OptionCard, PlanNode
from .cascade import cascade_preview

SUBJECT_TYPE = "loop-option-card"


def card_digest(card: OptionCard) -> str:
    """What the author sees: the card and the current version and status of each slot it names."""
    slots = [
        (slug, version, status, (successor or {}).get("version"))
        for slug, version, status, successor in BlackboardArtifact.objects.filter(
            book_id=card.book_id, slug__in=card.artifacts or []
        )
        .order_by("slug")
        .values_list("slug", "version", "status", "successor")
    ]
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
            # The impact preview the author is shown (what a cascade from the seed would touch): if it
            # changes, an edge added after the preview for instance, the approval lapses.
            "impact": card_impact(card),
            # G1.5: the open thrust candidates she chooses among; one added or edited meanwhile lapses it.
            "thrusts": [
                (str(t.pk), t.status, t.title, t.main_thrust, t.character_engine, t.central_conflict)
                for t in g15_thrusts(card)
            ],
        }
    )


OPEN_THRUST = (ThrustCandidate.Status.PROPOSED, ThrustCandidate.Status.SELECTED)


def g15_thrusts(card: OptionCard) -> list[ThrustCandidate]:
    """The open thrust candidates a G1.5 gate card puts before the author (she chooses one of them)."""
    if card.kind != "gate" or card.gate != "G1.5":
        return []
    return list(
        ThrustCandidate.objects.filter(session__book_id=card.book_id, status__in=OPEN_THRUST).order_by(
            "created_at", "id"
        )
    )


def card_impact(card: OptionCard) -> dict | None:
    """The impact preview of a card: the cascade from its trace seed, as the review page shows it."""
    if not card.trace_seed:
        return None
    try:
        return cascade_preview(book=card.book, seed=card.trace_seed)
    except NotFound:  # a seed that no longer exists previews as nothing
        return None


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
        summary=f"{meta.gate} · {summary}"[: limit(Approval, "summary")],
        requested_by_role="author" if raised_by == "author" else "sol",
        requested_by_user=requested_by_user,
        note=recommended[: limit(Approval, "note")],
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


def supersede_lapsed(book, meta: LoopMeta | None = None) -> list[OptionCard]:
    """Cards whose approval lapsed (superseded: what the author was shown changed) are marked superseded.

    Given the locked ``meta`` (inside a write), each lapsed card of the current gate is put before the
    author again as a fresh card with a fresh digest and impact preview; returns those new cards.
    """
    lapsed = list(
        OptionCard.objects.filter(book=book, status=CardStatus.PENDING, approval__status=Approval.Status.SUPERSEDED)
    )
    if not lapsed:
        return []
    OptionCard.objects.filter(pk__in=[c.pk for c in lapsed]).update(status=CardStatus.SUPERSEDED)
    if meta is None:
        return []
    renewed = []
    for old in lapsed:
        if old.gate != meta.gate:
            continue
        renewed.append(
            raise_card(
                meta=meta,
                kind=old.kind,
                summary=old.summary,
                decisions_requested=old.decisions_requested,
                recommended=old.recommended,
                reversibility_class=old.reversibility_class,
                artifacts=old.artifacts,
                node=old.node,
                trace_seed=old.trace_seed,
                bound=old.bound,
                proposed_extension=old.proposed_extension,
                risk_triggers=old.risk_triggers,
                payload={**(old.payload or {}), "renews": str(old.pk)},
                raised_by=old.raised_by,
                requested_by_user=old.approval.requested_by_user if old.approval_id else None,
            )
        )
    return renewed
