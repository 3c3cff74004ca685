"""The loop page of a book: gate stepper, counters against bounds, plan-tree and traceability SVGs, questions.

It is one of the book's tabs, and it acts: the author picks a candidate (a thrust at G1.5) saying why the
others were not chosen (``candidate_select``, as ``POST .../loop/nodes/{id}/select``), and answers the
questions routed to her (``question_resolve``, as ``POST .../loop/questions/{id}/resolve``). Gate cards are
decided on their review page, through the same verdicts as everywhere.
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from discovery.access import BookAccess, Cap, page_access
from discovery.selectors import VIEW_PAGE
from novelgraph.core.errors import DomainError, Forbidden
from novelgraph.core.pages import partial_or_page
from novelgraph.core.schemas import parse_form

from . import selectors
from .models import CandidateStatus, QuestionStatus
from .requirements import CLOSED_SLOTS, gate_missing
from .schemas import GateIn, QuestionResolveIn, ReopenIn, SelectIn
from .selectors import trace_lint
from .services import candidate_select, gate_request, question_resolve
from .services.base import reader_book
from .services.cards import g15_thrusts
from .services.discovery_reopen import GATE_WORDS, discovery_reopen, discovery_reopen_impact, reopen_allowed
from .services.plan import WRITABLE_LIFECYCLE
from .services.sidecar import sidecar_folder
from .svg import plan_tree_svg, trace_svg


def _loop_context(access: BookAccess) -> dict:
    book = reader_book(access)
    if selectors.loop_meta(book) is None:
        # Reads never write: a book whose discovery has not started has no loop, and opening the page
        # does not make one. The loop begins when the discovery starts.
        return {"book": book, "role": access.role, "not_started": True}
    view = selectors.loop_view(book)
    meta = view["meta"]
    report = trace_lint(book, strict=True)
    nodes = list(selectors.nodes_of(book))
    trace_nodes = list(selectors.trace_nodes_of(book))
    trace_edges = list(selectors.trace_edges_of(book))
    questions = list(selectors.questions_of(book).exclude(status=QuestionStatus.RESOLVED))
    choosing = [
        (node, [c for c in selectors.candidates_of(node) if c.status == CandidateStatus.PROPOSED])
        for node in nodes
        if node.lifecycle in WRITABLE_LIFECYCLE
    ]
    card = view["pending_card"]
    artifacts = list(selectors.artifacts_of(book)[:VIEW_PAGE])
    constraints, constraints_total, constraints_more = selectors.meta_constraints_page(meta)
    recommended = str(((card.payload or {}).get("thrust") or {}).get("id", "")) if card else ""
    briefs = [a for a in artifacts if a.type == "decision-brief"]
    brief = next((a for a in briefs if a.status not in CLOSED_SLOTS), briefs[0] if briefs else None)
    return {
        "book": book,
        "role": access.role,
        "meta": meta,
        "view": view,
        "card": card,
        # A G1.5 card: the open thrusts the author chooses among on its review page, Sol's recommendation marked.
        "card_thrusts": [(t, str(t.pk) == recommended) for t in g15_thrusts(card)] if card else [],
        "steps": selectors.gate_steps(meta),
        "counters": [
            {"label": "Rounds", "value": meta.round, "bound": meta.round_cap},
            {"label": "Cost", "value": f"{meta.cost_spent:g}", "bound": f"{meta.cost_budget:g}"},
            {"label": "Depth (max)", "value": max((n.depth for n in nodes), default=0), "bound": meta.max_depth},
            {"label": "Concentration", "value": "one subtree", "bound": f"{round(meta.concentration * 100)}%"},
        ],
        "plan_svg": plan_tree_svg(nodes),
        "trace_svg": trace_svg(trace_nodes, trace_edges, report),
        # Where `manage.py loop_export` writes this book's loop as files (seed 002's sidecar); not created here.
        "sidecar_folder": str(sidecar_folder(book)),
        "lint": report.as_dict(),
        "questions": questions,
        "for_author": [q for q in questions if q.target_discipline == "author"],
        "choosing": [(node, open_ones) for node, open_ones in choosing if open_ones],
        "error_key": "",
        "error": "",
        "resolved_count": selectors.questions_of(book, "resolved").count(),
        "may_act": access.role == "author",
        "may_run": access.holds(Cap.DISCOVERY_WRITE) and not access.is_agent,
        # What the current gate still needs, with the action beside each item (the one rule the gate checks).
        "missing": gate_missing(book),
        # The blackboard: the decision brief, the scope boundary (slots and the constraints she recorded), the backlog.
        "brief": brief,
        "scope": [a for a in artifacts if a.type == "scope-boundary"],
        "constraints": constraints,
        "constraints_total": constraints_total,
        "constraints_more": constraints_more,
        "backlog": next((a for a in artifacts if a.type == "backlog"), None),
        # A brief kept when the discovery was reopened after a hand-off is listed with the other slots.
        "other_slots": [a for a in artifacts if a.type not in ("scope-boundary", "backlog") and a != brief],
        "reviews": list(selectors.reviews_of(book).select_related("lens")[:VIEW_PAGE]),
        "validation": list(selectors.validation_plan_of(book)[:VIEW_PAGE]),
    }


@login_required
def loop_page(request: HttpRequest, book_id) -> HttpResponse:
    context = _loop_context(page_access(request, book_id))
    template = partial_or_page(request, "loop/loop.html", "loop-body")
    return render(request, template, context)


def _refused(request: HttpRequest, access: BookAccess, key: str, exc: DomainError, draft: dict) -> HttpResponse:
    """The loop page again with the refusal beside the form that caused it (nothing was recorded)."""
    context = _loop_context(access)
    context.update(error_key=key, error=exc.message, draft=draft)
    return render(request, "loop/loop.html", context, status=exc.status)


@login_required
@require_POST
def candidate_pick(request: HttpRequest, book_id, node_id: uuid.UUID) -> HttpResponse:
    """The author picks one candidate of a node and says why the others were not chosen."""
    access = page_access(request, book_id)
    draft = {"candidate_id": request.POST.get("candidate_id", ""), "rationale": request.POST.get("rationale", "")}
    try:
        result = candidate_select(access=access, node_id=node_id, payload=parse_form(SelectIn, draft))
    except DomainError as exc:
        return _refused(request, access, str(node_id), exc, draft)
    if result.get("consent_required"):
        return redirect("approvals:decision", approval_id=result["approval_id"])
    messages.success(request, "Picked. The others are kept, with why they were not chosen.")
    return redirect(f"{reverse('loop:page', args=[access.book.pk])}#choose-{node_id}")


@login_required
@require_POST
def question_answer(request: HttpRequest, book_id, question_id: uuid.UUID) -> HttpResponse:
    """The author answers a question routed to her; by default her answer itself settles it
    (it cites the question), or it cites a slot or a decision she names."""
    access = page_access(request, book_id)
    draft = {
        "resolution": request.POST.get("resolution", ""),
        "cites": request.POST.get("cites", "") or f"question:{question_id}",
    }
    try:
        question_resolve(access=access, question_id=question_id, payload=parse_form(QuestionResolveIn, draft))
    except DomainError as exc:
        return _refused(request, access, str(question_id), exc, draft)
    messages.success(request, "Answered. The question is resolved with your answer.")
    return redirect(f"{reverse('loop:page', args=[access.book.pk])}#questions-h")


HAND_OFF = {
    "summary": "Hand off to drafting: ratify the decision brief and start Chapter 1",
    "decisions_requested": ["Does this brief hand the book to drafting?"],
    "recommended": "approve",
    "reversibility_class": "reversible",
    "artifacts": ["decision-brief"],
}


@login_required
@require_POST
def hand_off(request: HttpRequest, book_id) -> HttpResponse:
    """The author asks for G3 herself (``gate_request``, as ``POST .../loop/gates/G3/request``), the decision brief
    on the card: her verdict there ratifies it and hands off; a brief already ratified hands off at once."""
    access = page_access(request, book_id)
    try:
        if access.role != "author":
            raise Forbidden("only the author hands her book off", code="not_author")
        result = gate_request(access=access, gate="G3", payload=parse_form(GateIn, HAND_OFF))
    except DomainError as exc:
        return _refused(request, access, "hand-off", exc, {})
    if result.get("approval_id"):
        return redirect("approvals:decision", approval_id=result["approval_id"])
    messages.success(request, "Handed off: drafting starts at Chapter 1.")
    return redirect("discovery:book", book_id=access.book.pk)


# --- Reopening discovery after hand-off -------------------------------------------------------------


def _reopen_page(request: HttpRequest, access: BookAccess, draft: dict, error: DomainError | None = None):
    """The reopen page: the gate she picked, what reopening there touches, and the form that confirms it."""
    impact, refusal = None, error
    try:
        impact = discovery_reopen_impact(book=access.book, gate=draft["gate"])
    except DomainError as exc:
        refusal = refusal or exc
    context = {
        "book": access.book,
        "role": access.role,
        "gates": [(gate, words) for gate, words in GATE_WORDS.items()],
        "draft": draft,
        "impact": impact,
        "error": refusal,
    }
    return render(request, "loop/reopen.html", context, status=refusal.status if refusal else 200)


@login_required
def reopen(request: HttpRequest, book_id) -> HttpResponse:
    """The author looks at what reopening her handed-off discovery at a gate touches (GET), then confirms it with a
    rationale (POST: ``discovery_reopen``, as ``POST /api/v1/books/{id}/reopen`` with ``confirm: true``)."""
    access = page_access(request, book_id)
    reopen_allowed(access)
    source = request.POST if request.method == "POST" else request.GET
    draft = {"gate": source.get("gate", "G3"), "rationale": source.get("rationale", "")}
    if request.method != "POST":
        return _reopen_page(request, access, draft)
    try:
        payload = parse_form(ReopenIn, {**draft, "confirm": True})
        result = discovery_reopen(access=access, gate=payload.gate, rationale=payload.rationale, confirm=True)
    except DomainError as exc:
        return _reopen_page(request, access, draft, exc)
    messages.success(
        request, f"Discovery reopened at {result['gate']}: the agents pick up from there, and your chapters stay."
    )
    return redirect("discovery:book", book_id=access.book.pk)
