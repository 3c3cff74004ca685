"""The story bible in Debian's Chromium: the author opens her book's bible as of chapter 3 (the chapter-12 reveal
left out, and the page says so), makes a share link, and a reader with no login opens it in a fresh browser
(no cookies) and reads the bible; the author revokes it and the reader's link answers 404. From the book's bible
the author follows the link to the series bible as of the same chapter."""

from __future__ import annotations

from pathlib import Path

import pytest

from discovery.access import book_access
from discovery.models import KnowledgeBase
from discovery.schemas import ClaimIn
from discovery.services.claims import claim_state
from discovery.services.manuscript import entry_create
from novelgraph.core.auth import principal_for_user
from tests.factories import PASSWORD, BookFactory, UserFactory

from .conftest import assert_accessible_basics, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REVEAL = "the keeper herself rang the bell"
SHOT = Path("/tmp/shots/bible.png")


def book_with_canon():
    author = UserFactory(username="bible-author")
    book = BookFactory(owner=author, title="The Tide Clock", premise="A harbour town's bell rings for a murder.")
    access = book_access(principal_for_user(author), book)
    entry_create(access=access, name="Mara", kind="person", aliases=["the keeper"])
    entry_create(access=access, name="Greyhaven", kind="place", aliases=[])

    def fact(subject: str, predicate: str, value: str, **story):
        claim = ClaimIn(
            scope=KnowledgeBase.Scope.BOOK, scope_id=str(book.pk), subject=subject, predicate=predicate,
            value=value, provenance="author-stated", **story,
        )  # fmt: skip
        return claim_state(access=access, payload=claim, rationale="Canon.")

    fact("Mara", "fears", "deep water")
    fact("Mara", "is", REVEAL, known_by="nobody", first_shown_chapter=12, reveal="solution")
    fact("Greyhaven", "lies on", "the north rock")
    return author, book


def test_the_author_shares_her_bible_and_revokes_the_link(page, chromium, live_server, seeded, screenshot):
    author, book = book_with_canon()
    SHOT.parent.mkdir(parents=True, exist_ok=True)
    log_in(page, author.username, PASSWORD)

    page.goto(f"/books/{book.pk}/bible/")
    page.get_by_label("Chapter the reader has reached").fill("3")
    page.get_by_role("button", name="Show the bible").click()
    document = page.locator("article.bible-doc")
    document.get_by_text("fears: deep water").wait_for()
    assert REVEAL not in document.inner_text()
    assert "1 fact is left out until later chapters." in document.inner_text()
    assert_accessible_basics(page)

    # The bible of the series the book is in, as of the same chapter.
    page.locator("#series-bible-link").click()
    page.wait_for_url(f"**/series/{book.series_id}/bible/?book={book.pk}&chapter=3")
    page.get_by_role("heading", name="Series canon").wait_for()
    page.get_by_role("heading", name="Book 1: The Tide Clock (read to chapter 3)").wait_for()
    assert "1 fact is left out until later chapters." in page.locator("article.bible-doc").inner_text()
    assert_accessible_basics(page)
    page.screenshot(path=str(SHOT.with_name("series-bible.png")), full_page=True)

    page.goto(f"/books/{book.pk}/bible/?chapter=3")
    page.get_by_label("As of chapter").fill("3")
    page.get_by_label("Who it is for (optional)").fill("Beta reader")
    page.get_by_role("button", name="Make a share link").click()
    made = page.locator("#bible-made-link")
    made.wait_for()
    url = made.get_attribute("href")
    assert "/bible/shared/bb_" in url

    # A reader with no login, in a browser of her own.
    reader = chromium.new_context(base_url=live_server.url, viewport={"width": 1000, "height": 900})
    try:
        shared = reader.new_page()
        answer = shared.goto(url)
        assert answer.status == 200
        shared.get_by_role("heading", name="The Tide Clock: story bible").wait_for()
        text = shared.locator("article.bible-doc").inner_text()
        assert "deep water" in text and "the north rock" in text and REVEAL not in text
        assert "left out until later chapters" in text
        assert shared.locator("a[href^='/books/']").count() == 0, "no way into the rest of the app"
        shared.screenshot(path=str(SHOT), full_page=True)
        screenshot(shared, "bible-shared")

        page.get_by_role("list", name="Share links").get_by_text("Beta reader").wait_for()
        page.get_by_role("button", name="Revoke").click()
        page.get_by_text("No share links.").wait_for()

        gone = shared.goto(url)
        assert gone.status == 404
        assert "deep water" not in shared.content()
    finally:
        reader.close()
    assert page.js_errors == []
