"""What the apps above discovery show on a book's page: each registers a panel from its ``AppConfig.ready()``.

A panel is ``panel(book) -> dict``, merged into the book page's context (the loop gives ``loop``, its meta, and
``gates``, the stepper G0 to G3, and says whether the discovery was ``handed_off``).
"""

from __future__ import annotations

from collections.abc import Callable

from .models import Book

BOOK_PANELS: list[Callable[[Book], dict]] = []


def register_book_panel(panel: Callable[[Book], dict]) -> None:
    BOOK_PANELS.append(panel)


def book_panels(book: Book) -> dict:
    """Every registered panel's context for ``book``, in registration order."""
    context: dict = {}
    for panel in BOOK_PANELS:
        context.update(panel(book))
    return context
