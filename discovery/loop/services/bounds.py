"""Rounds, cost and the bounds (LOOP.md "Bounds").

Rounds (the book's ``round`` reaching ``round_cap``, or a node's), cost
(``cost_spent`` reaching ``cost_budget``), concentration (one subtree spending more
than ``concentration`` of the budget), depth and breadth. Hitting one sets
``paused-at-bound`` (running out of rounds or budget while not converged:
``stalled-at-cap``) and raises an option card offering extend, narrow
(approve-with-constraint), park or abandon. It never ends the run; ``extend``
grants and logs the new bound.
"""

from __future__ import annotations

import json
import re

from django.db import transaction
from django.db.models import Sum

from discovery.access import BookAccess
from discovery.models import Book
from novelgraph.core.db import lock_row
from novelgraph.core.errors import Invalid, NotFound
from novelgraph.core.schemas import parse_input

from ..models import CardStatus, LoopMeta, LoopStatus, OptionCard, PlanNode
from ..schemas import BoundsGrant, CostIn
from .base import controller_book, lock_meta, loop_ensure, refresh, refuse_when_paused
from .cards import raise_card

BOUND_DECISIONS = ["extend", "approve-with-constraint (narrow)", "park", "abandon"]


def proposed_extension(meta: LoopMeta, bound: str, node: PlanNode | None) -> dict:
    if bound == "rounds":
        return {"round_cap": meta.round_cap + max(1, meta.round_cap // 2)}
    if bound == "cost":
        return {"cost_budget": round(meta.cost_budget * 1.5, 2)}
    if bound == "concentration":
        return {"concentration": min(1.0, round(meta.concentration + 0.2, 2))}
    if bound == "depth":
        return {"max_depth": meta.max_depth + 1}
    if bound == "breadth":
        return {"max_breadth": meta.max_breadth + 2}
    if bound == "node-rounds" and node is not None:
        return {"node_round_cap": node.round_cap + 2}
    return {"round_cap": meta.round_cap + 1}


def pause_at_bound(*, meta: LoopMeta, bound: str, node: PlanNode | None, why: str) -> OptionCard:
    """Pause (or stall) at ``bound`` and raise the bound's option card. Call inside a transaction."""
    stalled = bound in {"rounds", "cost"} and not meta.saturation
    meta.status = LoopStatus.STALLED_AT_CAP if stalled else LoopStatus.PAUSED_AT_BOUND
    meta.bound = bound
    meta.save()
    existing = OptionCard.objects.filter(book=meta.book, kind="bound", status=CardStatus.PENDING).first()
    if existing is not None:
        return existing
    return raise_card(
        meta=meta,
        kind="bound",
        summary=f"{meta.status}: {why}",
        decisions_requested=BOUND_DECISIONS,
        recommended="extend the bound, or narrow the scope with a constraint",
        node=node,
        bound=bound,
        proposed_extension=proposed_extension(meta, bound, node),
    )


def subtree_ids(node: PlanNode) -> list:
    ids = [node.pk]
    frontier = [node.pk]
    while frontier:
        frontier = list(PlanNode.objects.filter(parent_id__in=frontier).values_list("pk", flat=True))
        ids.extend(frontier)
    return ids


def concentration_hit(meta: LoopMeta) -> tuple[PlanNode, float] | None:
    """The top-level subtree spending more than ``concentration`` of the budget, if any."""
    limit = meta.concentration * meta.cost_budget
    for child in PlanNode.objects.filter(book=meta.book, parent__is_root=True).order_by("created_at"):
        spent = PlanNode.objects.filter(pk__in=subtree_ids(child)).aggregate(s=Sum("cost_spent"))["s"] or 0
        if spent > limit:
            return child, spent
    return None


def check_spend_bounds(meta: LoopMeta) -> OptionCard | None:
    """After a spend: cost cap first, then concentration."""
    if meta.cost_spent >= meta.cost_budget:
        return pause_at_bound(
            meta=meta,
            bound="cost",
            node=None,
            why=f"cost {meta.cost_spent:g} reached the budget {meta.cost_budget:g}",
        )
    hit = concentration_hit(meta)
    if hit:
        node, spent = hit
        share = round(100 * spent / meta.cost_budget)
        return pause_at_bound(
            meta=meta,
            bound="concentration",
            node=node,
            why=f"one subtree spent {share}% of the budget (more than {round(100 * meta.concentration)}%)",
        )
    return None


def round_advance(*, access: BookAccess, node_id=None) -> LoopMeta:
    """Close a round (the book's, or a node's). Reaching a cap pauses or stalls; never ends the run."""
    book, _ = controller_book(access)
    with transaction.atomic():
        meta = lock_meta(book)
        refuse_when_paused(meta)
        if node_id is not None:
            node = PlanNode.objects.filter(book=book, pk=node_id).first()
            if node is None:
                raise NotFound("plan node not found")
            node.round += 1
            node.save(update_fields=["round", "updated_at"])
            refresh(meta)
            if node.round >= node.round_cap:
                pause_at_bound(
                    meta=meta,
                    bound="node-rounds",
                    node=node,
                    why=f"node '{node.intent[:60]}' reached its round cap {node.round_cap}",
                )
            return meta
        meta.round += 1
        meta.last_round_clean = not meta.round_invalidated
        meta.round_invalidated = False
        refresh(meta)
        if meta.round >= meta.round_cap and not meta.saturation:
            pause_at_bound(
                meta=meta, bound="rounds", node=None, why=f"round {meta.round} reached the round cap {meta.round_cap}"
            )
        return meta


def cost_spend(*, access: BookAccess, payload: CostIn) -> LoopMeta:
    """Record cost. It is never negative (CostIn); reaching the budget stalls, concentration pauses."""
    book, _ = controller_book(access)
    amount, node_id = payload.amount, payload.node_id
    with transaction.atomic():
        meta = lock_meta(book)
        refuse_when_paused(meta)
        if node_id is not None:
            node = PlanNode.objects.select_for_update().filter(book=book, pk=node_id).first()
            if node is None:
                raise NotFound("plan node not found")
            node.cost_spent += amount
            node.save(update_fields=["cost_spent", "updated_at"])
        meta.cost_spent += amount
        meta.save()
        check_spend_bounds(meta)
        return meta


def parse_grant(text: str, proposed: dict | None = None) -> BoundsGrant:
    """What an extend grants: ``round_cap=8 cost_budget=150`` -> round_cap 8, cost_budget 150.0, else the
    card's ``proposed`` extension; read through ``BoundsGrant``, so each value is in its field's range (422
    naming ``constraint.<bound>``). An unknown name is a 422."""
    named: dict = {}
    pairs = r"([a-z_]+)\s*=\s*([0-9]+(?:\.[0-9]+)?)"
    for key, value in re.findall(pairs, text or ""):
        if key not in BoundsGrant.model_fields:
            grantable = ", ".join(BoundsGrant.model_fields)
            raise Invalid(f"cannot grant {key!r}; grant one of {grantable}", field="constraint")
        named[key] = json.loads(value)  # a JSON number: 8 is an int, 8.5 a float (refused for a round cap)
    if re.search(r"[0-9]", re.sub(pairs, "", text or "")):
        # "Raise the budget to 200" names a number but no bound: granting the card's proposal (or only the bounds
        # named beside it) instead would record one grant and make another. Words without a number take the
        # proposal ("grant the proposed budget").
        grantable = ", ".join(f"{name}=<number>" for name in BoundsGrant.model_fields)
        raise Invalid(
            f"say what to grant as name=value ({grantable}), or leave out the numbers to grant the card's proposal",
            field="constraint",
        )
    return parse_input(BoundsGrant, named or dict(proposed or {}), at="constraint")


def apply_grant(meta: LoopMeta, card: OptionCard, text: str) -> dict:
    """Extend: grant what the text names, else the card's proposed extension (else one more round). The ranges
    are the schema's; the rules here are the loop's own: a cap beyond what is already used, never a shrink,
    and a node's round cap only on a card about a node. Returns {previous, granted}."""
    grant = parse_grant(text, card.proposed_extension).model_dump(exclude_unset=True) or {
        "round_cap": meta.round_cap + 1
    }
    previous: dict = {}
    node = card.node
    for key, value in grant.items():
        if key == "node_round_cap":
            if node is None:
                raise Invalid("node_round_cap needs a card about a node", field="constraint")
            previous[key] = node.round_cap
            if value <= node.round:
                raise Invalid(f"node_round_cap must exceed the node's round {node.round}", field="constraint")
            node.round_cap = value
            node.save(update_fields=["round_cap", "updated_at"])
            continue
        previous[key] = getattr(meta, key)
        if key == "round_cap" and value <= meta.round:
            raise Invalid(f"round_cap must exceed the completed rounds ({meta.round})", field="constraint")
        if key == "cost_budget" and value <= meta.cost_spent:
            raise Invalid(f"cost_budget must exceed the cost spent ({meta.cost_spent:g})", field="constraint")
        if value < previous[key]:
            raise Invalid(f"extend grants, it does not shrink: {key} is {previous[key]}", field="constraint")
        setattr(meta, key, value)
    meta.save()
    return {"previous": previous, "granted": grant}


def cost_charge(*, book, amount: float) -> LoopMeta:
    """Charge work already done (an agent run) to the book's cost budget. Call inside the transaction
    that records the work. Never refused, since the work happened; as with ``cost_spend``, reaching the
    budget stalls the loop and concentration pauses it, so the next piece of work waits for the author."""
    loop_ensure(book=book)
    # One lock order (novelgraph.core.db.lock_row): the book, then the meta row alone.
    lock_row(Book, book.pk)
    meta = LoopMeta.objects.select_for_update(of=("self",), no_key=True).select_related("book").get(book=book)
    if amount <= 0:
        return meta
    meta.cost_spent += amount
    meta.save()
    if meta.status not in {LoopStatus.PAUSED_AT_BOUND, LoopStatus.STALLED_AT_CAP, LoopStatus.HANDED_OFF}:
        check_spend_bounds(meta)
    return meta
