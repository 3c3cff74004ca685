"""The author's review flow: inbox, decision page, the book's decision log (server-rendered, HTMX partials).

Views are thin: they read through ``approvals.selectors`` and decide through
``approvals.services.approval_decide``, exactly as the API does.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from discovery.access import Cap, Principal, book_for, principal_for_user
from discovery.models import Book
from novelgraph.errors import Conflict, DomainError, Forbidden, Invalid, NotFound

from .models import Approval
from .selectors import (
    approval_for,
    approval_view,
    decision_log_newest_first,
    decision_log_verify,
    inbox_for,
    pending_count_for,
)
from .services import VERDICT_NEEDS_CONSTRAINT, approval_decide

PER_PAGE = 50
# A page number beyond this is the last page anyone could have: larger numbers (20 digits and more)
# would reach the database as an offset it cannot hold.
MAX_PAGE = 1_000_000
APPROVALS_CHANGED = "approvals-changed"


def _page_number(request: HttpRequest) -> int:
    try:
        return min(MAX_PAGE, max(1, int(request.GET.get("page", "1"))))
    except ValueError:
        return 1


def _principal(request: HttpRequest) -> Principal:
    return principal_for_user(request.user)


def _book_filter(request: HttpRequest) -> Book | None:
    """The ``?book=`` the inbox is narrowed to: one of the person's books, else a 404."""
    raw = request.GET.get("book")
    if not raw:
        return None
    try:
        return _principal(request).visible_books().get(pk=uuid.UUID(raw))
    except (ValueError, Book.DoesNotExist):
        raise Http404("book not found") from None


@login_required
@require_GET
def inbox(request: HttpRequest) -> HttpResponse:
    """Pending decisions across the person's books, newest first, with counts per book."""
    if request.htmx and request.GET.get("nav"):
        current = request.htmx.current_url_abs_path or ""
        context = {"pending": pending_count_for(request.user), "current": current.startswith("/review/")}
        return render(request, "approvals/nav_item.html", context)
    if request.htmx and request.GET.get("compact"):
        sidebar = inbox_for(_principal(request), limit=10, superseded_limit=0)
        return render(request, "approvals/inbox.html#inbox-compact", {"sidebar": sidebar})
    page = _page_number(request)
    book = _book_filter(request)
    box = inbox_for(
        _principal(request), offset=(page - 1) * PER_PAGE, limit=PER_PAGE, book_id=book.pk if book else None
    )
    pages = max(1, -(-box.pending_total // PER_PAGE))
    context = {
        "inbox": box,
        "page": page,
        "pages": pages,
        "previous_page": page - 1 if page > 1 else None,
        "next_page": page + 1 if page < pages else None,
        "book": book,
        "query": f"book={book.pk}&" if book else "",
    }
    template = "approvals/inbox.html#inbox-list" if request.htmx else "approvals/inbox.html"
    return render(request, template, context)


def _decision_context(request: HttpRequest, approval: Approval, **extra) -> dict:
    principal = _principal(request)
    view = approval_view(approval)
    may_decide = principal.role_for(approval.book) == "author"
    shown = {"title", "fields", "source_refs", "impact", "type", "id", "exists"}
    if view.proposal.get("fields"):
        shown.add("content")
    context = {
        "view": view,
        "extras": [(k, v) for k, v in view.proposal.items() if k not in shown],
        "approval": approval,
        "may_decide": may_decide,
        "needs_text": {str(k): v for k, v in VERDICT_NEEDS_CONSTRAINT.items()},
        "form": {"verdict": "", "rationale": "", "constraint": ""},
        "error": None,
        "error_field": None,
        "sidebar": inbox_for(principal, limit=10, superseded_limit=0),
    }
    context.update(extra)
    return context


@login_required
@require_http_methods(["GET", "POST"])
def decision(request: HttpRequest, approval_id: uuid.UUID) -> HttpResponse:
    """What is proposed, by whom, from which sources, with what impact; the author's verdict form."""
    principal = _principal(request)
    try:
        approval = approval_for(principal, approval_id)
    except NotFound:
        raise Http404("approval not found") from None
    if request.method == "GET":
        return render(request, "approvals/decision.html", _decision_context(request, approval))

    form = {
        "verdict": request.POST.get("verdict", ""),
        "rationale": request.POST.get("rationale", ""),
        "constraint": request.POST.get("constraint", ""),
    }
    try:
        approval_decide(
            principal=principal,
            approval_id=approval.pk,
            verdict=form["verdict"],
            rationale=form["rationale"],
            constraint=form["constraint"],
        )
    except Forbidden as exc:
        context = _decision_context(request, approval, error=exc.message)
        return render(request, "approvals/decision.html", context, status=403)
    except (Invalid, Conflict) as exc:
        approval.refresh_from_db()
        context = _decision_context(
            request, approval, form=form, error=exc.message, error_field=getattr(exc, "field", None)
        )
        if request.htmx:
            response = render(request, "approvals/decision.html#decision-panel", context)
            if isinstance(exc, Conflict):
                response["HX-Trigger"] = APPROVALS_CHANGED
            return response
        return render(request, "approvals/decision.html", context, status=exc.status)
    except DomainError as exc:  # pragma: no cover - every rule above raises one of the classes handled
        raise Http404(exc.message) from exc
    if request.htmx:
        approval.refresh_from_db()
        response = render(request, "approvals/decision.html#decision-panel", _decision_context(request, approval))
        response["HX-Trigger"] = APPROVALS_CHANGED
        return response
    return redirect(reverse("approvals:decision", args=[approval.pk]), permanent=False)


@login_required
@require_GET
def book_log(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The book's decision log, newest first, with its verification badge and the export link."""
    try:
        book = book_for(_principal(request), book_id, Cap.BOOK_READ)
    except (NotFound, Forbidden):
        raise Http404("book not found") from None
    verification = decision_log_verify(book)
    entries = decision_log_newest_first(book)
    total = entries.count()
    page = _page_number(request)
    pages = max(1, -(-total // PER_PAGE))
    page = min(page, pages)
    context = {
        "book": book,
        "verification": verification,
        "entries": list(entries[(page - 1) * PER_PAGE : page * PER_PAGE]),
        "total": total,
        "page": page,
        "pages": pages,
        "previous_page": page - 1 if page > 1 else None,
        "next_page": page + 1 if page < pages else None,
        "export_url": reverse("api:decision_log_export", args=[book.pk]),
    }
    template = "approvals/log.html#log-entries" if request.htmx else "approvals/log.html"
    return render(request, template, context)
