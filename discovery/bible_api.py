"""The story bible's routes (issue 29): the bible as of a chapter (JSON or Markdown) for anyone who reads the book,
and the author's share links (make, list, revoke); the same for a series, as of a chapter of one of its books."""

import uuid
from datetime import datetime
from typing import Literal

from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema
from ninja.responses import Status

from novelgraph.core.auth import principal_of
from novelgraph.core.errors import Invalid
from novelgraph.core.schemas import ERRORS, Text, parse_input

from .access import Cap, SeriesAccess, book_access, series_access
from .bible import bible_markdown, bible_view, series_bible_markdown, series_bible_view
from .models import BibleShareLink
from .schemas import Chapter
from .services import bible as bible_services
from .services import series_bible as series_bible_services

router = Router(tags=["bible"])


class BibleChapterFilter(Schema):
    # Required, but checked after access (a book the caller may not touch stays a 404): no default chapter, since
    # a default could give a reader more than she has read.
    chapter: Chapter | None = Field(
        None, description="The chapter the reader has reached (required): the bible holds what she may know."
    )


class BibleFilter(BibleChapterFilter):
    format: Literal["json", "markdown"] = "json"


class BibleFactOut(Schema):
    predicate: str
    value: str
    from_chapter: int | None
    until_chapter: int | None
    shown_chapter: int | None


class BibleEntryOut(Schema):
    name: str
    kind: str
    aliases: list[str]
    facts: list[BibleFactOut]


class BibleKindOut(Schema):
    kind: str
    heading: str
    entries: list[BibleEntryOut]


class BibleOut(Schema):
    book_id: uuid.UUID
    title: str
    chapter: int
    chapter_title: str | None
    facts: int
    kinds: list[BibleKindOut]
    left_out: dict[str, int]
    left_out_words: list[str]


class BibleChapterIn(Schema):
    """The chapter a page or a download of the bible is as of (required: no default could be spoiler-safe)."""

    chapter: Chapter


class BibleLinkIn(BibleChapterIn):
    label: Text(200) = ""


def bible_chapter(value) -> int:
    """The chapter a bible is as of, validated as every input is (a 422 naming ``chapter`` and why)."""
    return parse_input(BibleChapterIn, {"chapter": value}).chapter


class BibleLinkOut(Schema):
    id: uuid.UUID
    chapter: int
    label: str
    prefix: str
    created_at: datetime


class BibleLinkMadeOut(BibleLinkOut):
    token: str
    url: str


def bible_read(access, chapter: int | None) -> dict:
    """The bible as the reader of ``chapter`` may read it, in the caller's scope (Luna's lacks series canon)."""
    chapter = bible_chapter(chapter)
    return bible_view(book=access.book, caps=access.caps, role=access.role, chapter=chapter)


# ``format=markdown`` answers the same 200 as a Markdown document: documented beside the JSON.
MARKDOWN_TOO = {"responses": {200: {"content": {"text/markdown": {"schema": {"type": "string"}}}}}}


def bible_share_path(token: str) -> str:
    return f"/bible/shared/{token}/"


@router.get(
    "/books/{book_id}/bible",
    response={200: BibleOut, **ERRORS},
    summary="The story bible as of a chapter",
    description="What a reader of the chapter may know, by kind (people, places, objects, events) and codex entry; "
    "what is left out (later reveals, secrets, facts true only later) is counted, never named. "
    "``format=markdown`` answers the same as a Markdown document.",
    openapi_extra=MARKDOWN_TOO,
)
def bible_get(request: HttpRequest, book_id: uuid.UUID, filters: Query[BibleFilter]):
    view = bible_read(book_access(principal_of(request), book_id, Cap.BOOK_READ), filters.chapter)
    if filters.format == "markdown":
        return HttpResponse(bible_markdown(view), content_type="text/markdown; charset=utf-8")
    return view


@router.get("/books/{book_id}/bible/links", response={200: list[BibleLinkOut], **ERRORS}, summary="Share links")
def bible_links_list(request: HttpRequest, book_id: uuid.UUID):
    return bible_services.bible_links(book_access(principal_of(request), book_id))


@router.post("/books/{book_id}/bible/links", response={201: BibleLinkMadeOut, **ERRORS}, summary="Make a share link")
def bible_links_create(request: HttpRequest, book_id: uuid.UUID, payload: BibleLinkIn):
    access = book_access(principal_of(request), book_id)
    link, token = bible_services.bible_link_create(access=access, chapter=payload.chapter, label=payload.label)
    return Status(201, _made(request, link, token))


@router.delete(
    "/books/{book_id}/bible/links/{link_id}", response={200: BibleLinkOut, **ERRORS}, summary="Revoke a share link"
)
def bible_links_revoke(request: HttpRequest, book_id: uuid.UUID, link_id: uuid.UUID):
    access = book_access(principal_of(request), book_id)
    return bible_services.bible_link_revoke(access=access, link_id=link_id)


def _made(request: HttpRequest, link: BibleShareLink, token: str) -> dict:
    return {
        "id": link.pk,
        "chapter": link.chapter,
        "label": link.label,
        "prefix": link.prefix,
        "created_at": link.created_at,
        "token": token,
        "url": request.build_absolute_uri(bible_share_path(token)),
    }


# --- The series bible -------------------------------------------------------------------------------------------


class SeriesBibleAtFilter(Schema):
    # Both required, and checked after access (a series the caller may not touch stays a 404): no default book or
    # chapter, since a default could give a reader more than she has read.
    book: uuid.UUID | None = Field(
        None, description="The book of the series the reader is in (required): she has read every earlier one."
    )
    chapter: Chapter | None = Field(
        None, description="The chapter of that book she has reached (required): the bible holds what she may know."
    )


class SeriesBibleFilter(SeriesBibleAtFilter):
    format: Literal["json", "markdown"] = "json"


class SeriesBibleAtIn(Schema):
    """Where a series bible's reader stands: a book of the series and a chapter of it (both required)."""

    book: uuid.UUID
    chapter: Chapter


class SeriesBibleLinkIn(SeriesBibleAtIn):
    label: Text(200) = ""


class SeriesBibleFactOut(BibleFactOut):
    book: str | None = Field(None, description="The book a series fact came through: its chapters count there.")


class SeriesBibleEntryOut(BibleEntryOut):
    facts: list[SeriesBibleFactOut]


class SeriesBibleKindOut(BibleKindOut):
    entries: list[SeriesBibleEntryOut]


class SeriesCanonOut(Schema):
    facts: int
    kinds: list[SeriesBibleKindOut]
    left_out: dict[str, int]
    left_out_words: list[str]


class SeriesBibleBookOut(Schema):
    book_id: uuid.UUID
    title: str
    planned_order: int | None
    position: int
    read: str = Field(description="``entirely`` for an earlier book, ``to chapter N`` for the reader's book.")
    chapter: int
    chapter_title: str | None
    facts: int
    kinds: list[BibleKindOut]
    left_out: dict[str, int]
    left_out_words: list[str]


class SeriesBibleOut(Schema):
    series_id: uuid.UUID
    title: str
    book_id: uuid.UUID
    book_title: str
    position: int
    books: int
    chapter: int
    chapter_title: str | None
    facts: int
    series_canon: SeriesCanonOut
    sections: list[SeriesBibleBookOut]
    left_out: dict[str, int]
    left_out_words: list[str]


class SeriesBibleLinkOut(BibleLinkOut):
    book_id: uuid.UUID = Field(description="The series' book the link's reader has reached (to ``chapter``).")

    @staticmethod
    def resolve_book_id(obj) -> uuid.UUID:
        return obj["series_book_id"] if isinstance(obj, dict) else obj.series_book_id


class SeriesBibleLinkMadeOut(SeriesBibleLinkOut):
    token: str
    url: str


def series_bible_at(access: SeriesAccess, book, chapter) -> tuple:
    """Where the reader stands, validated as every input is (a 422 naming ``book`` or ``chapter``): the book
    must be one of the series' books the caller may read."""
    at = parse_input(SeriesBibleAtIn, {"book": book, "chapter": chapter})
    found = next((b.book for b in access.books if b.book.pk == at.book), None)
    if found is None:
        raise Invalid("book: not a book of this series that you may read", field="book")
    return found, at.chapter


def series_bible_read(access: SeriesAccess, book, chapter) -> dict:
    """The series bible as the reader of ``book``'s ``chapter`` may read it (series:read: never Luna's)."""
    access.require(Cap.SERIES_READ)
    at, chapter = series_bible_at(access, book, chapter)
    return series_bible_view(
        series=access.series,
        books=[b.book for b in access.books],
        caps=access.caps,
        role=access.role,
        book=at,
        chapter=chapter,
    )


@router.get(
    "/series/{series_id}/bible",
    response={200: SeriesBibleOut, **ERRORS},
    summary="The series bible as of a book and chapter",
    description="What a reader who has read the series' earlier books and ``book`` up to ``chapter`` may know: "
    "the series' canon, then each book read, by kind and codex entry. Later books, later reveals and secrets are "
    "left out and counted, never named. ``format=markdown`` answers the same as a Markdown document.",
    openapi_extra=MARKDOWN_TOO,
)
def series_bible_get(request: HttpRequest, series_id: uuid.UUID, filters: Query[SeriesBibleFilter]):
    access = series_access(principal_of(request), series_id, Cap.SERIES_READ)
    view = series_bible_read(access, filters.book, filters.chapter)
    if filters.format == "markdown":
        return HttpResponse(series_bible_markdown(view), content_type="text/markdown; charset=utf-8")
    return view


@router.get(
    "/series/{series_id}/bible/links", response={200: list[SeriesBibleLinkOut], **ERRORS}, summary="Series share links"
)
def series_bible_links_list(request: HttpRequest, series_id: uuid.UUID):
    return series_bible_services.series_bible_links(series_access(principal_of(request), series_id))


@router.post(
    "/series/{series_id}/bible/links",
    response={201: SeriesBibleLinkMadeOut, **ERRORS},
    summary="Make a share link to the series bible",
)
def series_bible_links_create(request: HttpRequest, series_id: uuid.UUID, payload: SeriesBibleLinkIn):
    access = series_access(principal_of(request), series_id)
    link, token = series_bible_services.series_bible_link_create(
        access=access, book_id=payload.book, chapter=payload.chapter, label=payload.label
    )
    return Status(201, {**_made(request, link, token), "series_book_id": link.series_book_id})


@router.delete(
    "/series/{series_id}/bible/links/{link_id}",
    response={200: SeriesBibleLinkOut, **ERRORS},
    summary="Revoke a share link to the series bible",
)
def series_bible_links_revoke(request: HttpRequest, series_id: uuid.UUID, link_id: uuid.UUID):
    access = series_access(principal_of(request), series_id)
    return series_bible_services.series_bible_link_revoke(access=access, link_id=link_id)
