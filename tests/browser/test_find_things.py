"""Finding things, in Debian's Chromium on the demo data: a natural question in the library, a citation opened
in context, browsing by topic, a citation from the scratchpad, and the book's own search."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from discovery.models import Book

from .conftest import assert_accessible_basics, assert_fits_phone_width, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo_book(seeded) -> Book:
    call_command("demo", stdout=StringIO())
    return Book.objects.get(title="The Lighthouse Letter")


def test_the_author_finds_guidance_reads_it_in_context_and_searches_her_book(page, demo_book):
    log_in(page, "author", "novelgraph-author")

    # A natural question finds the guidance on earned twists; its citation opens the passage in context.
    page.goto("/library/")
    page.get_by_label("Search words").fill("how do I make a twist feel earned?")
    page.get_by_role("button", name="Search").click()
    first = page.locator(".library-citation a").first
    first.wait_for()
    assert first.inner_text() == "Promise and payoff"
    assert "Fair-play mystery" in page.locator("#library-results").inner_text()
    first.click()
    page.wait_for_url("**/library/chunks/*/")
    assert page.get_by_role("heading", level=1).inner_text() == "Promise and payoff"
    assert "(before)" in page.locator("main").inner_text() and "(after)" in page.locator("main").inner_text()
    assert_accessible_basics(page)
    page.set_viewport_size({"width": 390, "height": 844})
    assert_fits_phone_width(page)
    page.set_viewport_size({"width": 1280, "height": 900})

    # Its topic "twist" lists the passages on twists.
    page.get_by_role("link", name="twist", exact=True).click()
    page.wait_for_url("**/library/topics/twist/")
    assert "Fair-play mystery" in page.locator("#browse-list").inner_text()
    assert_accessible_basics(page)

    # A citation in the scratchpad (Terra cites the fair-play guidance) opens its passage.
    page.goto(f"/books/{demo_book.pk}/scratchpad/")
    page.locator("a[href^='/library/chunks/']").first.click()
    page.wait_for_url("**/library/chunks/*/")
    assert page.get_by_role("heading", level=1).inner_text() == "Fair-play mystery"

    # The book's own record: turns, scratchpad, claims and charters.
    page.goto(f"/books/{demo_book.pk}/")
    page.get_by_role("navigation", name="This book").get_by_role("link", name="Search", exact=True).click()
    page.wait_for_url(f"**/books/{demo_book.pk}/search/")
    page.get_by_label("Search this book's turns, scratchpad, claims and charters").fill("who wrote the letter?")
    page.get_by_role("button", name="Search").click()
    page.locator("#record-results .library-hit").first.wait_for()
    assert "records found" in page.locator("#record-results").inner_text()
    assert_accessible_basics(page)
    page.set_viewport_size({"width": 390, "height": 844})
    assert_fits_phone_width(page)
