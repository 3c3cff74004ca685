"""The story bible's pages (issue 29): the bible as of a chapter to read and print, its Markdown download, the
author's share links (make, list, revoke) and the shared page a link opens without a login. Bad input shows
inline; the shared page shows the spoiler-safe bible only, nothing else of the app, and asks not to be indexed."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from novelgraph.core.errors import DomainError, Invalid
from novelgraph.core.roles import PersonRole, capabilities_of
from novelgraph.core.schemas import parse_form

from .access import BookAccess, Cap, page_access, series_books
from .bible import bible_markdown, bible_view, series_as_of_words, series_bible_markdown, series_bible_view
from .bible_api import BibleLinkIn, bible_chapter, bible_share_path
from .models import BibleShareLink, Book
from .services import bible as bible_services


def _page(request: HttpRequest, access: BookAccess, *, chapter_text, made=None, error=None, status=200):
    view = None
    if error is None and chapter_text not in (None, ""):
        try:
            view = _view(access, bible_chapter(chapter_text))
        except Invalid as exc:
            error, status = {"message": exc.message, "field": exc.field}, 422
    links = bible_services.bible_links(access) if access.is_author else []
    return render(
        request,
        "discovery/bible.html",
        {
            "book": access.book,
            "role": access.role,
            "bible": view,
            "chapter": chapter_text or "",
            "error": error,
            "links": links,
            "made": made,
        },
        status=status,
    )


def _view(access: BookAccess, chapter: int) -> dict:
    return bible_view(book=access.book, caps=access.caps, role=access.role, chapter=chapter)


@login_required
def bible(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The bible as of ``?chapter=N`` (author and editor): what a reader of chapter N may know."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    return _page(request, access, chapter_text=request.GET.get("chapter"))


@login_required
def bible_download(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The bible as of ``?chapter=N`` as a Markdown file."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    try:
        chapter = bible_chapter(request.GET.get("chapter"))
    except Invalid as exc:
        return HttpResponse(f"chapter: {exc.message}\n", status=422, content_type="text/plain; charset=utf-8")
    response = HttpResponse(bible_markdown(_view(access, chapter)), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{access.book.slug}-bible-chapter-{chapter}.md"'
    return response


@login_required
@require_POST
def bible_link_make(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The author makes a share link fixed at a chapter; the page shows it once."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    try:
        access.require_author()
        payload = parse_form(
            BibleLinkIn, {"chapter": request.POST.get("chapter"), "label": request.POST.get("label", "")}
        )
        link, token = bible_services.bible_link_create(access=access, chapter=payload.chapter, label=payload.label)
    except DomainError as exc:
        if exc.status != 422:
            raise
        return _page(
            request, access, chapter_text=None, error={"message": exc.message, "field": "link-chapter"}, status=422
        )
    made = {"link": link, "url": request.build_absolute_uri(bible_share_path(token))}
    return _page(request, access, chapter_text=str(link.chapter), made=made)


@login_required
@require_POST
def bible_link_revoke(request: HttpRequest, book_id: uuid.UUID, link_id: uuid.UUID) -> HttpResponse:
    """The author revokes a share link: it answers 404 from now on."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    bible_services.bible_link_revoke(access=access, link_id=link_id)
    return redirect(reverse("discovery:bible", args=[access.book.pk]))


def _shared(token: str) -> tuple[BibleShareLink, dict]:
    """The link a token opens (404 unknown or revoked) and the bible it shows: as of the link's chapter (of its
    book, for a series link), in the author's reading of canon, spoiler-safe."""
    link = bible_services.bible_link_open(token)
    caps = capabilities_of(PersonRole.AUTHOR)
    if link.series_id:
        view = series_bible_view(
            series=link.series,
            books=series_books(link.series),
            caps=caps,
            role=PersonRole.AUTHOR,
            book=link.series_book,
            chapter=link.chapter,
        )
    else:
        book: Book = link.book
        view = bible_view(book=book, caps=caps, role=PersonRole.AUTHOR, chapter=link.chapter)
    return link, view


def _not_indexed(response: HttpResponse) -> HttpResponse:
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"
    return response


@require_safe
def bible_shared(request: HttpRequest, token: str) -> HttpResponse:
    """The bible a share link opens, with no login, and a link to the same as Markdown."""
    link, view = _shared(token)
    context = {"bible": view, "markdown_url": reverse("discovery:bible-shared-md", args=[token])}
    if link.series_id:
        context |= {"series": True, "as_of": series_as_of_words(view)}
    return _not_indexed(render(request, "discovery/bible_shared.html", context))


@require_safe
def bible_shared_download(request: HttpRequest, token: str) -> HttpResponse:
    """The bible a share link opens, as a Markdown file."""
    link, view = _shared(token)
    if link.series_id:
        text = series_bible_markdown(view)
        name = f"series-bible-book-{view['position']}-chapter-{view['chapter']}.md"
    else:
        text, name = bible_markdown(view), f"{link.book.slug}-bible-chapter-{link.chapter}.md"
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return _not_indexed(response)
