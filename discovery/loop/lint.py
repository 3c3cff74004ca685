"""The traceability lint (LOOP.md), as a pure function over nodes and edges.

Findings, each node reported at most once:

- ``dangling``: an edge whose end is not an (active) node. Always a failure.
- ``cycle``: a cycle among the edges, including a self-edge. Always a failure.
- ``orphan``: a node other than the root with no producer, or a node not of the
  leaf kind with no consumer (a defect local to the node).
- ``unreachable``: a node that is not an orphan but is not reachable from the root
  or cannot reach a leaf (e.g. the inner nodes of a detached chain). A node is
  reported once: an orphan is not also reported as unreachable and vice versa.
  (If unreachability took precedence, no node could ever be an orphan: a node with
  no producer is never reachable from the root.)

Orphans and unreachable nodes are informational by default and failures in strict
mode; G2 runs strict.

Each finding's ``message`` says in words what is wrong, naming the parts by their labels, and its ``fix``
says how to mend it; ``code`` and ``nodes`` are for programs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

FAILURE = "failure"
INFO = "info"
# A finding's code in a word or two, where the page marks a node with it (the traceability picture).
IN_WORDS = {"orphan": "not linked", "dangling": "missing", "cycle": "circle", "unreachable": "cut off"}


@dataclass
class LintReport:
    strict: bool
    root: str
    leaf_kind: str
    findings: list[dict] = field(default_factory=list)

    @property
    def failures(self) -> list[dict]:
        return [f for f in self.findings if f["severity"] == FAILURE]

    @property
    def ok(self) -> bool:
        return not self.failures

    def flagged(self) -> dict[str, str]:
        """node id -> the finding code that names it (for drawing)."""
        marks: dict[str, str] = {}
        for finding in self.findings:
            for node in finding.get("nodes", []):
                marks.setdefault(node, finding["code"])
        return marks

    def as_dict(self) -> dict:
        counts: dict[str, int] = defaultdict(int)
        for finding in self.findings:
            counts[finding["code"]] += 1
        return {
            "strict": self.strict,
            "ok": self.ok,
            "root": self.root,
            "leaf_kind": self.leaf_kind,
            "counts": {code: counts.get(code, 0) for code in ("orphan", "dangling", "cycle", "unreachable")},
            "findings": self.findings,
        }


def _cycles(node_ids: list[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (iterative Tarjan), in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in node_ids:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            recurse = False
            children = succ.get(node, [])
            while i < len(children):
                child = children[i]
                i += 1
                if child not in index:
                    work.append((node, i))
                    work.append((child, 0))
                    recurse = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if recurse:
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def _reach(starts: list[str], succ: dict[str, list[str]]) -> set[str]:
    seen = set(starts)
    todo = list(starts)
    while todo:
        node = todo.pop()
        for nxt in succ.get(node, []):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _namer(nodes: list[dict]):
    """How a finding names a node: its label and its id (“Charter: protagonist” (charter-protagonist)), or the id."""
    labels = {n["id"]: (n.get("label") or "").strip() for n in nodes}

    def name(node_id: str) -> str:
        label = labels.get(node_id)
        return f"“{label}” ({node_id})" if label and label != node_id else f"'{node_id}'"

    return name


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _names(name, node_ids) -> str:
    shown = [name(n) for n in node_ids]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def lint(
    *,
    nodes: list[dict],
    edges: list[dict],
    root: str,
    leaf_kind: str,
    strict: bool = False,
) -> LintReport:
    """Lint a traceability graph. ``nodes``: [{id, kind, label?}]; ``edges``: [{from, to}] (active only)."""
    report = LintReport(strict=strict, root=root, leaf_kind=leaf_kind)
    name = _namer(nodes)
    soft = FAILURE if strict else INFO
    kinds = {n["id"]: n["kind"] for n in nodes}
    order = [n["id"] for n in nodes]
    succ: dict[str, list[str]] = defaultdict(list)
    pred: dict[str, list[str]] = defaultdict(list)
    seen_edges: set[tuple[str, str]] = set()
    for edge in edges:
        src, dst = edge["from"], edge["to"]
        missing = [end for end in (src, dst) if end not in kinds]
        if missing:
            report.findings.append(
                {
                    "code": "dangling",
                    "severity": FAILURE,
                    "edge": {"from": src, "to": dst},
                    "nodes": [end for end in (src, dst) if end in kinds],
                    "message": f"The link from {name(src)} to {name(dst)} points at "
                    f"{_names(name, missing)}, which is not drawn (or was withdrawn).",
                    "fix": f"Draw {_names(name, missing)} as a node, or withdraw the link from {name(src)} "
                    f"to {name(dst)}.",
                }
            )
            continue
        if src == dst:
            report.findings.append(
                {
                    "code": "cycle",
                    "severity": FAILURE,
                    "self_edge": True,
                    "edge": {"from": src, "to": dst},
                    "nodes": [src],
                    "message": f"{name(src)} is linked to itself.",
                    "fix": f"Withdraw the link from {name(src)} to itself.",
                }
            )
            continue
        if (src, dst) in seen_edges:
            continue
        seen_edges.add((src, dst))
        succ[src].append(dst)
        pred[dst].append(src)

    for component in _cycles(order, succ):
        report.findings.append(
            {
                "code": "cycle",
                "severity": FAILURE,
                "self_edge": False,
                "nodes": component,
                "message": f"{_names(name, component)} lead back to one another in a circle, so none of them "
                "traces back to the root.",
                "fix": "Withdraw one of the links in the circle, so that each part grows from the one before it.",
            }
        )

    if root not in kinds:
        report.findings.append(
            {
                "code": "unreachable",
                "severity": soft,
                "nodes": [],
                "message": f"Nothing is drawn as the root ('{root}'), so no part of the book traces back to it.",
                "fix": f"Draw the root node '{root}' (the premise), or name a node that is drawn as the root "
                "in the traceability settings.",
            }
        )
    from_root = _reach([root], succ) if root in kinds else set()
    leaves = [n for n in order if kinds[n] == leaf_kind]
    to_leaf = _reach(leaves, pred)

    for node in order:
        is_leaf = kinds[node] == leaf_kind
        no_producer = node != root and not pred.get(node)
        no_consumer = not is_leaf and not succ.get(node)
        if no_producer or no_consumer:
            why, fix = [], []
            if no_producer:
                why.append("nothing leads to it")
                fix.append("link it from the part it grows out of (the root or a part that traces back to it)")
            if no_consumer:
                why.append(f"it leads to no {leaf_kind}")
                fix.append(f"link it to what it feeds (a {leaf_kind}, or a part that leads to one)")
            report.findings.append(
                {
                    "code": "orphan",
                    "severity": soft,
                    "nodes": [node],
                    "message": f"{name(node)} is not connected: {' and '.join(why)}.",
                    "fix": f"{_sentence(' and '.join(fix))}; or withdraw it if the book no longer needs it.",
                }
            )
            continue
        if node not in from_root or node not in to_leaf:
            why, fix = [], []
            if node not in from_root:
                why.append(f"what leads to it does not trace back to the root ('{root}')")
                fix.append("link the first part of its chain from the root or from a part that traces back to it")
            if node not in to_leaf:
                why.append(f"what it feeds never reaches a {leaf_kind}")
                fix.append(f"link the last part of its chain to a {leaf_kind}")
            report.findings.append(
                {
                    "code": "unreachable",
                    "severity": soft,
                    "nodes": [node],
                    "message": f"{name(node)} is cut off: {' and '.join(why)}.",
                    "fix": f"{_sentence(' and '.join(fix))}.",
                }
            )
    return report
