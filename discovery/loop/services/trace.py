"""Traceability nodes and edges. Any loop writer adds them; the lint judges the graph.

An edge's ends are node ids as strings, so a dangling edge can be stored and is
reported by the lint (always a failure) rather than refused. A self-edge and
cycles are stored too and reported the same way.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from discovery.access import BookAccess
from novelgraph.core.errors import Conflict, Forbidden, Invalid, NotFound

from ..models import ArtifactStatus, BlackboardArtifact, RosterEntry, TraceEdge, TraceNode, TraceStatus
from ..schemas import TraceEdgeIn, TraceEdgeWithdrawIn, TraceNodeIn, TraceSettingsIn, WithdrawIn
from .base import controller_book, lens_book, lock_meta, refresh


def own_lenses(role: str) -> set[str]:
    """The lenses the roster names ``role`` for: the names a node of ``role``'s may be signed with, beside the role."""
    return set(RosterEntry.objects.filter(agent_role=role).values_list("slug", flat=True))


def trace_signature(role: str, named: str, slot: BlackboardArtifact | None) -> str:
    """Who a new traceability node is signed by: always the caller. ``named`` (the body's ``produced_by``) only
    chooses among the caller's own names, its role or a lens the roster names for it; any other name (another
    role, another role's lens, the author) is a 403 naming the field. Unnamed, a node backed by a slot of one of
    the caller's lenses is signed with that lens, any other with the caller's role."""
    mine = own_lenses(role)
    if named:
        if named != role and named not in mine:
            choices = ", ".join(sorted({role, *mine}))
            raise Forbidden(
                f"produced_by: {role} signs its traceability nodes only as itself ({choices}), not as {named!r}",
                code="not_your_name",
                field="produced_by",
            )
        return named
    if slot is not None and slot.lens in mine:
        return slot.lens
    return role


def _unclaimed_root(meta, node: TraceNode) -> bool:
    """The root node the loop drew when it started (``seed_root``), still unsigned and active."""
    return node.node_id == meta.trace_root and not node.produced_by and node.status == TraceStatus.ACTIVE


def trace_node_add(*, access: BookAccess, payload: TraceNodeIn) -> TraceNode:
    """A traceability node, signed by its caller (``trace_signature``): the lint judges it, the cascade re-runs
    the lens that signed it, and only that lens's role withdraws it."""
    book, role = lens_book(access)
    node_id, artifact = payload.node_id, payload.artifact
    with transaction.atomic():
        meta = lock_meta(book)
        slot = None
        if artifact:
            slot = BlackboardArtifact.objects.filter(book=book, slug=artifact).first()
            if slot is None:
                raise Invalid(f"no slot {artifact!r}", field="artifact")
        produced_by = trace_signature(role, payload.produced_by, slot)
        existing = TraceNode.objects.filter(book=book, node_id=node_id).first()
        if existing is not None and _unclaimed_root(meta, existing):
            # The root the loop drew when it started: the first lens that draws it takes it as its own.
            existing.kind, existing.label, existing.backed_by = payload.kind, payload.label, payload.backed_by
            existing.artifact, existing.produced_by = slot, produced_by
            existing.save(update_fields=["kind", "label", "backed_by", "artifact", "produced_by", "updated_at"])
            refresh(meta)
            return existing
        if existing is not None:
            raise Conflict(f"traceability node {node_id!r} exists", code="exists")
        node = TraceNode.objects.create(
            book=book,
            node_id=node_id,
            kind=payload.kind,
            label=payload.label,
            backed_by=payload.backed_by,
            artifact=slot,
            produced_by=produced_by,
        )
        refresh(meta)
        return node


def trace_edge_add(*, access: BookAccess, payload: TraceEdgeIn) -> TraceEdge:
    book, _ = lens_book(access)
    from_id, to_id = payload.from_id, payload.to_id
    with transaction.atomic():
        meta = lock_meta(book)
        if TraceEdge.objects.filter(book=book, from_id=from_id, to_id=to_id, active=True).exists():
            raise Conflict(f"edge {from_id} -> {to_id} exists", code="exists")
        edge = TraceEdge.objects.create(book=book, from_id=from_id, to_id=to_id)
        refresh(meta)
        return edge


def trace_settings(*, access: BookAccess, payload: TraceSettingsIn):
    """The controller names the graph's root node id and leaf kind (either left out or null is kept)."""
    book, _ = controller_book(access)
    with transaction.atomic():
        meta = lock_meta(book)
        if payload.root is not None:
            meta.trace_root = payload.root
        if payload.leaf_kind is not None:
            meta.leaf_kind = payload.leaf_kind
        refresh(meta)
        return meta


# --- Withdrawing one's own unratified work ------------------------------------------------------


def _owners(book, produced_by: str) -> set[str]:
    """The roles that own a traceability node: the lens's agent role (from the roster), or the role named."""
    owners = {produced_by} if produced_by in {"sol", "terra", "luna", "author"} else set()
    entry = RosterEntry.objects.filter(slug=produced_by).values_list("agent_role", flat=True).first()
    if entry:
        owners.add(entry)
    return owners


def _ratified(node: TraceNode | None) -> bool:
    return node is not None and node.artifact_id is not None and node.artifact.status == ArtifactStatus.RATIFIED


def _refuse_ratified(what: str) -> None:
    raise Conflict(
        f"{what} is ratified: removing it goes through the cascade (cascade-preview) and the author's verdict",
        code="ratified",
    )


def _require_owner(book, role: str, node: TraceNode, what: str) -> None:
    if role not in _owners(book, node.produced_by):
        raise Forbidden(
            f"{what} was produced by {node.produced_by or 'no lens'}; {role} withdraws only its own",
            code="not_owner",
        )


def trace_node_withdraw(*, access: BookAccess, node_id: str, payload: WithdrawIn) -> TraceNode:
    """A lens withdraws a traceability node it produced and nobody ratified: the node is abandoned
    (kept in history with the reason) and its active edges leave the graph. Another lens's node is a
    403; a ratified one (backed by a ratified slot) is a 409: the cascade and the author remove it."""
    book, role = lens_book(access)
    reason = payload.reason
    with transaction.atomic():
        meta = lock_meta(book)
        node = (
            TraceNode.objects.select_for_update(of=("self",))
            .select_related("artifact")
            .filter(book=book, node_id=node_id)
            .first()
        )
        if node is None or node.status != TraceStatus.ACTIVE:
            raise NotFound("no such active traceability node")
        _require_owner(book, role, node, f"node {node_id}")
        if _ratified(node):
            _refuse_ratified(f"node {node_id}")
        why = f"withdrawn by {role}" + (f": {reason}" if reason else "")
        node.status = TraceStatus.ABANDONED
        node.status_reason = why[:2000]
        node.save(update_fields=["status", "status_reason", "updated_at"])
        TraceEdge.objects.filter(book=book, active=True).filter(Q(from_id=node_id) | Q(to_id=node_id)).update(
            active=False, inactive_reason=f"its node {node_id} was {why}"[:2000]
        )
        refresh(meta)
        return node


def trace_edge_withdraw(*, access: BookAccess, payload: TraceEdgeWithdrawIn) -> TraceEdge:
    """A lens withdraws an active edge it drew (its from-node is the lens's own) that touches nothing
    ratified; a ratified end makes it a 409 (the cascade and the author remove it)."""
    book, role = lens_book(access)
    from_id, to_id, reason = payload.from_id, payload.to_id, payload.reason
    with transaction.atomic():
        meta = lock_meta(book)
        edge = (
            TraceEdge.objects.select_for_update().filter(book=book, from_id=from_id, to_id=to_id, active=True).first()
        )
        if edge is None:
            raise NotFound("no such active edge")
        ends = {
            n.node_id: n
            for n in TraceNode.objects.select_related("artifact").filter(book=book, node_id__in=[from_id, to_id])
        }
        source = ends.get(from_id)
        if source is None:
            raise Forbidden(
                f"edge {from_id} -> {to_id} has no producing node; {role} cannot claim it", code="not_owner"
            )
        _require_owner(book, role, source, f"edge {from_id} -> {to_id}")
        if _ratified(source) or _ratified(ends.get(to_id)):
            _refuse_ratified(f"edge {from_id} -> {to_id}")
        edge.active = False
        edge.inactive_reason = (f"withdrawn by {role}" + (f": {reason}" if reason else ""))[:2000]
        edge.save(update_fields=["active", "inactive_reason", "updated_at"])
        refresh(meta)
        return edge
