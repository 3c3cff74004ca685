"""The story bible's routes (issue 29): the bible as of a chapter (JSON or Markdown) for anyone who reads the book,
and the author's share links (make, list, revoke)."""

import uuid
from datetime import datetime
from typing import Literal

from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema
from ninja.responses import Status

from novelgraph.core.auth import principal_of
from novelgraph.core.schemas import ERRORS, Text, parse_input

from .access import Cap, book_access
from .bible import bible_markdown, bible_view
from .models import BibleShareLink
from .schemas import Chapter
from .services import bible as bible_services

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
