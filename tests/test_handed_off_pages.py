"""Issue 26: a handed-off book says so on the dashboard, and its discovery buttons step aside (the Agents panel's
buttons and the "Current question" box on the book page)."""

from __future__ import annotations

import html as html_lib

import pytest

from discovery.loop.models import LoopMeta, LoopStatus
from discovery.models import Book

pytestmark = pytest.mark.django_db

BUTTONS = (
    "Ask Sol for the next question",
    "Send Luna",
    "Ask Terra for thrust candidates",
    "Let Sol ",
)


def _text(response) -> str:
    assert response.status_code == 200
    return html_lib.unescape(response.content.decode())


def test_a_handed_off_book_says_so_and_its_discovery_buttons_step_aside(author, author_browser):
    author_browser.post("/books/new/", {"title": "The Salt Ledger", "premise": "A clerk finds a forged tide table."})
    book = Book.objects.get(owner=author)
    author_browser.post(f"/books/{book.pk}/discovery/start/")

    dashboard, page = _text(author_browser.get("/")), _text(author_browser.get(f"/books/{book.pk}/"))
    assert "Discovery at G0" in dashboard and "Handed off to drafting" not in dashboard
    assert "Current question" in page and 'name="content"' in page
    assert [b for b in BUTTONS if b not in page] == []

    # The state G3's hand-off leaves (tests/test_discovery_to_handoff.py reaches it from the browser).
    LoopMeta.objects.filter(book=book).update(gate="G3", status=LoopStatus.HANDED_OFF)

    dashboard = _text(author_browser.get("/"))
    assert "Handed off to drafting" in dashboard and "Discovery at" not in dashboard
    page = _text(author_browser.get(f"/books/{book.pk}/"))
    assert "Current question" not in page and "Handed off to drafting: no more questions." in page
    assert 'name="content"' not in page, "no answer box after hand-off"
    assert not any(button in page for button in BUTTONS), [b for b in BUTTONS if b in page]
    assert "discovery work on this book is done" in page
    # The scratchpad page's Agents panel steps aside too.
    scratchpad = _text(author_browser.get(f"/books/{book.pk}/scratchpad/"))
    assert not any(button in scratchpad for button in BUTTONS)
