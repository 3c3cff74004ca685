"""Library routes. Thin: resolve the caller's access, call a service or selector, answer."""

import uuid

from django.http import HttpRequest
from ninja import Query, Router, Status
from ninja.pagination import paginate

from discovery.access import Cap, book_access, principal_capabilities, refusal
from novelgraph.core.auth import principal_of
from novelgraph.core.schemas import ERRORS

from . import selectors, services
from .schemas import (
    ChunkIn,
    ChunkOut,
    DecisionIn,
    ResearchIn,
    ResearchOut,
    SearchOut,
    SearchParams,
    SourceDetailOut,
    SourceIn,
    SourceOut,
)
from .schemas import source_detail as source_detail_out

router = Router(tags=["library"])


def _require_read(request: HttpRequest) -> None:
    principal = principal_of(request)
    if Cap.LITERARY_READ not in principal_capabilities(principal):
        raise refusal(principal.key_role, Cap.LITERARY_READ)


# --- Search -----------------------------------------------------------------


@router.get("/library/search", response={200: SearchOut, **ERRORS}, summary="Search the literary library")
def library_search(request: HttpRequest, params: Query[SearchParams]):
    result = services.library_search(
        principal=principal_of(request),
        query=params.q,
        limit=params.limit,
        applicability=params.applicability or None,
        topic=params.topic or None,
    )
    return result.as_dict()


# --- Sources and chunks ------------------------------------------------------


@router.get("/library/sources", response={200: list[SourceOut], **ERRORS}, summary="List library sources")
@paginate
def source_list(request: HttpRequest):
    _require_read(request)
    return selectors.sources_all()


@router.post("/library/sources", response={201: SourceOut, **ERRORS}, summary="Add a library source")
def source_create(request: HttpRequest, payload: SourceIn):
    return Status(201, services.source_create(principal=principal_of(request), payload=payload))


@router.get(
    "/library/sources/{source_id}", response={200: SourceDetailOut, **ERRORS}, summary="A source with its chunks"
)
def source_detail(request: HttpRequest, source_id: uuid.UUID):
    _require_read(request)
    source = selectors.source_get(source_id)
    return source_detail_out(source, selectors.chunks_of(source))


@router.get(
    "/library/sources/{source_id}/chunks",
    response={200: list[ChunkOut], **ERRORS},
    summary="A source's chunks in order, paged",
)
@paginate
def chunk_list(request: HttpRequest, source_id: uuid.UUID):
    _require_read(request)
    return selectors.chunks_of(selectors.source_get(source_id))


@router.post("/library/sources/{source_id}/chunks", response={201: ChunkOut, **ERRORS}, summary="Add a cited chunk")
def chunk_add(request: HttpRequest, source_id: uuid.UUID, payload: ChunkIn):
    source = selectors.source_get(source_id)
    return Status(201, services.chunk_add(principal=principal_of(request), source=source, payload=payload))


# --- Research ---------------------------------------------------------------


@router.post("/books/{book_id}/research", response={201: ResearchOut, **ERRORS}, summary="Propose research (pending)")
def research_propose(request: HttpRequest, book_id: uuid.UUID, payload: ResearchIn):
    access = book_access(principal_of(request), book_id)
    return Status(201, services.research_propose(access=access, payload=payload))


@router.get("/books/{book_id}/research", response={200: list[ResearchOut], **ERRORS}, summary="A book's research")
@paginate
def research_list(request: HttpRequest, book_id: uuid.UUID):
    return selectors.research_of(book_access(principal_of(request), book_id, Cap.BOOK_READ).book)


def _research_decide(request: HttpRequest, research_id: uuid.UUID, verdict: str, payload: DecisionIn):
    item = selectors.research_get(research_id)
    access = book_access(principal_of(request), item.book, missing="research")
    return services.research_decide(access=access, item=item, verdict=verdict, rationale=payload.rationale)


@router.post(
    "/research/{research_id}/admit", response={200: ResearchOut, **ERRORS}, summary="Admit research (author only)"
)
def research_admit(request: HttpRequest, research_id: uuid.UUID, payload: DecisionIn):
    return _research_decide(request, research_id, "approve", payload)


@router.post(
    "/research/{research_id}/reject", response={200: ResearchOut, **ERRORS}, summary="Reject research (author only)"
)
def research_reject(request: HttpRequest, research_id: uuid.UUID, payload: DecisionIn):
    return _research_decide(request, research_id, "reject", payload)
