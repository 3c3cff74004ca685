"""The series bible's pages (issue 29): the series' story bible as of a chapter of one of its books, to read and
print, its Markdown download, and the owner's share links (make, list, revoke). The shared page is the book
bible's (``bible_pages.bible_shared``), which opens a series link too. Bad input shows inline."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from novelgraph.core.errors import DomainError, Invalid
from novelgraph.core.schemas import parse_form

from .access import Cap, SeriesAccess, page_series_access
from .bible import series_as_of_words, series_bible_markdown
from .bible_api import SeriesBibleLinkIn, bible_share_path, series_bible_read
from .services import series_bible as series_bible_services


def _page(request: HttpRequest, access: SeriesAccess, *, at=None, made=None, error=None, status=200):
    at = at or {"book": request.GET.get("book") or "", "chapter": request.GET.get("chapter") or ""}
    view = None
    if error is None and (at["book"] or at["chapter"]):
        try:
            view = series_bible_read(access, at["book"], at["chapter"])
        except Invalid as exc:
            error, status = {"message": exc.message, "field": exc.field}, 422
    links = series_bible_services.series_bible_links(access) if access.is_author else []
    return render(
        request,
        "discovery/series_bible.html",
        {
            "series": access.series,
            "books": [b.book for b in access.books],
            "role": access.role,
            "bible": view,
            "as_of": series_as_of_words(view) if view else "",
            "at": at,
            "error": error,
            "links": links,
            "made": made,
        },
        status=status,
    )


@login_required
def series_bible(request: HttpRequest, series_id: uuid.UUID) -> HttpResponse:
    """The series bible as of ``?book=<id>&chapter=N`` (the owner, and editors of its books for those books)."""
    access = page_series_access(request, series_id, Cap.SERIES_READ)
    return _page(request, access)


@login_required
def series_bible_download(request: HttpRequest, series_id: uuid.UUID) -> HttpResponse:
    """The series bible as of ``?book=<id>&chapter=N`` as a Markdown file."""
    access = page_series_access(request, series_id, Cap.SERIES_READ)
    try:
        view = series_bible_read(access, request.GET.get("book"), request.GET.get("chapter"))
    except Invalid as exc:
        return HttpResponse(f"{exc.message}\n", status=422, content_type="text/plain; charset=utf-8")
    response = HttpResponse(series_bible_markdown(view), content_type="text/markdown; charset=utf-8")
    name = f"series-bible-book-{view['position']}-chapter-{view['chapter']}.md"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_POST
def series_bible_link_make(request: HttpRequest, series_id: uuid.UUID) -> HttpResponse:
    """The owner makes a share link fixed at a book and chapter; the page shows it once."""
    access = page_series_access(request, series_id, Cap.SERIES_READ)
    form = {k: request.POST.get(k, "") for k in ("book", "chapter", "label")}
    try:
        access.require_author()
        payload = parse_form(SeriesBibleLinkIn, form)
        link, token = series_bible_services.series_bible_link_create(
            access=access, book_id=payload.book, chapter=payload.chapter, label=payload.label
        )
    except DomainError as exc:
        if exc.status != 422:
            raise
        error = {"message": exc.message, "field": f"link-{exc.field}"}
        return _page(request, access, at={"book": "", "chapter": ""}, error=error, status=422)
    made = {"link": link, "url": request.build_absolute_uri(bible_share_path(token))}
    return _page(request, access, at={"book": str(link.series_book_id), "chapter": str(link.chapter)}, made=made)


@login_required
@require_POST
def series_bible_link_revoke(request: HttpRequest, series_id: uuid.UUID, link_id: uuid.UUID) -> HttpResponse:
    """The owner revokes a series share link: it answers 404 from now on."""
    access = page_series_access(request, series_id, Cap.SERIES_READ)
    series_bible_services.series_bible_link_revoke(access=access, link_id=link_id)
    return redirect(reverse("discovery:series-bible", args=[access.series.pk]))
