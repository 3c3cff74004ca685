"""The knowledge bases a book can use (seed 001): the shared literary base, its series' canon, its own
canon, and its sessions' run notes. Ensured when discovery starts; never created by a read."""

from __future__ import annotations

from novelgraph.core.db import tables_exist

from ..models import (
    LITERARY_LIBRARY_NAME,
    LITERARY_OWNER_ID,
    Book,
    DiscoverySession,
    KnowledgeBase,
    KnowledgeLink,
    Series,
)


def literary_base() -> KnowledgeBase:
    """The one shared literary base: staff-curated craft guidance, never fictional truth."""
    base, _ = KnowledgeBase.objects.get_or_create(
        scope=KnowledgeBase.Scope.LITERARY,
        owner_id=LITERARY_OWNER_ID,
        defaults={"name": LITERARY_LIBRARY_NAME},
    )
    return base


def ensure_literary_base_after_migrate(sender, using: str = "default", **kwargs) -> None:
    """``post_migrate``: the shared literary base exists (after a flush in tests, too)."""
    if tables_exist(using, KnowledgeBase._meta.db_table):
        literary_base()


def series_base(series: Series) -> KnowledgeBase:
    base, _ = KnowledgeBase.objects.get_or_create(
        scope=KnowledgeBase.Scope.SERIES,
        owner_id=str(series.pk),
        defaults={"name": f"{series.title}: series canon"[:200]},
    )
    return base


def book_base(book: Book) -> KnowledgeBase:
    base, _ = KnowledgeBase.objects.get_or_create(
        scope=KnowledgeBase.Scope.BOOK,
        owner_id=str(book.pk),
        defaults={"name": f"{book.title}: book canon"[:200]},
    )
    return base


def run_base(session: DiscoverySession) -> KnowledgeBase:
    base, _ = KnowledgeBase.objects.get_or_create(
        scope=KnowledgeBase.Scope.RUN,
        owner_id=str(session.pk),
        defaults={"name": f"{session.book.title}: run {str(session.pk)[:8]}"[:200]},
    )
    return base


def ensure_knowledge_bases(book: Book) -> list[KnowledgeLink]:
    """The book's knowledge bases and links: the shared literary base (literary-guidance), its
    series' base (series-canon) when it has a series, and its own base (book-canon). Idempotent."""
    wanted = [(literary_base(), KnowledgeLink.Relation.LITERARY_GUIDANCE)]
    if book.series_id:
        wanted.append((series_base(book.series), KnowledgeLink.Relation.SERIES_CANON))
    wanted.append((book_base(book), KnowledgeLink.Relation.BOOK_CANON))
    return [KnowledgeLink.objects.get_or_create(book=book, base=base, relation=rel)[0] for base, rel in wanted]
