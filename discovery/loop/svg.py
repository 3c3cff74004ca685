"""Server-side SVG pictures of the loop: the plan-tree and the traceability graph.

Layered layout computed here: a node's layer is its longest path from the root
(nodes the root does not reach go on layers of their own, after it); x is the node's
order within its layer. Pure SVG with <title>/<desc>, text labels on every node
(lifecycle, status, lint finding) so nothing is told by colour alone. Styling lives in
static/css/app.css (classes only; no style attributes, no scripts).
"""

from __future__ import annotations

from collections import defaultdict

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from .lint import IN_WORDS, LintReport
from .models import Lifecycle

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 170, 52, 24, 46, 16


def layers(ids: list[str], edges: list[tuple[str, str]], root: str | None) -> dict[str, int]:
    """Longest path from the root for reachable nodes (cycles cut); the rest layered from their own sources."""
    succ: dict[str, list[str]] = defaultdict(list)
    indeg: dict[str, int] = {i: 0 for i in ids}
    known = set(ids)
    for a, b in edges:
        if a in known and b in known and a != b:
            succ[a].append(b)
    # Cut back-edges with a DFS so the longest-path relaxation terminates.
    order: list[str] = []
    state: dict[str, int] = {}
    dag: dict[str, list[str]] = defaultdict(list)
    starts = ([root] if root in known else []) + ids
    for start in starts:
        if start in state:
            continue
        stack = [(start, iter(succ[start]))]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                order.append(node)
                stack.pop()
            elif state.get(nxt) == 1:
                continue  # back-edge: part of a cycle; not used for layering
            else:
                dag[node].append(nxt)
                if nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(succ[nxt])))
    for a in dag:
        for b in dag[a]:
            indeg[b] += 1
    depth: dict[str, int] = {}
    topo = list(reversed(order))
    for node in topo:
        if node not in depth and (indeg[node] == 0 or node == root):
            depth[node] = 0
        for nxt in dag[node]:
            depth[nxt] = max(depth.get(nxt, 0), depth.get(node, 0) + 1)
    for node in ids:
        depth.setdefault(node, 0)
    if root in known:
        reach = {root}
        todo = [root]
        while todo:
            for nxt in dag[todo.pop()]:
                if nxt not in reach:
                    reach.add(nxt)
                    todo.append(nxt)
        main_depth = max((depth[n] for n in reach), default=0)
        for node in ids:
            if node not in reach:
                depth[node] = main_depth + 1 + depth[node]
    return depth


def _positions(ids: list[str], depth: dict[str, int]) -> tuple[dict[str, tuple[int, int]], int, int]:
    rows: dict[int, list[str]] = defaultdict(list)
    for node in ids:
        rows[depth[node]].append(node)
    pos = {}
    width = max((len(r) for r in rows.values()), default=1)
    for layer, members in rows.items():
        for i, node in enumerate(members):
            pos[node] = (PAD + i * (NODE_W + GAP_X), PAD + layer * (NODE_H + GAP_Y))
    height = PAD * 2 + (max(rows, default=0) + 1) * (NODE_H + GAP_Y)
    return pos, PAD * 2 + width * (NODE_W + GAP_X), height


def _clip(text: str, n: int = 21) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _edge(a: tuple[int, int], b: tuple[int, int], cls: str) -> str:
    x1, y1 = a[0] + NODE_W // 2, a[1] + NODE_H
    x2, y2 = b[0] + NODE_W // 2, b[1]
    if y2 <= y1:  # an upward edge (a cycle): route it from the side
        x1, y1, x2, y2 = a[0] + NODE_W, a[1] + NODE_H // 2, b[0] + NODE_W, b[1] + NODE_H // 2
    return f'<line class="{cls}" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" marker-end="url(#arrow)"/>'


def _frame(svg_id: str, title: str, desc: str, width: int, height: int, body: list[str]) -> SafeString:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="loop-svg" id="{svg_id}" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-labelledby="{svg_id}-title {svg_id}-desc">'
        f'<title id="{svg_id}-title">{escape(title)}</title><desc id="{svg_id}-desc">{escape(desc)}</desc>'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="loop-arrow"/></marker></defs>'
    )
    return mark_safe(head + "".join(body) + "</svg>")


def plan_tree_svg(nodes: list) -> SafeString:
    """The plan-tree: nodes coloured and labelled by lifecycle, with a legend."""
    ids = [str(n.pk) for n in nodes]
    edges = [(str(n.parent_id), str(n.pk)) for n in nodes if n.parent_id]
    root = next((str(n.pk) for n in nodes if n.is_root), None)
    depth = layers(ids, edges, root)
    pos, width, height = _positions(ids, depth)
    legend_h = 30
    width = max(width, len(Lifecycle.values) * 110 + PAD * 2)
    body = [f'<g transform="translate(0,{legend_h})">']
    body += [_edge(pos[a], pos[b], "loop-edge") for a, b in edges if a in pos and b in pos]
    for n in nodes:
        x, y = pos[str(n.pk)]
        body.append(
            f'<g class="loop-node lc-{n.lifecycle}"><title>{escape(n.intent)} — {n.lifecycle}, '
            f"{n.validation_status}, {n.sub_idea}</title>"
            f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
            f'<text x="{x + 8}" y="{y + 20}" class="loop-label">{escape(_clip(n.intent))}</text>'
            f'<text x="{x + 8}" y="{y + 40}" class="loop-sub">{n.lifecycle} · {n.validation_status}</text></g>'
        )
    body.append("</g>")
    legend = ['<g class="loop-legend">']
    for i, value in enumerate(Lifecycle.values):
        lx = PAD + i * 110
        legend.append(
            f'<g class="lc-{value}"><rect x="{lx}" y="6" width="14" height="14" rx="3"/>'
            f'<text x="{lx + 20}" y="18" class="loop-sub">{value}</text></g>'
        )
    legend.append("</g>")
    return _frame(
        "plan-tree-svg",
        "Plan-tree",
        f"{len(nodes)} node(s), drawn by depth from the root; each node shows its intent, lifecycle and "
        "validation status.",
        width,
        height + legend_h,
        legend + body,
    )


def trace_svg(nodes: list, edges: list, report: LintReport) -> SafeString:
    """The traceability graph (active part; stale/rejected nodes greyed and labelled) with lint findings marked."""
    flagged = report.flagged()
    ids = [n.node_id for n in nodes]
    known = set(ids)
    ghosts = []
    for e in edges:
        for end in (e.from_id, e.to_id):
            if end not in known and end not in ghosts:
                ghosts.append(end)
    all_ids = ids + ghosts
    pairs = [(e.from_id, e.to_id) for e in edges if e.active]
    depth = layers(all_ids, pairs, report.root)
    pos, width, height = _positions(all_ids, depth)
    body = []
    for e in edges:
        if e.from_id in pos and e.to_id in pos:
            cls = "loop-edge" if e.active else "loop-edge loop-edge-inactive"
            if e.from_id == e.to_id:
                x, y = pos[e.from_id]
                body.append(
                    f'<path class="{cls} loop-edge-self" d="M {x + NODE_W} {y + 12} C {x + NODE_W + 30} {y - 10}, '
                    f'{x + NODE_W + 30} {y + NODE_H + 10}, {x + NODE_W} {y + NODE_H - 12}" marker-end="url(#arrow)"/>'
                )
            else:
                body.append(_edge(pos[e.from_id], pos[e.to_id], cls))
    for n in nodes:
        x, y = pos[n.node_id]
        finding = flagged.get(n.node_id)
        classes = f"loop-node tr-{n.status}" + (f" lint-{finding}" if finding else "")
        flag = IN_WORDS.get(finding, finding) if finding else ""
        tag = f" · {flag}" if finding else ""
        body.append(
            f'<g class="{classes}"><title>{escape(n.node_id)} ({escape(n.kind)}), {n.status}{tag}</title>'
            f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
            f'<text x="{x + 8}" y="{y + 20}" class="loop-label">{escape(_clip(n.label or n.node_id))}</text>'
            f'<text x="{x + 8}" y="{y + 40}" class="loop-sub">{escape(_clip(n.kind, 12 if finding else 20))}'
            f"{'' if n.status == 'active' else ' · ' + n.status}</text>"
            + (
                f'<text x="{x + NODE_W - 8}" y="{y + 40}" class="loop-flag" text-anchor="end">{flag}</text>'
                if finding
                else ""
            )
            + "</g>"
        )
    for ghost in ghosts:
        x, y = pos[ghost]
        body.append(
            f'<g class="loop-node lint-dangling loop-ghost"><title>missing: {escape(ghost)} is not drawn, but a link '
            f'points at it</title><rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
            f'<text x="{x + 8}" y="{y + 20}" class="loop-label">{escape(_clip(ghost))}</text>'
            f'<text x="{x + 8}" y="{y + 40}" class="loop-flag">missing: not drawn</text></g>'
        )
    counts = report.as_dict()["counts"]
    desc = (
        f"{len(nodes)} node(s) and {len(edges)} link(s); "
        + ("everything is connected" if report.ok else "some parts are not connected: ")
        + ("" if report.ok else ", ".join(f"{v} {IN_WORDS.get(k, k)}" for k, v in counts.items()))
    )
    return _frame("trace-svg", "Traceability graph", desc, width, height, body)
