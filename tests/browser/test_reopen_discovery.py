"""Reopening discovery in Debian's Chromium: on her handed-off book the author picks a gate, sees what reopening
there touches (her chapters kept with their text), is told inline when she gives no reason, then reopens, and the
discovery's buttons come back."""

from __future__ import annotations

import pytest

from discovery.loop.models import LoopMeta
from tests.factories import PASSWORD
from tests.test_discovery_reopen import hand_off

from .conftest import assert_accessible_basics, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_author_reopens_her_handed_off_discovery_from_the_book_page(
    page, screenshot, seeded, author, book, sol_api, author_api, luna_api, terra_api
):
    from tests.loop_scenes import start_discovery

    start_discovery(book)
    hand_off(book, sol_api, author_api, luna_api, terra_api)
    log_in(page, author.username, PASSWORD)

    page.goto(f"/books/{book.pk}/")
    page.get_by_label("The draft changed direction? Reopen at").select_option("G2")
    page.get_by_role("button", name="Reopen discovery").click()
    impact = page.get_by_test_id("reopen-impact")
    impact.wait_for()
    assert "What reopening at G2 touches" in impact.inner_text()
    assert "1. The Bell" in impact.inner_text() and "1 revision" in impact.inner_text()
    assert_accessible_basics(page)
    screenshot(page, "reopen-discovery")

    page.get_by_role("button", name="Reopen discovery at G2").click()
    page.locator("#reopen-error").wait_for()
    assert "rationale" in page.locator("#reopen-error").inner_text()
    assert LoopMeta.objects.get(book=book).status == "handed-off"

    page.get_by_label("Why the discovery reopens").fill("The draft turned: the keeper is the culprit.")
    page.get_by_role("button", name="Reopen discovery at G2").click()
    page.get_by_role("button", name="Ask Sol for the next question").wait_for()
    assert (LoopMeta.objects.get(book=book).gate, LoopMeta.objects.get(book=book).status) != ("G2", "handed-off")
    assert LoopMeta.objects.get(book=book).gate == "G2"
    assert page.js_errors == []
