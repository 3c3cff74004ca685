"""Series and books: a person creates them and becomes their author."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.utils.text import slugify

from novelgraph.auth import Principal
from novelgraph.errors import Forbidden, NotFound

from ..models import Book, Series
from ..schemas import BookIn, SeriesIn


def _person_only(principal: Principal, what: str) -> None:
    """Series and books are created by their author, as herself: never by an agent key, and never
    by a key limited to other books."""
    if principal.is_agent:
        raise Forbidden(
            f"{principal.key_role} cannot create {what}: series and books are created by their author, "
            "with a browser session or a personal key",
            code="missing_capability",
        )
    if principal.key_book_ids:
        raise Forbidden(f"this key is limited to some books; it cannot create {what}", code="key_scope")


def series_create(*, principal: Principal, payload: SeriesIn) -> Series:
    """A person creates a series, which she owns."""
    _person_only(principal, "series")
    return Series.objects.create(owner=principal.user, **payload.dict())


def _unique_slug(title: str) -> str:
    base = slugify(title)[:200] or "book"
    return f"{base}-{uuid.uuid4().hex[:8]}"


def book_create(*, principal: Principal, payload: BookIn) -> Book:
    """A person creates a book and becomes its author; the series, if named, must be hers (404 otherwise)."""
    _person_only(principal, "books")
    data = payload.dict()
    series = None
    if data.pop("series_id") is not None:
        series = Series.objects.filter(pk=payload.series_id, owner=principal.user).first()
        if series is None:
            raise NotFound("series not found", field="series_id")
    with transaction.atomic():
        return Book.objects.create(owner=principal.user, series=series, slug=_unique_slug(payload.title), **data)
