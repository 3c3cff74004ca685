"""A Story Charter version proposed after G2 reopens convergence.

G2 ratified one charter version. A version proposed after G2 passed (the loop at G3, not handed off)
raises an option card for the author (kind ``consent``, payload ``action: charter-reopen``) naming the
proposed version and the ratified one, with the cascade preview from the trace root (what the charter
governs downstream) as its impact. While it waits the loop awaits the author: G3 cannot be asked for.

A new premise (the author edits her book) reopens G0 the same way: ``premise_reopen_impact`` answers what it
changes first (the cascade preview from the trace root), and ``premise_reopen_g0`` takes the loop back to G0.

The card goes with the charter's own decision (``/charters/<id>/resolve`` or the review page):
approving the version moves G2's ratification to it (the charter's decision-log row names the version
and its content digest as ``g2_ratified``, with the version it replaces); rejecting it keeps the
ratified one (``g2_kept``). The card's own approval is closed as superseded (its decision is the
charter's row); a verdict on the card itself is a 409 ``decide_the_charter``.
"""

from __future__ import annotations

from approvals.models import Approval, DecisionLogEntry
from novelgraph.core.errors import Conflict

from ..models import GATE_ORDER, CardStatus, LoopMeta, LoopStatus, OptionCard, PlanNode, TraceNode, TraceStatus
from .base import refresh
from .cards import raise_card
from .cascade import cascade_preview
from .gates import charter_ratified

REOPEN = "charter-reopen"


def g2_ratification(book) -> dict | None:
    """The charter version G2 ratifies now: the newest of G2's own row (``effect.charter``) and a
    charter approval that went with a reopen card (``g2_ratified``)."""
    rows = (
        DecisionLogEntry.objects.filter(book=book, subject_type__in=["loop-option-card", "charter"])
        .order_by("-sequence")
        .values_list("subject_type", "gate", "detail")
    )
    for subject_type, gate, detail in rows:
        detail = detail or {}
        if subject_type == "charter" and detail.get("g2_ratified"):
            return detail["g2_ratified"]
        effect = detail.get("effect") if isinstance(detail.get("effect"), dict) else {}
        if subject_type == "loop-option-card" and gate == "G2" and effect.get("charter"):
            return effect["charter"]
    return None


def _past_g2(meta: LoopMeta) -> bool:
    return meta.status != LoopStatus.HANDED_OFF and GATE_ORDER.index(meta.gate) > GATE_ORDER.index("G2")


def charter_reopen_card(*, charter, proposed_by: str, user=None, **_signal) -> OptionCard | None:
    """On ``charter_proposed``, inside ``charter_propose``'s transaction: raise the reopen card when G2 has passed."""
    book = charter.book
    # The book row is already locked (charter_propose): one lock order (novelgraph.core.db.lock_row).
    meta = (
        LoopMeta.objects.select_for_update(of=("self",), no_key=True).select_related("book").filter(book=book).first()
    )
    if meta is None or not _past_g2(meta):
        return None
    ratified = g2_ratification(book)
    proposed = charter_ratified(charter)
    seed = (
        meta.trace_root
        if TraceNode.objects.filter(book=book, node_id=meta.trace_root, status=TraceStatus.ACTIVE).exists()
        else ""
    )
    kept = f"v{ratified['version']}" if ratified else "the ratified version"
    card = raise_card(
        meta=meta,
        kind="consent",
        summary=f"Story charter v{charter.version} was proposed after G2 ratified {kept}: convergence reopens",
        decisions_requested=[
            f"approve charter v{charter.version}: G2's ratification moves to it",
            f"reject it: {kept} stays ratified",
        ],
        recommended=f"look at what the charter governs (the impact from {seed or 'the trace root'}), "
        f"then decide charter v{charter.version} itself",
        trace_seed=seed,
        payload={"action": REOPEN, "charter": proposed, "ratified": ratified},
        raised_by=proposed_by if proposed_by in ("author", "sol") else "sol",
        requested_by_user=user if proposed_by == "author" else None,
    )
    refresh(meta)
    return card


def charter_reopen_settle(*, charter, approved: bool, detail: dict, **_signal) -> None:
    """On ``charter_decided``, inside the charter decision: an approval names the loop's gate at that moment
    (``detail["loop_gate"]``), and the reopen cards go with the decision.

    Approving version n decides its card (approve) and supersedes the cards of older versions; G2's
    ratification moves to n (``detail["g2_ratified"]``). Rejecting n decides its card (reject) and keeps
    the ratified version (``detail["g2_kept"]``). Each card's own approval is closed as superseded.
    """
    book_id = charter.book_id
    if approved:
        detail["loop_gate"] = LoopMeta.objects.filter(book_id=book_id).values_list("gate", flat=True).first()
    cards = [
        c
        for c in OptionCard.objects.select_for_update(of=("self",)).filter(book_id=book_id, status=CardStatus.PENDING)
        if (c.payload or {}).get("action") == REOPEN
    ]
    mine, older = [], []
    for card in cards:
        version = (card.payload.get("charter") or {}).get("version", 0)
        if str((card.payload.get("charter") or {}).get("id")) == str(charter.pk):
            mine.append(card)
        elif approved and version < charter.version:
            older.append(card)
    if not mine and not older:
        return  # the common case: one statement
    # The book row is already locked (the charter's decision): one lock order (novelgraph.core.db.lock_row).
    meta = LoopMeta.objects.select_for_update(of=("self",), no_key=True).select_related("book").get(book_id=book_id)
    ratified = g2_ratification(meta.book)
    for card in mine:
        card.status = CardStatus.DECIDED
        card.verdict = "approve" if approved else "reject"
        card.save(update_fields=["status", "verdict", "updated_at"])
    for card in older:
        card.status = CardStatus.SUPERSEDED
        card.save(update_fields=["status", "updated_at"])
    Approval.objects.filter(
        pk__in=[c.approval_id for c in mine + older if c.approval_id], status=Approval.Status.PENDING
    ).update(status=Approval.Status.SUPERSEDED)
    detail["reopen_cards"] = [str(c.pk) for c in mine]
    if mine and approved:
        detail["g2_ratified"] = {**charter_ratified(charter), "replaces": ratified}
    elif mine:
        detail["g2_kept"] = ratified
    refresh(meta)


def refuse_card_verdict(card: OptionCard) -> None:
    """A reopen card is decided with its charter version, never on its own."""
    if (card.payload or {}).get("action") == REOPEN:
        version = (card.payload.get("charter") or {}).get("version")
        raise Conflict(
            f"this card goes with charter v{version}: approve or reject the charter version itself "
            f"(POST /api/v1/charters/<id>/resolve or its review page)",
            code="decide_the_charter",
            charter_id=(card.payload.get("charter") or {}).get("id"),
        )


# --- A new premise reopens G0 -------------------------------------------------------------------------


def premise_reopen_impact(*, book, **_signal) -> dict:
    """On ``premise_impact`` (reads only): what a new premise changes in the loop. Before G0 passed nothing
    reopens (a pending G0 card is simply replaced); after it, G0 reopens, and the parts the premise feeds (the
    cascade preview from the trace root) are what she will look at again. A handed-off loop is refused."""
    meta = LoopMeta.objects.filter(book=book).first()
    if meta is None:
        return {}
    if meta.status == LoopStatus.HANDED_OFF:
        return {"handed_off": True, "gate": meta.gate}
    if GATE_ORDER.index(meta.gate) == 0:
        return {"reopens": False, "gate": meta.gate}
    root = TraceNode.objects.filter(book=book, node_id=meta.trace_root, status=TraceStatus.ACTIVE).first()
    preview = cascade_preview(book=book, seed=root.node_id) if root else {"affected": [], "lenses": []}
    labels = dict(
        TraceNode.objects.filter(book=book, node_id__in=[a["node_id"] for a in preview["affected"]]).values_list(
            "node_id", "label"
        )
    )
    return {
        "reopens": True,
        "gate": meta.gate,
        "affected": [
            {**a, "label": labels.get(a["node_id"]) or a["artifact"] or a["node_id"]} for a in preview["affected"]
        ],
        "lenses": preview["lenses"],
        "pending": list(
            OptionCard.objects.filter(book=book, status=CardStatus.PENDING)
            .exclude(kind="bound")
            .values_list("summary", flat=True)
        ),
    }


def premise_reopen_g0(*, book, previous: str, **_signal) -> None:
    """On ``premise_changed``, inside the edit's transaction: the root plan node carries the new premise, the
    cards waiting on the old one (a bound's card excepted) are superseded, and the loop goes back to G0, where
    Sol asks her to ratify the new premise. A book without a loop has nothing to reopen."""
    meta = (
        LoopMeta.objects.select_for_update(of=("self",), no_key=True).select_related("book").filter(book=book).first()
    )
    if meta is None:
        return
    if meta.status == LoopStatus.HANDED_OFF:
        raise Conflict("handed off to drafting: reopen the discovery first to change this book's premise",
                       code="handed_off", field="premise")  # fmt: skip
    PlanNode.objects.filter(book=book, is_root=True).update(intent=(book.premise or book.title)[:5000])
    waiting = list(
        OptionCard.objects.select_for_update(of=("self",))
        .filter(book=book, status=CardStatus.PENDING)
        .exclude(kind="bound")
    )
    for card in waiting:
        card.status = CardStatus.SUPERSEDED
        card.save(update_fields=["status", "updated_at"])
    Approval.objects.filter(
        pk__in=[c.approval_id for c in waiting if c.approval_id], status=Approval.Status.PENDING
    ).update(status=Approval.Status.SUPERSEDED)
    meta.gate = GATE_ORDER[0]
    refresh(meta)
