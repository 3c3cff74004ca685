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
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import trigger_client_event

from discovery.access import Cap, page_access
from novelgraph.core.auth import principal_for_user
from novelgraph.core.errors import Conflict, Forbidden, Invalid
from novelgraph.core.events import APPROVALS_CHANGED
from novelgraph.core.pages import partial_or_page
from novelgraph.core.pagination import page_at, page_offset, page_url, read_page
from novelgraph.core.schemas import parse_form

from .models import Verdict
from .review import decision_context, renewed, stale_message
from .schemas import VerdictIn
from .selectors import (
    approval_get,
    decision_log_newest_first,
    decision_log_verify,
    inbox_for,
    inbox_waiting,
    pending_count_for,
)
from .services import approval_decide
from .subjects import handler_for

PER_PAGE = 50


def _error_box(field: str, post) -> str | None:
    """The form's box a refusal names: ``constraint.round_cap`` is the grant box for it when she filled that box,
    else the constraint box's text."""
    head, _, rest = field.partition(".")
    if head == "constraint" and rest and post.get(f"grant_{rest}", "").strip():
        return f"grant_{rest}"
    return head or None


def grant_boxes(post) -> dict:
    """The grant boxes as she filled them, kept when the form comes back with an error."""
    return {key: post.get(key, "") for key in post if key.startswith("grant_")}


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
        # Beside the decisions, each registered section of what else waits (approvals.waiting): the observations
        # to confirm, with their actions, and the questions routed to the author.
        "waiting": inbox_waiting(principal, book_id=book.pk if book else None),
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
    template = partial_or_page(request, "approvals/inbox.html", "inbox-list")
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


@login_required
@require_http_methods(["GET", "POST"])
def decision(request: HttpRequest, approval_id: uuid.UUID) -> HttpResponse:
    """What is proposed, by whom, from which sources, with what impact; the author's verdict form.

    A verdict sent in place (htmx) answers with the decision panel: 200 and the log entry when recorded, the
    refusal's own status (422 invalid, 409 stale) when not, as every decision surface answers; without htmx a
    recorded verdict redirects to this page and a refused one shows it with the message."""
    principal = principal_for_user(request.user)
    access, approval = approval_get(principal, approval_id)
    said, status, refusal = {}, 200, None
    if request.method == "POST":
        form = {key: request.POST.get(key, "") for key in ("verdict", "rationale", "constraint")}
        handler = handler_for(approval)
        choosing = handler.choice_from_form
        choice = choosing(request.POST) if choosing else {}
        try:
            # Fields of the form's own for the constraint (an extend's grant boxes) come before any words in it.
            boxes = handler.constraint_from_form
            given = boxes(request.POST, form["verdict"]) if boxes else ""
            sent = {**form, "constraint": f"{given} {form['constraint'].strip()}".strip()} if given else form
            # A choice counts only when she approves (the radios stay on the form whatever the verdict).
            payload = parse_form(VerdictIn, {**sent, **(choice if form["verdict"] == Verdict.APPROVE else {})})
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
            said, status, refusal = {"error": exc.message}, 403, exc
        except (Invalid, Conflict) as exc:
            approval.refresh_from_db()
            said = {
                "form": {**form, **choice, **grant_boxes(request.POST)},
                "error": stale_message(approval) or exc.message,
                # The form's box, for a field inside it ("constraint.round_cap" is the constraint box's text).
                "error_field": _error_box(getattr(exc, "field", None) or "", request.POST),
                "oob": bool(request.htmx),
                "renewed": renewed(approval),
            }
            status, refusal = exc.status, exc
        else:
            if not request.htmx:
                return redirect(reverse("approvals:decision", args=[approval.pk]), permanent=False)
            approval.refresh_from_db()
            said = {"oob": True}
    # The waiting list beside the card is hers (after her verdict, if she sent one), whichever approval she opened.
    sidebar = inbox_for(principal, limit=10, superseded_limit=0)
    context = decision_context(access, approval, request.GET, sidebar=sidebar, **said)
    in_place = request.method == "POST" and status != 403
    template = (
        partial_or_page(request, "approvals/decision.html", "decision-panel") if in_place else "approvals/decision.html"
    )
    response = render(request, template, context, status=status)
    # The counts on the page refresh when a verdict was recorded, or refused because another decided meanwhile.
    if in_place and request.htmx and (refusal is None or isinstance(refusal, Conflict)):
        trigger_client_event(response, APPROVALS_CHANGED)
    return response


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
    template = partial_or_page(request, "approvals/log.html", "log-entries")
    return render(request, template, context)
