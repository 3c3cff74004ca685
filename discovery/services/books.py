"""Series and books: a person creates them and becomes their author."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from novelgraph.errors import Forbidden, NotFound

from ..access import Principal
from ..models import Book, Series
from .common import check_text


def _person_only(principal: Principal, what: str) -> None:
    if principal.is_agent:
        raise Forbidden(
            f"{principal.key_role} cannot create {what}: series and books are created by their author, "
            "with a browser session or a personal key",
            code="missing_capability",
        )


def series_create(*, principal: Principal, title: str, premise: str = "", publication_target: str = "") -> Series:
    """A person creates a series, which they own. Agent keys never create series."""
    _person_only(principal, "series")
    return Series.objects.create(
        owner=principal.user,
        title=check_text(title, "title", max_length=200),
        premise=check_text(premise, "premise", max_length=20_000, required=False),
        publication_target=check_text(publication_target, "publication_target", max_length=200, required=False),
    )


def _unique_slug(title: str) -> str:
    base = slugify(title)[:200] or "book"
    return f"{base}-{uuid.uuid4().hex[:8]}"


def book_create(
    *,
    principal: Principal,
    title: str,
    series_id: Any = None,
    premise: str = "",
    genre_pack: str = "",
    planned_order: int | None = None,
) -> Book:
    """A person creates a book and becomes its author; the series, if named, must be theirs (404 otherwise)."""
    _person_only(principal, "books")
    series = None
    if series_id is not None:
        series = Series.objects.filter(pk=series_id, owner=principal.user).first()
        if series is None:
            raise NotFound("series not found", field="series_id")
    title = check_text(title, "title", max_length=200)
    with transaction.atomic():
        return Book.objects.create(
            owner=principal.user,
            series=series,
            title=title,
            slug=_unique_slug(title),
            premise=check_text(premise, "premise", max_length=20_000, required=False),
            genre_pack=check_text(genre_pack, "genre_pack", max_length=100, required=False),
            planned_order=planned_order,
        )
