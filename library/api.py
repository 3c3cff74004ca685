"""Library routes. Thin: authenticate, validate, call a service."""

import uuid
from datetime import datetime

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status
from ninja.pagination import paginate

from discovery.access import Cap, require
from novelgraph.api import principal_of
from novelgraph.errors import NotFound
from novelgraph.schemas import ERRORS

from . import services
from .models import KnowledgeChunk, KnowledgeSource
from .search import DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_CHARS

router = Router(tags=["library"])

# --- Search -----------------------------------------------------------------


class SearchParams(Schema):
    q: str = Field("", max_length=MAX_QUERY_CHARS, description="Words to find; all must appear. Blank: no results.")
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    applicability: str | None = Field(None, max_length=100, description="Only chunks listing this applicability")
    topic: str | None = Field(None, max_length=100, description="Only chunks listing this topic")


class SearchResult(Schema):
    chunk_id: str
    content: str
    topics: list
    applicability: list
    citation: str
    source_title: str
    score: float


class SearchOut(Schema):
    mode: str = Field(description="fts5, postgres or like (like scores are always 0)")
    results: list[SearchResult]


@router.get("/library/search", response={200: SearchOut, **ERRORS}, summary="Search the literary library")
def library_search(request: HttpRequest, params: Query[SearchParams]):
    result = services.library_search(
        principal=principal_of(request),
        query=params.q,
        limit=params.limit,
        applicability=params.applicability,
        topic=params.topic,
    )
    return result.as_dict()


# --- Sources and chunks ------------------------------------------------------


class SourceIn(Schema):
    title: str = Field(max_length=300)
    origin: str = Field(max_length=300)
    license_note: str = Field(max_length=500)
    version: str = Field(max_length=50)


class SourceOut(Schema):
    id: uuid.UUID
    title: str
    origin: str
    license_note: str
    version: str
    created_at: datetime


class ChunkIn(Schema):
    content: str = Field(max_length=100_000)
    topics: list[str] = Field(default_factory=list, max_length=50)
    applicability: list[str] = Field(default_factory=list, max_length=50)
    citation: str = Field(max_length=500)


class ChunkOut(Schema):
    id: uuid.UUID
    source_id: uuid.UUID
    position: int
    content: str
    topics: list
    applicability: list
    citation: str
    created_at: datetime


class SourceDetailOut(SourceOut):
    chunks: list[ChunkOut]


@router.get("/library/sources", response={200: list[SourceOut], **ERRORS}, summary="List library sources")
@paginate
def source_list(request: HttpRequest):
    require(principal_of(request), Cap.LITERARY_READ)
    return KnowledgeSource.objects.order_by("title", "version", "id")


@router.post("/library/sources", response={201: SourceOut, **ERRORS}, summary="Add a library source")
def source_create(request: HttpRequest, payload: SourceIn):
    source = services.source_create(principal=principal_of(request), **payload.dict())
    return Status(201, source)


def _source(source_id: uuid.UUID) -> KnowledgeSource:
    try:
        return KnowledgeSource.objects.get(pk=source_id)
    except KnowledgeSource.DoesNotExist:
        raise NotFound("source not found") from None


@router.get(
    "/library/sources/{source_id}", response={200: SourceDetailOut, **ERRORS}, summary="A source with its chunks"
)
def source_detail(request: HttpRequest, source_id: uuid.UUID):
    require(principal_of(request), Cap.LITERARY_READ)
    source = _source(source_id)
    source.chunks_ordered = list(KnowledgeChunk.objects.filter(source=source).order_by("position", "created_at"))
    return SourceDetailOut(
        **{f: getattr(source, f) for f in ("id", "title", "origin", "license_note", "version", "created_at")},
        chunks=[ChunkOut.from_orm(chunk) for chunk in source.chunks_ordered],
    )


@router.post("/library/sources/{source_id}/chunks", response={201: ChunkOut, **ERRORS}, summary="Add a cited chunk")
def chunk_create(request: HttpRequest, source_id: uuid.UUID, payload: ChunkIn):
    principal = principal_of(request)
    require(principal, Cap.LITERARY_WRITE)
    chunk = services.chunk_add(principal=principal, source=_source(source_id), **payload.dict())
    return Status(201, chunk)


# --- Research ---------------------------------------------------------------


class ResearchIn(Schema):
    url: str = Field(max_length=2000)
    title: str = Field(max_length=300)
    excerpt: str = Field("", max_length=20_000)
    source_snapshot: str = Field("", max_length=100_000)
    claim: str = Field(max_length=10_000)
    citation: str = Field(max_length=500)


class ResearchOut(Schema):
    id: uuid.UUID
    book_id: uuid.UUID
    url: str
    title: str
    excerpt: str
    source_snapshot: str
    claim: str
    citation: str
    status: str
    proposed_by: str
    approval_id: uuid.UUID | None
    created_at: datetime


class DecisionIn(Schema):
    rationale: str = Field(max_length=10_000)


@router.post("/books/{book_id}/research", response={201: ResearchOut, **ERRORS}, summary="Propose research (pending)")
def research_propose(request: HttpRequest, book_id: uuid.UUID, payload: ResearchIn):
    item = services.research_propose(principal=principal_of(request), book_id=book_id, **payload.dict())
    return Status(201, item)


@router.get("/books/{book_id}/research", response={200: list[ResearchOut], **ERRORS}, summary="A book's research")
@paginate
def research_list(request: HttpRequest, book_id: uuid.UUID):
    return services.research_list(principal=principal_of(request), book_id=book_id)


@router.post(
    "/research/{research_id}/admit", response={200: ResearchOut, **ERRORS}, summary="Admit research (author only)"
)
def research_admit(request: HttpRequest, research_id: uuid.UUID, payload: DecisionIn):
    return services.research_decide(
        principal=principal_of(request), research_id=research_id, verdict="approve", rationale=payload.rationale
    )


@router.post(
    "/research/{research_id}/reject", response={200: ResearchOut, **ERRORS}, summary="Reject research (author only)"
)
def research_reject(request: HttpRequest, research_id: uuid.UUID, payload: DecisionIn):
    return services.research_decide(
        principal=principal_of(request), research_id=research_id, verdict="reject", rationale=payload.rationale
    )
