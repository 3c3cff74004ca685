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
