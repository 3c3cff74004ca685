"""Browser pages (server-rendered, HTMX partials): the library search page and a book's research."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from discovery.access import BookAccess, Cap, page_access
from discovery.views import book_links
from novelgraph.auth import principal_for_user
from novelgraph.errors import DomainError, Invalid, NotFound
from novelgraph.schemas import parse_form

from . import search as search_index
from . import services
from .models import ResearchItem
from .schemas import ResearchDecideIn, SearchParams
from .search import MAX_QUERY_CHARS
from .selectors import chunk_in_context, chunks_of, chunks_with_topic, library_outline, research_of, source_get

PAGE_LIMIT = 20
MODE_LABELS = {
    "fts5": "SQLite full-text search, ranked by BM25 (topics weigh more than content)",
    "postgres": "PostgreSQL full-text search, ranked by ts_rank (topics weigh more than content)",
    "like": "simple text match, newest first (unranked: a score of 0 says nothing about relevance)",
}


@login_required
def search_page(request: HttpRequest) -> HttpResponse:
    """Search the library as you type; a plain GET form without JavaScript."""
    raw = {key: request.GET.get(key, "") for key in ("q", "applicability", "topic")}
    error, status = None, 200
    try:
        params = parse_form(SearchParams, {**raw, "q": raw["q"][:MAX_QUERY_CHARS], "limit": PAGE_LIMIT})
        response = services.library_search(
            principal=principal_for_user(request.user),
            query=params.q,
            limit=params.limit,
            applicability=params.applicability or None,
            topic=params.topic or None,
        )
    except Invalid as exc:  # e.g. a NUL character: shown inline, nothing searched
        error, status = exc, 422
        params = None
        response = search_index.SearchResponse(mode=search_index.resolve_mode(), results=[])
    context = {
        **_browse(request, searched=bool(params and params.q)),
        "q": raw["q"][:MAX_QUERY_CHARS],
        "applicability": raw["applicability"][:100].strip(),
        "topic": raw["topic"][:100].strip(),
        "mode": response.mode,
        "mode_label": MODE_LABELS.get(response.mode, response.mode),
        "results": response.results,
        "searched": bool(params and params.q) and error is None,
        "error": error,
    }
    template = "library/search.html#results" if request.htmx else "library/search.html"
    return render(request, template, context, status=status)


def _browse(request: HttpRequest, *, searched: bool) -> dict:
    """A cited chunk in context (``?chunk=``), a source's passages (``?source=``), the passages of a topic
    when no words are given, and the outline to browse by (sources and topics)."""
    outline = None if request.htmx else library_outline()
    context: dict = {"cited": None, "source": None, "passages": [], "outline": outline}
    if request.GET.get("chunk"):
        try:
            context["cited"] = chunk_in_context(request.GET["chunk"])
        except NotFound:
            context["cited_missing"] = True
    if request.GET.get("source"):
        try:
            source = source_get(request.GET["source"])
        except NotFound:
            source = None
        if source is not None:
            context["source"] = source
            context["passages"] = list(chunks_of(source)[:200])
    elif not searched and request.GET.get("topic", "").strip():
        context["passages"] = chunks_with_topic(request.GET["topic"].strip()[:100])
    return context


# --- A book's research ----------------------------------------------------------


@login_required
def research(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The book's research items: pending ones wait for the author's admission."""
    return _render_research(request, page_access(request, book_id, Cap.BOOK_READ))


def _render_research(
    request: HttpRequest, access: BookAccess, *, errors: dict | None = None, status: int = 200
) -> HttpResponse:
    items = list(research_of(access.book))
    return render(
        request,
        "library/research.html#research-lists" if request.htmx else "library/research.html",
        {
            "book": access.book,
            "role": access.role,
            "links": book_links(access.book),
            "items": items,
            "pending": [i for i in items if i.status == ResearchItem.Status.PENDING],
            "decided": [i for i in items if i.status != ResearchItem.Status.PENDING],
            "can_decide": access.is_author,
            "errors": errors or {},
        },
        status=status,
    )


@login_required
@require_POST
def research_decide(request: HttpRequest, book_id: uuid.UUID, item_id: uuid.UUID) -> HttpResponse:
    """Admit or reject a research item: the author's verdict, with a rationale, through ``services.research_decide``."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    item = research_of(access.book).filter(pk=item_id).first()
    if item is None:
        raise NotFound("research item not found")
    form = {"verdict": request.POST.get("verdict", ""), "rationale": request.POST.get("rationale", "")}
    try:
        payload = parse_form(ResearchDecideIn, form)
        services.research_decide(access=access, item=item, verdict=payload.verdict, rationale=payload.rationale)
    except DomainError as exc:
        errors = {item.pk: {"message": exc.message, "rationale": form["rationale"]}}
        return _render_research(request, access, errors=errors, status=exc.status)
    if request.htmx:
        # Both lists: the decided item moves from "Waiting" to "Decided" in place.
        return _render_research(request, access)
    return redirect(f"{reverse('library:research', args=[access.book.pk])}#research-{item.pk}")
