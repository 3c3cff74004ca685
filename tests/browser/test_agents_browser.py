"""The agents in Debian's Chromium: the author sends Luna to the library from the scratchpad page,
watches the run go from queued to done in place, and sees its entries appear without reloading."""

from __future__ import annotations

import pytest

from discovery.access import book_access
from discovery.services import discovery_start
from novelgraph.core.auth import principal_for_user
from tests.factories import PASSWORD, BookFactory, UserFactory

from .conftest import assert_accessible_basics, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_luna_is_sent_to_the_library_and_her_entries_appear_in_place(page, screenshot, seeded, worker):
    author = UserFactory(username="mara-author")
    book = BookFactory(owner=author, title="The Salt Road", premise="A courier carries a map that redraws itself.")
    discovery_start(access=book_access(principal_for_user(author), book))
    log_in(page, author.username, PASSWORD)

    page.goto(f"/books/{book.pk}/scratchpad/")
    assert "no agent has run on this book yet" in page.locator("#entries").inner_text()
    assert_accessible_basics(page)
    page.get_by_label("Send Luna to look for guidance on…").fill("planting fair clues")
    page.get_by_role("button", name="Send Luna").click()
    page.locator('#agent-runs [data-status="queued"]').wait_for()

    worker()
    page.locator('#agent-runs [data-status="done"]').wait_for(timeout=60_000)
    page.locator("#entries .written-by", has_text="Written by Luna's run").first.wait_for()
    assert page.locator("#entries .entry").count() >= 2
    assert "literary-guidance" in page.locator("#entries").inner_text()
    assert page.js_errors == []
    screenshot(page, "agents")
