"""Share links to a series' story bible (issue 29): the series' owner makes a read-only link fixed at a chapter of
one of its books, lists and revokes them, as for a book's bible (:mod:`.bible`, whose token rule and ``open`` this
reuses: one table, one token space, one shared page)."""

from __future__ import annotations

from typing import Any

from novelgraph.core.errors import Invalid

from ..access import SeriesAccess
from ..models import BibleShareLink
from .bible import share_link_make, share_link_revoke


def series_bible_link_create(
    *, access: SeriesAccess, book_id: Any, chapter: int, label: str = ""
) -> tuple[BibleShareLink, str]:
    """The series' owner makes a share link to the series bible as of ``chapter`` of the series' book
    ``book_id`` (422 naming ``book`` when it is not one); it returns the link with its token (only its hash
    is stored)."""
    access.require_author()
    book = next((b.book for b in access.books if str(b.book.pk) == str(book_id)), None)
    if book is None:
        raise Invalid("book: not a book of this series that you may read", field="book")
    return share_link_make(by=access.user, chapter=chapter, label=label, series=access.series, series_book=book)


def series_bible_links(access: SeriesAccess) -> list[BibleShareLink]:
    """The series' share links that still open, newest first (the owner's only)."""
    access.require_author()
    return list(
        BibleShareLink.objects.filter(series=access.series, revoked_at__isnull=True).select_related("series_book")
    )


def series_bible_link_revoke(*, access: SeriesAccess, link_id: Any) -> BibleShareLink:
    """The owner revokes a series share link: from then on it answers 404, like one never made."""
    access.require_author()
    return share_link_revoke(link_id, series=access.series)


__all__ = ["series_bible_link_create", "series_bible_link_revoke", "series_bible_links"]
