"""Browser pages (server-rendered, HTMX partials): the library search page and a book's research."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import trigger_client_event

from discovery.access import BookAccess, Cap, page_access, principal_capabilities, refusal
from novelgraph.core.auth import principal_for_user
from novelgraph.core.errors import Conflict, DomainError, Invalid, NotFound
from novelgraph.core.events import APPROVALS_CHANGED
from novelgraph.core.pages import partial_or_page
from novelgraph.core.schemas import parse_form

from . import search as search_index
from . import services
from .models import ResearchItem
from .schemas import ResearchDecideIn, ResearchFromUrlIn, SearchParams
from .search import MAX_QUERY_CHARS
from .selectors import (
    chunk_get,
    chunk_neighbours,
    chunks_of,
    chunks_with_topic,
    research_of,
    source_get,
    sources_with_counts,
    topics_all,
)

PAGE_LIMIT = 20
BROWSE_PER_PAGE = 20
MODE_LABELS = {
    "fts5": "SQLite full-text search, ranked by BM25 (topics weigh more than content)",
    "postgres": "PostgreSQL full-text search, ranked by ts_rank (topics weigh more than content)",
    "like": "simple text match, ranked by how many of your words a passage holds (then newest first)",
}



def _require_read(request: HttpRequest) -> None:
    """The library is read with literary:read (every person has it; the 403 names it otherwise)."""
    principal = principal_for_user(request.user)
    if Cap.LITERARY_READ not in principal_capabilities(principal):
        raise refusal(principal.key_role, Cap.LITERARY_READ)


def _page(request: HttpRequest, items, per_page: int = BROWSE_PER_PAGE):
    """One page of ``items`` (a bad or too-large ``?page=`` shows the nearest page)."""
    return Paginator(items, per_page).get_page(request.GET.get("page"))


def _browse(request: HttpRequest, template: str, context: dict) -> HttpResponse:
    """Browse pages: the whole page, or only its list for an htmx pager click."""
    return render(request, partial_or_page(request, template, "browse-list"), context)


@login_required
def search_page(request: HttpRequest) -> HttpResponse:
    """Search the library as you type; a plain GET form without JavaScript.

    ``?chunk=<id>`` (older citation links) opens that chunk's page; a malformed id is said inline.
    """
    raw = {key: request.GET.get(key, "") for key in ("q", "applicability", "topic")}
    error, status = None, 200
    if "chunk" in request.GET:
        try:
            return redirect("library:chunk", chunk_id=uuid.UUID(request.GET["chunk"].strip()))
        except ValueError:
            error, status = (
                Invalid("chunk: not a chunk id; a citation link names a chunk by its id", field="chunk"),
                422,
            )
    try:
        if error:
            raise error
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
        "q": raw["q"][:MAX_QUERY_CHARS],
        "applicability": raw["applicability"][:100].strip(),
        "topic": raw["topic"][:100].strip(),
        "mode": response.mode,
        "mode_label": MODE_LABELS.get(response.mode, response.mode),
        "results": response.results,
        "searched": bool(params and params.q) and error is None,
        "error": error,
    }
    template = partial_or_page(request, "library/search.html", "results")
    return render(request, template, context, status=status)


@login_required
def chunk_page(request: HttpRequest, chunk_id: str) -> HttpResponse:
    """A cited chunk in context: its source, citation, topics, and its neighbours in the source."""
    _require_read(request)
    try:
        pk = uuid.UUID(chunk_id.strip())
    except ValueError:
        context = {"error": f"“{chunk_id[:80]}” is not a chunk id. Citation links name a chunk by its id."}
        return render(request, "library/chunk.html", context, status=422)
    try:
        chunk = chunk_get(pk)
    except NotFound:
        context = {"error": "No passage with this id is in the library: it may have been removed by staff."}
        return render(request, "library/chunk.html", context, status=404)
    before, after = chunk_neighbours(chunk)
    return render(request, "library/chunk.html", {"chunk": chunk, "before": before, "after": after})


@login_required
def topics_page(request: HttpRequest) -> HttpResponse:
    """Every topic in the library, with how many passages list it."""
    _require_read(request)
    return _browse(request, "library/topics.html", {"page_obj": _page(request, topics_all(), per_page=100)})


@login_required
def topic_page(request: HttpRequest, topic: str) -> HttpResponse:
    """The passages listing one topic, by source and position."""
    _require_read(request)
    topic = topic.strip()[:100]
    try:
        topic = parse_form(SearchParams, {"topic": topic}).topic or ""  # e.g. a NUL character: said inline
    except Invalid as exc:
        return render(request, "library/topic.html", {"topic": topic, "error": exc}, status=422)
    return _browse(
        request, "library/topic.html", {"topic": topic, "page_obj": _page(request, chunks_with_topic(topic))}
    )


@login_required
def sources_page(request: HttpRequest) -> HttpResponse:
    """Every source in the library, with its number of passages."""
    _require_read(request)
    return _browse(request, "library/sources.html", {"page_obj": _page(request, sources_with_counts())})


@login_required
def source_page(request: HttpRequest, source_id: uuid.UUID) -> HttpResponse:
    """One source's passages in reading order."""
    _require_read(request)
    source = source_get(source_id)
    return _browse(request, "library/source.html", {"source": source, "page_obj": _page(request, chunks_of(source))})


# --- A book's research ----------------------------------------------------------


@login_required
def research(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The book's research items: pending ones wait for the author's admission."""
    return render_research(request, page_access(request, book_id, Cap.BOOK_READ))


# Parts of the research page that apps above the library add, from their AppConfig.ready() (the agents: "Ask
# Luna to collect a page"). Each takes the page's access and what the request left for it (``part_state``: a
# refused form, say) and returns the context of its part ({} to show nothing).
RESEARCH_PAGE_PARTS: list[Callable[[BookAccess, dict], dict]] = []


def research_page_part_register(part: Callable[[BookAccess, dict], dict]) -> None:
    if part not in RESEARCH_PAGE_PARTS:
        RESEARCH_PAGE_PARTS.append(part)


def render_research(
    request: HttpRequest,
    access: BookAccess,
    *,
    errors: dict | None = None,
    status: int = 200,
    from_url: dict | None = None,
    part_state: dict | None = None,
) -> HttpResponse:
    """The research page (or its lists, for an htmx request), with the parts other apps add."""
    items = list(research_of(access.book))
    parts: dict = {}
    for part in RESEARCH_PAGE_PARTS:
        parts.update(part(access, part_state or {}))
    return render(
        request,
        partial_or_page(request, "library/research.html", "research-lists"),
        {
            "book": access.book,
            "role": access.role,
            "items": items,
            "pending": [i for i in items if i.status == ResearchItem.Status.PENDING],
            "decided": [i for i in items if i.status != ResearchItem.Status.PENDING],
            "can_decide": access.is_author,
            "can_propose": access.holds(Cap.DISCOVERY_WRITE, Cap.SCRATCHPAD_WRITE),
            "errors": errors or {},
            "from_url": from_url or {},
            **parts,
        },
        status=status,
    )


@login_required
@require_POST
def research_from_url(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """"Propose research from a URL": the server collects the page (``services.research_propose_from_url``); a
    refused or unreadable address is an inline message on the URL field, the form keeping what was typed."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    form = {key: request.POST.get(key, "") for key in ("url", "claim", "citation")}
    try:
        item = services.research_propose_from_url(access=access, payload=parse_form(ResearchFromUrlIn, form))
    except DomainError as exc:
        failed = {**form, "field": exc.field or "url", "message": exc.message}
        return render_research(request, access, from_url=failed, status=exc.status)
    if request.htmx:
        return trigger_client_event(render_research(request, access), APPROVALS_CHANGED)
    return redirect(f"{reverse('library:research', args=[access.book.pk])}#research-{item.pk}")


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
        response = render_research(request, access, errors=errors, status=exc.status)
        # Decided meanwhile (elsewhere): the counts moved even though this verdict was refused.
        return trigger_client_event(response, APPROVALS_CHANGED) if isinstance(exc, Conflict) else response
    if request.htmx:
        # Both lists: the decided item moves from "Waiting" to "Decided" in place; the admission it decided
        # leaves the review badge's count.
        return trigger_client_event(render_research(request, access), APPROVALS_CHANGED)
    return redirect(f"{reverse('library:research', args=[access.book.pk])}#research-{item.pk}")
