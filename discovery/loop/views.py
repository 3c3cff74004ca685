"""The loop page of a book: gate stepper, counters against bounds, plan-tree and traceability SVGs, questions."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from discovery.access import page_access

from . import selectors
from .services.base import reader_book, trace_lint
from .svg import plan_tree_svg, trace_svg


@login_required
def loop_page(request: HttpRequest, book_id) -> HttpResponse:
    book = reader_book(page_access(request, book_id))
    template = "loop/loop.html#loop-body" if request.htmx else "loop/loop.html"
    if selectors.loop_meta(book) is None:
        # Reads never write: a book whose discovery has not started has no loop, and opening the page
        # does not make one. The loop begins when the discovery starts.
        return render(request, template, {"book": book, "not_started": True})
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
        "steps": selectors.gate_steps(meta),
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
    return render(request, template, context)
