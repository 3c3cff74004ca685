"""Reads of the library and of a book's research, shared by the API, the pages and the admin."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from discovery.models import Book
from novelgraph.errors import NotFound

from .models import KnowledgeChunk, KnowledgeSource, ResearchItem


def sources_all() -> QuerySet[KnowledgeSource]:
    return KnowledgeSource.objects.order_by("title", "version", "id")


def source_get(source_id: Any) -> KnowledgeSource:
    try:
        return KnowledgeSource.objects.get(pk=source_id)
    except (KnowledgeSource.DoesNotExist, ValidationError, ValueError, TypeError):
        raise NotFound("source not found") from None


def chunks_of(source: KnowledgeSource) -> QuerySet[KnowledgeChunk]:
    return KnowledgeChunk.objects.filter(source=source).order_by("position", "created_at")


def chunk_get(chunk_id: Any) -> KnowledgeChunk:
    """One library chunk with its source."""
    try:
        return KnowledgeChunk.objects.select_related("source").get(pk=chunk_id)
    except (KnowledgeChunk.DoesNotExist, ValidationError, ValueError, TypeError):
        raise NotFound("chunk not found") from None


def research_of(book: Book) -> QuerySet[ResearchItem]:
    """A book's research, newest first."""
    return ResearchItem.objects.filter(book=book).select_related("approval").order_by("-created_at")


def research_get(research_id: Any) -> ResearchItem:
    """One research item with its book (the edge resolves access from the book)."""
    try:
        return ResearchItem.objects.select_related("book__series", "book__owner").get(pk=research_id)
    except (ResearchItem.DoesNotExist, ValidationError, ValueError, TypeError):
        raise NotFound("research not found") from None


def chunk_in_context(chunk_id: Any) -> dict:
    """A cited chunk with its source and the passages just before and after it (404 when there is none)."""
    chunk = chunk_get(chunk_id)
    siblings = chunks_of(chunk.source)
    return {
        "chunk": chunk,
        "before": siblings.filter(position__lt=chunk.position).order_by("-position").first(),
        "after": siblings.filter(position__gt=chunk.position).first(),
    }


def library_outline() -> dict:
    """What the library holds, to browse: every source with its passage count, every topic with its count."""
    from django.db.models import Count

    sources = list(sources_all().annotate(passages=Count("chunks")))
    topics: dict[str, int] = {}
    for chunk_topics in KnowledgeChunk.objects.values_list("topics", flat=True).iterator(chunk_size=2000):
        for topic in chunk_topics or []:
            if isinstance(topic, str) and topic.strip():
                topics[topic] = topics.get(topic, 0) + 1
    return {"sources": sources, "topics": sorted(topics.items())}


def chunks_with_topic(topic: str, limit: int = 50) -> list[KnowledgeChunk]:
    """The passages tagged with ``topic`` (exact tag), in source order."""
    found = []
    for chunk in (
        KnowledgeChunk.objects.select_related("source").order_by("source__title", "position").iterator(chunk_size=2000)
    ):
        if topic in (chunk.topics or []):
            found.append(chunk)
            if len(found) >= limit:
                break
    return found
