"""The API's page parameters: ``limit`` (1..200) and ``offset``, both bounded.

ninja's ``LimitOffsetPagination`` leaves ``offset`` unbounded; a 20-digit offset then reaches the
database, which cannot hold it (SQLite "datatype mismatch", PostgreSQL "bigint out of range") and
the request fails with a 500. Here an offset above ``MAX_OFFSET`` is bad input: a 422 naming
``offset``, like every other out-of-range parameter. The bound is far above any real list
(a billion rows) and far below what the databases can count (``offset + limit`` stays a 64-bit integer).
"""

from __future__ import annotations

from django.conf import settings
from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination

MAX_OFFSET = 1_000_000_000


def rest_link(path: str, *, page: int | None = None, **query) -> str:
    """Where the rest of a capped list is: the paged API route ``path`` (under the API root) from its second
    page, ``limit`` and ``offset`` one page each (``NINJA_PAGINATION_PER_PAGE``, 50, unless ``page``), after
    ``query`` (its None values left out). Every capped list's ``next`` / ``*_rest`` link is written here."""
    from urllib.parse import urlencode

    from django.urls import reverse

    page = page or settings.NINJA_PAGINATION_PER_PAGE
    params = urlencode({**{k: v for k, v in query.items() if v is not None}, "limit": page, "offset": page})
    return f"{reverse('api:api-root')}{path}?{params}"


def page_url(base: str, places: dict, **changed) -> str:
    """A page's own URL with one of its lists moved: ``places`` (the page's other offsets and filters) kept,
    ``changed`` set, blank, None and 0 left out (0 is every list's first place)."""
    from urllib.parse import urlencode

    query = urlencode({k: v for k, v in {**places, **changed}.items() if v})
    return f"{base}?{query}" if query else base


def page_at(rows: list, offset: int, size: int = settings.NINJA_PAGINATION_PER_PAGE) -> dict:
    """A page of ``rows`` from ``offset`` (past the end: the last page), with the offsets of the previous and the
    next page (None at either end) and which rows it shows (``first``, ``last``, 1-based) of ``count``."""
    count = len(rows)
    offset = min(max(offset, 0), max(count - 1, 0) // size * size)
    items = rows[offset : offset + size]
    return {
        "items": items,
        "offset": offset,
        "first": offset + 1 if items else 0,
        "last": offset + len(items),
        "count": count,
        "previous": max(offset - size, 0) if offset else None,
        "next": offset + size if offset + size < count else None,
    }


def read_page(at: int, shown: int, more: bool, size: int) -> dict:
    """Where a page read by offset stands (``shown`` rows from ``at``, and whether ``more`` follow; the list is
    not counted): which rows it shows (1-based), the offsets of the previous and next pages (None at either
    end), and whether ``at`` is past the end of the list."""
    return {
        "first": at + 1 if shown else 0,
        "last": at + shown,
        "count": None,
        "previous": max(at - size, 0) if at else None,
        "next": at + size if more else None,
        "past_end": bool(at and not shown),
    }


def page_offset(value: str | None) -> int:
    """A page offset from a page's query string: a bad or negative one is 0, a huge one is capped."""
    try:
        return min(max(int(value or 0), 0), MAX_OFFSET)
    except (TypeError, ValueError):
        return 0


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    class Input(Schema):
        limit: int = Field(settings.NINJA_PAGINATION_PER_PAGE, ge=1, le=settings.NINJA_PAGINATION_MAX_LIMIT)
        offset: int = Field(0, ge=0, le=MAX_OFFSET)
