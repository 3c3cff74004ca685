"""The library API's schemas. Inputs carry the limits (from the model fields) and are the one place
input is validated: the API, the admin's forms and the import command use them."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

from django.conf import settings
from ninja import Field, Schema
from pydantic import AfterValidator, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from novelgraph.core.errors import Invalid
from novelgraph.core.pagination import rest_link
from novelgraph.core.schemas import LONG_TEXT, Labels, Text, input_error, limit

from .models import KnowledgeChunk, KnowledgeSource, ResearchItem
from .search import DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_CHARS

MAX_IMPORT_CHARS = 5_000_000


def labels(value, field: str) -> list[str]:
    """Topics or applicability as stored (a list or comma-separated text), or a 422 naming ``field``."""
    try:
        return TypeAdapter(Labels).validate_python(value or [])
    except PydanticValidationError as exc:
        raise Invalid(f"{field}: {exc.errors()[0]['msg']}", field=field) from None


def _http_url(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        raise input_error("is not a valid URL") from None
    if parts.scheme.lower() not in {"http", "https"} or not parts.netloc or any(ch.isspace() for ch in url):
        raise input_error("must be an http or https address")
    scheme, rest = url.split(":", 1)
    return f"{scheme.lower()}:{rest}"


HttpUrl = Annotated[Text(limit(ResearchItem, "url")), AfterValidator(_http_url)]


class SearchParams(Schema):
    q: Text(MAX_QUERY_CHARS, required=False) = Field("", description="Words to find, in any order. Blank: no results.")
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    applicability: Text(100, required=False) | None = Field(None, description="Only chunks listing this applicability")
    topic: Text(100, required=False) | None = Field(None, description="Only chunks listing this topic")


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


class SourceIn(Schema):
    title: Text(limit(KnowledgeSource, "title"))
    origin: Text(limit(KnowledgeSource, "origin"))
    license_note: Text(limit(KnowledgeSource, "license_note"))
    version: Text(limit(KnowledgeSource, "version"))


class SourceImportIn(SourceIn):
    """A document imported as a source (the admin's import form, the ``import_source`` command)."""

    text: Annotated[str, Field(max_length=MAX_IMPORT_CHARS)]
    topics: Labels = Field(default_factory=list)
    applicability: Labels = Field(default_factory=list)


class ChunkIn(Schema):
    content: Text(limit(KnowledgeChunk, "content"))
    topics: Labels = Field(default_factory=list)
    applicability: Labels = Field(default_factory=list)
    citation: Text(limit(KnowledgeChunk, "citation"))


class SourceOut(Schema):
    id: uuid.UUID
    title: str
    origin: str
    license_note: str
    version: str
    created_at: datetime


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
    """The first page of the source's chunks; ``chunks_next`` links to the rest (null when none follow)."""

    chunks: list[ChunkOut]
    chunks_next: str | None = None


def source_detail(source: KnowledgeSource, chunks) -> SourceDetailOut:
    """The source with the first page of ``chunks`` (its chunks in order), ``chunks_next`` linking to the rest
    (``GET /library/sources/{id}`` and its tool)."""
    limit = settings.NINJA_PAGINATION_PER_PAGE
    first = list(chunks[: limit + 1])
    more = rest_link(f"library/sources/{source.pk}/chunks", page=limit)
    return SourceDetailOut(
        **{f: getattr(source, f) for f in ("id", "title", "origin", "license_note", "version", "created_at")},
        chunks=[ChunkOut.from_orm(chunk) for chunk in first[:limit]],
        chunks_next=more if len(first) > limit else None,
    )


class ResearchIn(Schema):
    url: HttpUrl
    title: Text(limit(ResearchItem, "title"))
    excerpt: Text(limit(ResearchItem, "excerpt"), required=False) = ""
    source_snapshot: Text(limit(ResearchItem, "source_snapshot"), required=False) = ""
    claim: Text(limit(ResearchItem, "claim"))
    citation: Text(limit(ResearchItem, "citation"))


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
    rationale: Text(LONG_TEXT, required=False)


class ResearchDecideIn(DecisionIn):
    """The research page's form: the verdict with its rationale."""

    verdict: Literal["approve", "reject"]
