"""Reads of the library and of a book's research, shared by the API, the pages and the admin."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import BooleanField, Count, Q, QuerySet
from django.db.models.expressions import RawSQL

from discovery.models import Book
from novelgraph.core.errors import NotFound

from . import search as search_index
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


# --- Reading the library in context (pages) -----------------------------------------

NEIGHBOURS = 2


def chunk_neighbours(chunk: KnowledgeChunk, around: int = NEIGHBOURS) -> tuple[list, list]:
    """Up to ``around`` chunks of the same source before and after ``chunk``, in reading order (two queries)."""
    same = KnowledgeChunk.objects.filter(source_id=chunk.source_id).exclude(pk=chunk.pk)
    before = same.filter(
        Q(position__lt=chunk.position) | Q(position=chunk.position, created_at__lt=chunk.created_at)
    ).order_by("-position", "-created_at")[:around]
    after = same.filter(
        Q(position__gt=chunk.position) | Q(position=chunk.position, created_at__gt=chunk.created_at)
    ).order_by("position", "created_at")[:around]
    return list(reversed(list(before))), list(after)


def sources_with_counts() -> QuerySet[KnowledgeSource]:
    """Every source with its number of chunks (``chunk_count``), by title."""
    return sources_all().annotate(chunk_count=Count("chunks"))


def topics_all() -> list[dict]:
    """Every topic with how many chunks list it, alphabetically."""
    return [{"topic": topic, "count": count} for topic, count in search_index.topic_counts()]


def chunks_with_topic(topic: str) -> QuerySet[KnowledgeChunk]:
    """Chunks listing ``topic`` (case-insensitively), by source and position."""
    condition = RawSQL(search_index.chunk_has_topic_sql(), [topic], output_field=BooleanField())
    return (
        KnowledgeChunk.objects.select_related("source")
        .alias(has_topic=condition)
        .filter(has_topic=True)
        .order_by("source__title", "source_id", "position", "created_at")
    )


