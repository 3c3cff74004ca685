"""The author's review flow: inbox, decision page, the book's decision log (server-rendered, HTMX partials).

Views are thin: they read through ``approvals.selectors`` and decide through
``approvals.services.approval_decide``, exactly as the API does.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from discovery.access import BookAccess, Cap, page_access
from discovery.selectors import approval_conflicts
from novelgraph.core.auth import principal_for_user
from novelgraph.core.errors import Conflict, Forbidden, Invalid
from novelgraph.core.events import APPROVALS_CHANGED, announce
from novelgraph.core.pagination import page_at, page_offset, page_url, read_page
from novelgraph.core.runs import produced_by
from novelgraph.core.schemas import parse_form
from novelgraph.core.words import AGENT_NAMES

from .models import Approval, Verdict
from .schemas import VerdictIn
from .selectors import (
    approval_get,
    approval_view,
    decision_log_newest_first,
    decision_log_verify,
    inbox_for,
    pending_count_for,
)
from .services import VERDICT_NEEDS_CONSTRAINT, approval_decide
from .subjects import handler_for
from .wording import VERDICT_PAST, verdict_help

PER_PAGE = 50


def _page_of(request: HttpRequest, items, count: int | None = None):
    """One page of ``items`` (Django's Paginator: a bad or too-large ``?page=`` shows the nearest page)."""
    paginator = Paginator(items, PER_PAGE)
    if count is not None:
        paginator.count = count
    return paginator.get_page(request.GET.get("page"))


@login_required
@require_GET
def inbox(request: HttpRequest) -> HttpResponse:
    """Pending decisions across the person's books, newest first, with counts per book."""
    principal = principal_for_user(request.user)
    if request.htmx and request.GET.get("nav"):
        current = request.htmx.current_url_abs_path or ""
        context = {"pending": pending_count_for(request.user), "current": current.startswith("/review/")}
        return render(request, "approvals/nav_item.html", context)
    if request.htmx and request.GET.get("compact"):
        sidebar = inbox_for(principal, limit=10, superseded_limit=0)
        return render(request, "approvals/inbox.html#inbox-compact", {"sidebar": sidebar})
    book = page_access(request, request.GET["book"]).book if request.GET.get("book") else None
    # The per-book counts and the lapsed approvals are paged too (50 at a time, plain links keeping the other places).
    offsets = {name: page_offset(request.GET.get(name)) for name in ("books_offset", "superseded_offset")}
    box = inbox_for(principal, book_id=book.pk if book else None, superseded_offset=offsets["superseded_offset"])
    page = _page_of(request, box.pending, count=box.pending_total)
    books = page_at(box.counts, offsets["books_offset"], PER_PAGE)
    keep = {"book": book.pk if book else None, **offsets}
    query = urlencode({k: v for k, v in keep.items() if v})
    lapsed = read_page(offsets["superseded_offset"], len(box.superseded), box.superseded_more, PER_PAGE)
    context = {
        "inbox": replace(box, pending=list(page.object_list), counts=books["items"]),
        "page_obj": page,
        "page": page.number,
        "pages": page.paginator.num_pages,
        "previous_page": page.previous_page_number() if page.has_previous() else None,
        "next_page": page.next_page_number() if page.has_next() else None,
        "book": book,
        "query": f"{query}&" if query else "",
        "books_pager": _inbox_pager(keep, page.number, books, "books_offset"),
        "superseded_pager": _inbox_pager(keep, page.number, lapsed, "superseded_offset"),
    }
    template = "approvals/inbox.html#inbox-list" if request.htmx else "approvals/inbox.html"
    return render(request, template, context)


def _inbox_pager(keep: dict, page: int, at: dict, param: str) -> dict:
    """Previous / next links of one of the inbox's paged lists, keeping the book, the pending page and the other
    list's place."""
    base, places = reverse("approvals:inbox"), {**keep, "page": page if page > 1 else None}

    def link(offset: int | None) -> str | None:
        return None if offset is None else page_url(base, places, **{param: offset})

    return {
        **at,
        "previous_url": link(at["previous"]),
        "next_url": link(at["next"]),
        # An offset past the end of the list: the way back to its first page.
        "first_url": link(0) if at.get("past_end") else None,
    }


CARD_KINDS = {
    "gate": "gate card",
    "bound": "bound card (the loop paused at a limit)",
    "consent": "consent card (a one-way door)",
    "cascade": "cascade card (confirm what goes stale)",
}


def card_fields(card: dict | None) -> dict:
    """A loop option card as labelled, readable fields (no ids, no schema version)."""
    if not card:
        return {}
    fields = {
        "Kind": CARD_KINDS.get(card.get("kind"), card.get("kind")),
        "Gate": card.get("gate"),
        "What is asked": card.get("summary"),
        "Decisions requested": card.get("decisions_requested"),
        "Recommended": card.get("recommended"),
        "Reversibility": (card.get("reversibility_class") or "").replace("-", " "),
        "Slots it covers": card.get("artifacts"),
        "Bound reached": card.get("bound"),
        "Proposed extension": card.get("proposed_extension"),
        "Risk triggers": card.get("risk_triggers"),
        "Rests on": card.get("trace_seed"),
        "Raised by": AGENT_NAMES.get(card.get("raised_by"), card.get("raised_by")),
        "Round": card.get("round"),
    }
    return {label: value for label, value in fields.items() if value not in (None, "", [], {})}


def impact_fields(impact) -> dict | None:
    """A cascade preview in words: what would go stale, which lenses re-run, whether it needs confirming."""
    if not isinstance(impact, dict) or "affected" not in impact:
        return impact
    if impact.get("already_applied"):
        return {"Already applied": f"what this rests on is already {impact.get('seed_status')}; nothing more changes"}
    affected = []
    for a in impact.get("affected") or []:
        rerun = f", re-run by {a['lens']}" if a.get("lens") else ""
        affected.append(f"{a.get('artifact') or a.get('node_id')} ({a.get('kind')}{rerun})")
    return {
        "Would go stale": affected or "nothing",
        "Lenses that would re-run": impact.get("lenses") or "none",
        "Needs your confirmation": (
            f"yes: {len(affected)} slots is more than the limit of {impact.get('limit'):g}"
            if impact.get("breaker")
            else "no"
        ),
    }


def subject_name(approval: Approval, proposal: dict) -> str:
    """What the decision is about, by its name (never its id)."""
    card = proposal.get("card") or {}
    return proposal.get("title") or card.get("summary") or approval.summary


def _decision_context(request: HttpRequest, access: BookAccess, approval: Approval, **extra) -> dict:
    view = approval_view(access, approval)
    shown = {"title", "fields", "changes", "source_refs", "impact", "type", "id", "exists", "card", "verdicts"}
    shown.add("thrusts")  # a G1.5 card's thrusts are offered on the form, not listed as details
    if view.proposal.get("fields"):
        shown.add("content")
    card = view.proposal.get("card") or {}
    offered = view.proposal.get("verdicts") or view.verdicts
    offered = [v for v in view.verdicts if v in offered]
    context = {
        "view": view,
        "subject_name": subject_name(approval, view.proposal),
        "card_fields": card_fields(card),
        "impact": impact_fields(view.impact),
        "verdict_choices": [
            (v, Verdict(v).label, verdict_help(approval.kind, v, card.get("kind"), card.get("gate"))) for v in offered
        ],
        "extras": [
            (k, v)
            for k, v in view.proposal.items()
            if k not in shown and k not in {"research_id", "version", "content"} and v not in (None, "", [], {})
        ],
        "approval": approval,
        "may_decide": access.is_author,
        "needs_text": {str(k): v for k, v in VERDICT_NEEDS_CONSTRAINT.items()},
        "form": {"verdict": "", "rationale": "", "constraint": ""},
        "error": None,
        "error_field": None,
        "sidebar": inbox_for(access.principal, limit=10, superseded_limit=0),
        "oob": False,
        # The agent run that asked for this decision (a charter draft, a claim, a gate card), if one did.
        "run": produced_by("approval", [approval.pk]).get(str(approval.pk)),
        # A proposed claim that contradicts approved canon: both sides, for the author's verdict; and the
        # scratchpad's contradiction entries that name it (they stay, whatever she decides).
        **_contradictions(request, access, approval),
    }
    context.update(extra)
    context["thrusts"] = _thrust_choices(view.proposal.get("thrusts") or [], context["form"])
    return context


def _thrust_choices(thrusts: list[dict], form: dict) -> list[dict]:
    """A G1.5 card's open thrusts as the form shows them: the one checked (the author's last choice, else the
    recommended one) and the reason she wrote for each, kept when the form comes back with an error."""
    chosen = form.get("thrust_id") or next((t["id"] for t in thrusts if t["recommended"]), "")
    reasons = form.get("not_chosen") or {}
    return [{**t, "checked": t["id"] == chosen, "reason": reasons.get(t["id"], "")} for t in thrusts]


NOT_CHOSEN_PREFIX = "not_chosen-"


def _thrust_form(post) -> dict:
    """The G1.5 choice as the decision form sends it: the ``thrust_id`` radio and a ``not_chosen-<id>`` text per
    thrust (blank ones left out; none for the chosen thrust itself, whatever was typed there)."""
    thrust_id = post.get("thrust_id", "").strip()
    if not thrust_id:
        return {}
    reasons = {
        key[len(NOT_CHOSEN_PREFIX) :]: text
        for key, text in post.items()
        if key.startswith(NOT_CHOSEN_PREFIX) and text.strip() and key[len(NOT_CHOSEN_PREFIX) :] != thrust_id
    }
    return {"thrust_id": thrust_id, "not_chosen": reasons}


def _renewed(approval: Approval) -> Approval | None:
    """A lapsed approval whose subject is put before the author again (a loop card): the one to decide now."""
    if approval.status != Approval.Status.SUPERSEDED:
        return None
    renew = handler_for(approval).renew
    return renew(approval) if renew is not None else None


def _stale_message(approval: Approval) -> str:
    """When the form was sent against a state that changed meanwhile, say what happened instead."""
    if approval.status == Approval.Status.DECIDED and approval.decided_at:
        who = approval.decided_by.get_username() if approval.decided_by else "the author"
        when = timezone.localtime(approval.decided_at).strftime("%H:%M")
        done = VERDICT_PAST.get(approval.verdict, "decided")
        return f"Already {done} by {who} at {when}; nothing was recorded."
    if approval.status == Approval.Status.SUPERSEDED:
        return "This approval lapsed (the proposal changed) before your verdict arrived; nothing was recorded."
    return ""


# The review page's paged lists and the query parameter each one's offset is read from.
CONTRADICTION_OFFSETS = {"conflicts": "conflicts_offset", "contradiction_entries": "entries_offset"}


def _contradictions(request: HttpRequest, access: BookAccess, approval: Approval) -> dict:
    """A page of the conflicts and one of the scratchpad's contradiction entries (each from its own
    ``?…_offset=``; past the end: the last page), with plain previous / next links that keep the other's place."""
    found = approval_conflicts(access, approval.subject_type, approval.subject_id)
    if approval.status != Approval.Status.PENDING:
        found["conflicts"] = []  # resolved by the verdict; the log entry names both sides
    offsets = {param: page_offset(request.GET.get(param)) for param in CONTRADICTION_OFFSETS.values()}
    base = reverse("approvals:decision", args=[approval.pk])

    def link(param: str, at: int | None) -> str | None:
        return None if at is None else page_url(base, offsets, **{param: at})

    context: dict = {}
    for name, rows in (("conflicts", found["conflicts"]), ("contradiction_entries", found["entries"])):
        param = CONTRADICTION_OFFSETS[name]
        page = page_at(rows, offsets[param])
        context[name] = page["items"]
        context[f"{name}_pager"] = {
            **page,
            "previous_url": link(param, page["previous"]),
            "next_url": link(param, page["next"]),
        }
    return context


@login_required
@require_http_methods(["GET", "POST"])
def decision(request: HttpRequest, approval_id: uuid.UUID) -> HttpResponse:
    """What is proposed, by whom, from which sources, with what impact; the author's verdict form."""
    access, approval = approval_get(principal_for_user(request.user), approval_id)
    if request.method == "GET":
        return render(request, "approvals/decision.html", _decision_context(request, access, approval))

    form = {key: request.POST.get(key, "") for key in ("verdict", "rationale", "constraint")}
    choice = _thrust_form(request.POST)
    try:
        # The thrust choice counts only when she approves (the radios stay on the form whatever the verdict).
        payload = parse_form(VerdictIn, {**form, **(choice if form["verdict"] == Verdict.APPROVE else {})})
        approval_decide(
            access=access,
            approval_id=approval.pk,
            verdict=payload.verdict,
            rationale=payload.rationale,
            constraint=payload.constraint,
            thrust_id=payload.thrust_id,
            not_chosen=payload.not_chosen,
        )
    except Forbidden as exc:
        context = _decision_context(request, access, approval, error=exc.message)
        return render(request, "approvals/decision.html", context, status=403)
    except (Invalid, Conflict) as exc:
        approval.refresh_from_db()
        context = _decision_context(
            request,
            access,
            approval,
            form={**form, **choice},
            error=_stale_message(approval) or exc.message,
            # The form's box, for a field inside it ("constraint.round_cap" is the constraint box's text).
            error_field=(getattr(exc, "field", None) or "").split(".", 1)[0] or None,
            oob=bool(request.htmx),
            renewed=_renewed(approval),
        )
        if request.htmx:
            response = render(request, "approvals/decision.html#decision-panel", context)
            if isinstance(exc, Conflict):
                announce(response, APPROVALS_CHANGED)
            return response
        return render(request, "approvals/decision.html", context, status=exc.status)
    if request.htmx:
        approval.refresh_from_db()
        response = render(
            request, "approvals/decision.html#decision-panel", _decision_context(request, access, approval, oob=True)
        )
        return announce(response, APPROVALS_CHANGED)
    return redirect(reverse("approvals:decision", args=[approval.pk]), permanent=False)


@login_required
@require_GET
def book_log(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The book's decision log, newest first, with its verification badge and the export link."""
    book = page_access(request, book_id, Cap.BOOK_READ).book
    page = _page_of(request, decision_log_newest_first(book))
    entry = request.GET.get("entry", "")
    if entry.isdigit() and "page" not in request.GET:  # ``?entry=N``: the page that holds entry #N (newest first)
        page = page.paginator.get_page((page.paginator.count - int(entry)) // PER_PAGE + 1)
    context = {
        "book": book,
        "verification": decision_log_verify(book),
        "entries": list(page.object_list),
        "total": page.paginator.count,
        "page": page.number,
        "pages": page.paginator.num_pages,
        "previous_page": page.previous_page_number() if page.has_previous() else None,
        "next_page": page.next_page_number() if page.has_next() else None,
        "export_url": reverse("api:decision_log_export", args=[book.pk]),
    }
    template = "approvals/log.html#log-entries" if request.htmx else "approvals/log.html"
    return render(request, template, context)
