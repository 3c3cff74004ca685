"""The cascade: one mechanism for every blackboard-changing verdict (LOOP.md).

1. Blast radius: everything reachable along active traceability out-edges from
   the seed node, among active slots.
2. Impact before blast: :func:`cascade_preview` changes nothing.
3. Circuit breaker: more than min(a third of the active set, 8) affected nodes
   surfaces to the author instead of cascading (nothing changes).
4. On confirmation: the seed becomes rejected (or abandoned), the downstream
   nodes and their slots stale with a reason and a version bump, their edges leave
   the active graph (kept in history), and only the lenses that produced them are
   queued to re-run (their cost counts).
5. The caller logs one row; saturation is re-checked. Re-applying is a no-op.

The row is hashed and never rewritten, so what it records is capped when written (``VIEW_PAGE``): the first
page of the stale nodes, of the stale slots and of each re-run's slots, their counts, and the paged route with
the rest (:func:`cascade_stale`, derived from the stored nodes: what is true after the fact).
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import F, Q

from discovery.models import Book
from discovery.selectors import VIEW_PAGE
from novelgraph.core.errors import NotFound
from novelgraph.core.pagination import rest_link

from ..models import (
    ArtifactStatus,
    BlackboardArtifact,
    LensRerun,
    LoopMeta,
    RosterEntry,
    TraceEdge,
    TraceNode,
    TraceStatus,
)

# A node signed by a role (not by one of its lenses) names no lens to re-run: the slot it cites does, if any.
SIGNED_BY_ROLE = ("", "author", "sol", "terra", "luna")


def _producer(node: TraceNode) -> str:
    """The lens that re-runs when ``node`` goes stale: the lens that signed it, else its slot's lens."""
    if node.produced_by not in SIGNED_BY_ROLE:
        return node.produced_by
    if node.artifact_id and node.artifact.lens:
        return node.artifact.lens
    return ""


def cascade_preview(*, book: Book, seed: str) -> dict:
    """The impact of invalidating ``seed``: affected slots, lenses that would re-run, the breaker. Read-only."""
    node = TraceNode.objects.select_related("artifact").filter(book=book, node_id=seed).first()
    if node is None:
        raise NotFound(f"traceability node {seed!r} not found")
    active = {n.node_id: n for n in TraceNode.objects.select_related("artifact").filter(book=book, status="active")}
    if seed not in active:
        return {
            "seed": seed,
            "already_applied": True,
            "seed_status": node.status,
            "affected": [],
            "lenses": [],
            "active_count": len(active),
            "limit": min(len(active) / 3, 8),
            "breaker": False,
        }
    succ: dict[str, list[str]] = defaultdict(list)
    for a, b in TraceEdge.objects.filter(book=book, active=True).values_list("from_id", "to_id"):
        if a in active and b in active:
            succ[a].append(b)
    seen = {seed}
    order: list[str] = []
    todo = [seed]
    while todo:
        current = todo.pop(0)
        for nxt in succ.get(current, []):
            if nxt not in seen:
                seen.add(nxt)
                order.append(nxt)
                todo.append(nxt)
    affected = [
        {
            "node_id": n,
            "kind": active[n].kind,
            "artifact": active[n].artifact.slug if active[n].artifact_id else None,
            "lens": _producer(active[n]),
        }
        for n in order
    ]
    lenses = sorted({a["lens"] for a in affected if a["lens"]})
    limit = min(len(active) / 3, 8)
    return {
        "seed": seed,
        "already_applied": False,
        "seed_status": node.status,
        "affected": affected,
        "lenses": lenses,
        "active_count": len(active),
        "limit": round(limit, 3),
        "breaker": len(affected) > limit,
    }


def _stale_reason(seed: str, seed_status: str, reason: str) -> str:
    return f"upstream {seed} was {seed_status}: {reason}"[:2000]


def _stale_link(book_id, route: str, seed: str, **query) -> str:
    return rest_link(f"books/{book_id}/loop/{route}", node=seed, **query)


def cascade_stale(*, book: Book, seed: str, lens: str | None = None):
    """The nodes a confirmed cascade from ``seed`` made stale, in ``node_id`` order (``lens``: only those
    that lens produced, the slots its re-run was queued for).

    Derived from stored state, true after the fact: the cascade gave each node it staled the reason it
    derives from the seed's own (stored on the seed, which never becomes active again), and a stale node
    never becomes active again, so no later cascade reaches it. A seed that has not cascaded has none."""
    node = TraceNode.objects.filter(book=book, node_id=seed).first()
    if node is None:
        raise NotFound(f"traceability node {seed!r} not found")
    if node.status in (TraceStatus.ACTIVE, TraceStatus.STALE):
        return TraceNode.objects.none()
    qs = TraceNode.objects.select_related("artifact").filter(
        book=book, status=TraceStatus.STALE, status_reason=_stale_reason(seed, node.status, node.status_reason)
    )
    if lens:
        qs = qs.filter(Q(produced_by=lens) | Q(produced_by__in=SIGNED_BY_ROLE, artifact__lens=lens))
    return qs.order_by("node_id")


def cascade_stale_artifacts(*, book: Book, seed: str):
    """The slots bound to the nodes the cascade from ``seed`` made stale, by slug."""
    nodes = cascade_stale(book=book, seed=seed)
    return (
        BlackboardArtifact.objects.filter(book=book, trace_nodes__in=nodes.values("pk"))
        .order_by("slug")
        .values_list("slug", flat=True)
        .distinct()
    )


def stale_node_row(node: TraceNode) -> dict:
    slug = node.artifact.slug if node.artifact_id else None
    row = {"node_id": node.node_id, "kind": node.kind, "artifact": slug, "lens": _producer(node)}
    return {**row, "slot": slug or node.node_id}


def cascade_apply(
    *,
    meta: LoopMeta,
    seed: str,
    reason: str,
    seed_status: str = TraceStatus.REJECTED,
    override_breaker: bool = False,
) -> dict:
    """Apply the cascade from ``seed`` (inside the deciding transaction). Returns what it did.

    ``{"applied": False, "noop": True}`` when the seed is already invalidated;
    ``{"applied": False, "surfaced": True, ...}`` when the breaker trips (nothing changes).
    """
    book = meta.book
    preview = cascade_preview(book=book, seed=seed)
    if preview["already_applied"]:
        return {"applied": False, "noop": True, "seed": seed}
    if preview["breaker"] and not override_breaker:
        # This result goes into the decision-log row, which is hashed and never rewritten: it holds the first
        # page of the affected nodes, their count, and where the whole list is (the breaker changed nothing,
        # so the preview from the same seed lists them all, in this order).
        affected = [a["node_id"] for a in preview["affected"]]
        rest = rest_link(f"books/{book.pk}/loop/cascade-preview/affected", node=seed)
        return {
            "applied": False,
            "surfaced": True,
            "seed": seed,
            "affected": affected[:VIEW_PAGE],
            "affected_count": len(affected),
            "affected_rest": rest if len(affected) > VIEW_PAGE else None,
            "limit": preview["limit"],
        }
    # In the order the paged route gives them (node_id), so the logged page and the route's rest are one list.
    in_order = sorted(preview["affected"], key=lambda a: a["node_id"])
    affected_ids = [a["node_id"] for a in in_order]
    seed_node = TraceNode.objects.select_related("artifact").get(book=book, node_id=seed)
    seed_node.status = seed_status
    seed_node.status_reason = reason[:2000]
    seed_node.save(update_fields=["status", "status_reason", "updated_at"])
    if seed_node.artifact_id:
        BlackboardArtifact.objects.filter(pk=seed_node.artifact_id).update(
            status=ArtifactStatus.REJECTED, stale_reason=reason[:2000], round_last_touched=meta.round
        )
    stale_reason = _stale_reason(seed, seed_status, seed_node.status_reason)
    TraceNode.objects.filter(book=book, node_id__in=affected_ids).update(
        status=TraceStatus.STALE, status_reason=stale_reason
    )
    artifact_ids = [
        pk
        for pk in TraceNode.objects.filter(book=book, node_id__in=affected_ids, artifact__isnull=False).values_list(
            "artifact_id", flat=True
        )
    ]
    stale_slugs = list(
        BlackboardArtifact.objects.filter(pk__in=artifact_ids)
        .exclude(status__in=[ArtifactStatus.STALE, ArtifactStatus.REJECTED])
        .order_by("slug")
        .values_list("slug", flat=True)
    )
    BlackboardArtifact.objects.filter(pk__in=artifact_ids).exclude(
        status__in=[ArtifactStatus.STALE, ArtifactStatus.REJECTED]
    ).update(
        status=ArtifactStatus.STALE,
        stale_reason=stale_reason,
        version=F("version") + 1,
        round_last_touched=meta.round,
    )
    touched = [seed, *affected_ids]
    edges_left = TraceEdge.objects.filter(book=book, active=True).filter(Q(from_id__in=touched) | Q(to_id__in=touched))
    edges_count = edges_left.update(active=False, inactive_reason=f"cascade from {seed}: {reason}"[:2000])
    # Only the lenses that produced the stale slots re-run; their cost counts.
    by_lens: dict[str, list[str]] = defaultdict(list)
    for item in in_order:
        if item["lens"]:
            by_lens[item["lens"]].append(item["artifact"] or item["node_id"])
    costs = dict(RosterEntry.objects.filter(slug__in=by_lens).values_list("slug", "rerun_cost"))
    queued = []
    for lens, slots in sorted(by_lens.items()):
        cost = float(costs.get(lens, 1.0))
        LensRerun.objects.create(
            book=book, lens=lens, artifacts=slots, reason=stale_reason, cost=cost, round=meta.round
        )
        meta.cost_spent += cost
        rest = _stale_link(book.pk, "cascade-stale", seed, lens=lens) if len(slots) > VIEW_PAGE else None
        queued.append(
            {
                "lens": lens,
                "slots": slots[:VIEW_PAGE],
                "slots_count": len(slots),
                "slots_rest": rest,
                "cost": cost,
            }
        )
    meta.round_invalidated = True
    meta.save()
    more_nodes, more_slots = len(affected_ids) > VIEW_PAGE, len(stale_slugs) > VIEW_PAGE
    return {
        "applied": True,
        "seed": seed,
        "seed_status": seed_status,
        "stale": affected_ids[:VIEW_PAGE],
        "stale_count": len(affected_ids),
        "stale_rest": _stale_link(book.pk, "cascade-stale", seed) if more_nodes else None,
        "stale_artifacts": stale_slugs[:VIEW_PAGE],
        "stale_artifacts_count": len(stale_slugs),
        "stale_artifacts_rest": _stale_link(book.pk, "cascade-stale/artifacts", seed) if more_slots else None,
        "edges_left_active_graph": edges_count,
        "reruns": queued,
    }
