"""Every count on a page follows an in-place decision, with no reload (Debian's Chromium).

The research page admits and rejects in place: the "waiting" count and the review badge in the nav both
drop after each decision, on the same document (a marker set in the page before the first click is still
there after the last one). The waits are for the state itself, never a fixed sleep.
"""

from __future__ import annotations

import pytest

from discovery.access import book_access
from library.schemas import ResearchIn
from library.services import research_propose
from novelgraph.core.auth import principal_for_user
from tests.factories import PASSWORD, BookFactory, UserFactory

from .conftest import assert_accessible_basics, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admitting_and_rejecting_research_in_place_updates_every_count_without_a_reload(page, seeded):
    author = UserFactory(username="ines")
    book = BookFactory(owner=author, title="The Lighthouse Ledger")
    access = book_access(principal_for_user(author), book)
    for title in ("Tide tables", "Harbour register"):
        research_propose(
            access=access,
            payload=ResearchIn(url="https://example.org/" + title[:4], title=title, claim="06:12.", citation="Almanac"),
        )
    log_in(page, "ines", PASSWORD)
    page.goto(f"/books/{book.pk}/research/")
    badge = page.locator("#review-nav .count")
    waiting = page.locator("#pending-title .count")
    assert badge.inner_text() == "2" and waiting.inner_text() == "2"
    assert_accessible_basics(page)
    page.evaluate("() => { window.sameDocument = true; }")

    first = page.locator("article.research-item", has_text="Tide tables")
    first.get_by_label("Rationale (required)").fill("The almanac is authoritative.")
    first.get_by_role("button", name="Admit").click()
    page.locator("#pending-title .count", has_text="1").wait_for()
    page.locator("#review-nav .count", has_text="1").wait_for()

    second = page.locator("article.research-item", has_text="Harbour register")
    second.get_by_label("Rationale (required)").fill("The register was rewritten later.")
    second.get_by_role("button", name="Reject").click()
    page.locator("#pending-title .count", has_text="0").wait_for()
    badge.wait_for(state="detached")  # no pending decision left: the badge is gone

    assert page.evaluate("() => window.sameDocument === true"), "the page was not reloaded"
    assert page.get_by_text("No research waits for admission.").is_visible()
    assert page.js_errors == []
