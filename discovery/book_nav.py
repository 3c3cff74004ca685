"""Every page of a book, for the book's navigation: one context processor gives them to any page of a book.

A page whose URL names a book (``book_id``) gets ``links`` in its template context, whichever app's view drew it
(the library's research page, the loop, the agents' runs), so no view builds them and none imports another's.
"""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse


def book_links(book_id) -> dict[str, str | None]:
    """Every page of a book, for the book navigation."""
    return {
        "book": reverse("discovery:book", args=[book_id]),
        "scratchpad": reverse("discovery:scratchpad", args=[book_id]),
        "agents": reverse("agents:runs", args=[book_id]),
        "dossiers": reverse("discovery:dossiers", args=[book_id]),
        "codex": reverse("discovery:codex", args=[book_id]),
        "chapters": reverse("discovery:chapters", args=[book_id]),
        "research": reverse("library:research", args=[book_id]),
        "review": f"{reverse('approvals:inbox')}?book={book_id}",
        "log": reverse("approvals:book_log", args=[book_id]),
        "loop": reverse("loop:page", args=[book_id]),
        "library": reverse("library:search"),
        "search": reverse("discovery:book_search", args=[book_id]),
        "people": reverse("discovery:people", args=[book_id]),
        "charter_new": reverse("discovery:charter_new", args=[book_id]),
        "charter_compare": reverse("discovery:charter_compare", args=[book_id]),
    }


def book_nav(request: HttpRequest) -> dict:
    """``links`` for a page whose URL names a book (a context processor)."""
    match = getattr(request, "resolver_match", None)
    book_id = match.kwargs.get("book_id") if match is not None else None
    return {"links": book_links(book_id)} if book_id is not None else {}
