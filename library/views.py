"""Browser pages (server-rendered, HTMX partials): the library search page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from discovery.access import principal_for_user
from novelgraph.errors import Invalid

from . import search as search_index
from .search import MAX_QUERY_CHARS
from .services import library_search

PAGE_LIMIT = 20
MODE_LABELS = {
    "fts5": "SQLite full-text search, ranked by BM25 (topics weigh more than content)",
    "postgres": "PostgreSQL full-text search, ranked by ts_rank (topics weigh more than content)",
    "like": "simple text match, newest first (unranked: a score of 0 says nothing about relevance)",
}


@login_required
def search_page(request: HttpRequest) -> HttpResponse:
    """Search the library as you type; a plain GET form without JavaScript."""
    q = request.GET.get("q", "")[:MAX_QUERY_CHARS]
    applicability = request.GET.get("applicability", "")[:100].strip()
    topic = request.GET.get("topic", "")[:100].strip()
    error, status = None, 200
    try:
        response = library_search(
            principal=principal_for_user(request.user),
            query=q,
            limit=PAGE_LIMIT,
            applicability=applicability or None,
            topic=topic or None,
        )
    except Invalid as exc:  # e.g. a NUL character: shown inline, nothing searched
        error, status = exc, 422
        response = search_index.SearchResponse(mode=search_index.resolve_mode(), results=[])
    context = {
        "q": q,
        "applicability": applicability,
        "topic": topic,
        "mode": response.mode,
        "mode_label": MODE_LABELS.get(response.mode, response.mode),
        "results": response.results,
        "searched": bool(q.strip()) and error is None,
        "error": error,
    }
    template = "library/search.html#results" if request.htmx else "library/search.html"
    return render(request, template, context, status=status)
