"""The loop page of a book: gate stepper, counters against bounds, plan-tree and traceability SVGs, questions."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from discovery.access import principal_for_user
from novelgraph.errors import DomainError

from . import selectors
from .models import GATE_ORDER
from .services.base import reader_book, trace_lint
from .svg import plan_tree_svg, trace_svg

GATE_NAMES = {
    "G0": "Intake",
    "G1": "Strategy",
    "G1.5": "Domain and bet",
    "G2": "Convergence",
    "G3": "Hand-off",
}


def _stepper(meta) -> list[dict]:
    current = GATE_ORDER.index(meta.gate)
    steps = []
    for i, gate in enumerate(GATE_ORDER):
        if meta.status == "handed-off" or i < current:
            state = "passed"
        elif i == current:
            state = "current"
        else:
            state = "upcoming"
        steps.append({"gate": gate, "name": GATE_NAMES[gate], "state": state})
    return steps


@login_required
def loop_page(request: HttpRequest, book_id) -> HttpResponse:
    try:
        book = reader_book(principal_for_user(request.user), book_id)
    except DomainError:
        raise Http404("book not found") from None
    view = selectors.loop_view(book)
    meta = view["meta"]
    report = trace_lint(book, strict=True)
    nodes = list(selectors.nodes_of(book))
    trace_nodes = list(selectors.trace_nodes_of(book))
    trace_edges = list(selectors.trace_edges_of(book))
    questions = list(selectors.questions_of(book).exclude(status="resolved"))
    context = {
        "book": book,
        "meta": meta,
        "view": view,
        "card": view["pending_card"],
        "steps": _stepper(meta),
        "counters": [
            {"label": "Rounds", "value": meta.round, "bound": meta.round_cap},
            {"label": "Cost", "value": f"{meta.cost_spent:g}", "bound": f"{meta.cost_budget:g}"},
            {"label": "Depth (max)", "value": max((n.depth for n in nodes), default=0), "bound": meta.max_depth},
            {"label": "Concentration", "value": "one subtree", "bound": f"{round(meta.concentration * 100)}%"},
        ],
        "plan_svg": plan_tree_svg(nodes),
        "trace_svg": trace_svg(trace_nodes, trace_edges, report),
        "lint": report.as_dict(),
        "questions": questions,
        "resolved_count": selectors.questions_of(book, "resolved").count(),
    }
    template = "loop/loop.html#loop-body" if request.htmx else "loop/loop.html"
    return render(request, template, context)
