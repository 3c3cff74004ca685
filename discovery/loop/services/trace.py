"""Traceability nodes and edges. Any loop writer adds them; the lint judges the graph.

An edge's ends are node ids as strings, so a dangling edge can be stored and is
reported by the lint (always a failure) rather than refused. A self-edge and
cycles are stored too and reported the same way.
"""

from __future__ import annotations

import re

from django.db import transaction

from discovery.access import BookAccess
from novelgraph.errors import Conflict, Invalid

from ..models import BackedBy, BlackboardArtifact, TraceEdge, TraceNode
from .base import check_text, controller_book, lens_book, lock_meta, refresh

NODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")
KIND = re.compile(r"^[a-z0-9][a-z0-9-]{0,59}$")


def trace_node_add(
    *,
    access: BookAccess,
    node_id: str,
    kind: str,
    label: str = "",
    backed_by: str = BackedBy.FILE,
    artifact: str | None = None,
    produced_by: str = "",
) -> TraceNode:
    book, _ = lens_book(access)
    if not NODE_ID.match(node_id or ""):
        raise Invalid("node_id: letters, digits, '-', '_', '.', ':' (at most 100)", field="node_id")
    if not KIND.match(kind or ""):
        raise Invalid("kind must be a lowercase slug", field="kind")
    if backed_by not in BackedBy.values:
        raise Invalid(f"backed_by must be one of {', '.join(BackedBy.values)}", field="backed_by")
    with transaction.atomic():
        meta = lock_meta(book)
        if TraceNode.objects.filter(book=book, node_id=node_id).exists():
            raise Conflict(f"traceability node {node_id!r} exists", code="exists")
        slot = None
        if artifact:
            slot = BlackboardArtifact.objects.filter(book=book, slug=artifact).first()
            if slot is None:
                raise Invalid(f"no slot {artifact!r}", field="artifact")
        node = TraceNode.objects.create(
            book=book,
            node_id=node_id,
            kind=kind,
            label=check_text(label, "label", 200, required=False),
            backed_by=backed_by,
            artifact=slot,
            produced_by=check_text(produced_by, "produced_by", 60, required=False) or (slot.lens if slot else ""),
        )
        refresh(meta)
        return node


def trace_edge_add(*, access: BookAccess, from_id: str, to_id: str) -> TraceEdge:
    book, _ = lens_book(access)
    for name, value in (("from", from_id), ("to", to_id)):
        if not NODE_ID.match(value or ""):
            raise Invalid(f"{name}: a node id (at most 100 characters)", field=name)
    with transaction.atomic():
        meta = lock_meta(book)
        if TraceEdge.objects.filter(book=book, from_id=from_id, to_id=to_id, active=True).exists():
            raise Conflict(f"edge {from_id} -> {to_id} exists", code="exists")
        edge = TraceEdge.objects.create(book=book, from_id=from_id, to_id=to_id)
        refresh(meta)
        return edge


def trace_settings(*, access: BookAccess, root: str | None = None, leaf_kind: str | None = None):
    """The controller names the graph's root node id and leaf kind."""
    book, _ = controller_book(access)
    with transaction.atomic():
        meta = lock_meta(book)
        if root is not None:
            if not NODE_ID.match(root):
                raise Invalid("root must be a node id", field="root")
            meta.trace_root = root
        if leaf_kind is not None:
            if not KIND.match(leaf_kind):
                raise Invalid("leaf_kind must be a lowercase slug", field="leaf_kind")
            meta.leaf_kind = leaf_kind
        refresh(meta)
        return meta
