"""The author's day, in Debian's Chromium against a live server, on the demo data.

One walk: log in, open the demo book, filter the scratchpad to Luna's questions, open
the pending charter, fail to approve it without a rationale (nothing changes), approve
it with one, see it in the verified decision log, find the fair-play citation in the
library, and see the orphan highlighted in the loop page's traceability picture. Then an editor reads without decision
controls. A screenshot of each main page is saved under test-artifacts/screenshots/.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from discovery.models import Book, StoryCharter

from .conftest import assert_accessible_basics, assert_fits_phone_width, assert_no_serious_axe_violations, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo_book(seeded) -> Book:
    call_command("demo", stdout=StringIO())
    return Book.objects.get(title="The Lighthouse Letter")


def test_the_authors_day_from_login_to_a_decided_charter(page, screenshot, demo_book):
    charter = StoryCharter.objects.get(book=demo_book)

    # Log in (an anonymous visit lands on the login page) and open the demo book from the dashboard.
    page.goto("/")
    assert "/login/" in page.url
    assert_no_serious_axe_violations(page)
    screenshot(page, "login")
    log_in(page, "author", "novelgraph-author")
    assert page.get_by_role("heading", level=1).inner_text() == "Your books"
    assert_accessible_basics(page)
    screenshot(page, "dashboard")
    page.get_by_role("link", name="The Lighthouse Letter").click()
    page.wait_for_url(f"**/books/{demo_book.pk}/")
    assert page.locator(".current-question").is_visible()
    assert_accessible_basics(page)
    screenshot(page, "book")

    # Filter the scratchpad to Luna's questions: the list updates in place.
    page.get_by_role("navigation", name="This book").get_by_role("link", name="Scratchpad").click()
    assert page.locator("#entries .entry").count() == 18
    page.get_by_label("Kind").select_option("question")
    page.get_by_label("Role").select_option("luna")
    page.wait_for_url("**/scratchpad/?kind=question&role=luna")
    page.wait_for_function("document.querySelectorAll('#entries .entry').length === 1")
    entry = page.locator("#entries .entry")
    assert "Does Mara know the handwriting is not hers?" in entry.inner_text()
    assert entry.locator(".refs a").count() == 2  # the two turns it cites, as links
    assert_accessible_basics(page)
    screenshot(page, "scratchpad")

    # Open the pending charter from the book page.
    page.goto(f"/books/{demo_book.pk}/")
    page.get_by_role("link", name="Review and decide").click()
    page.wait_for_url(f"**/review/{charter.approval_id}/")
    assert_accessible_basics(page)
    screenshot(page, "review")

    # Approving without a rationale shows the error inline, and nothing changes.
    page.get_by_label("Verdict").select_option("approve")
    page.get_by_role("button", name="Record the decision").click()
    error = page.locator("#decision-panel [role=alert]")
    error.wait_for()
    assert "rationale" in error.inner_text().lower()
    assert_no_serious_axe_violations(page)  # with the inline error shown
    charter.refresh_from_db()
    assert charter.status == "proposed"

    # With a rationale, the charter is approved and the log entry shows.
    page.get_by_label("Rationale (required)").fill("The tide gives the book its clock; the letter its heart.")
    page.get_by_role("button", name="Record the decision").click()
    page.locator("[data-testid=log-entry]").wait_for()
    assert_no_serious_axe_violations(page)  # the decided page, as updated in place
    charter.refresh_from_db()
    assert charter.status == "approved"

    # The decision log shows it, verified.
    page.goto(f"/review/books/{demo_book.pk}/log/")
    assert page.locator("[data-testid=log-badge]").inner_text() == "verified"
    assert page.get_by_text("The tide gives the book its clock").first.is_visible()
    assert_accessible_basics(page)
    screenshot(page, "decision-log")

    # The library finds the fair-play guidance with its citation.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Library").click()
    page.get_by_label("Search words").fill("fair play")
    page.get_by_role("button", name="Search").click()
    citation = page.locator(".library-citation").first
    citation.wait_for()
    assert "fair" in citation.inner_text().lower()
    assert_accessible_basics(page)
    screenshot(page, "library")

    # The loop page: the gate stepper at G1.5 and the orphan highlighted in the traceability picture.
    page.goto(f"/books/{demo_book.pk}/")
    page.get_by_role("navigation", name="This book").get_by_role("link", name="Loop").click()
    page.wait_for_url(f"**/books/{demo_book.pk}/loop/")
    trace = page.locator("section[aria-labelledby=trace-h] svg")
    orphans = trace.locator("g.lint-orphan")
    assert orphans.count() == 1
    assert "subplot-harbour" in orphans.locator("title").text_content()
    assert orphans.locator(".loop-flag").text_content() == "not linked"
    normal = trace.locator("g.loop-node:not(.lint-orphan) rect").first
    style = "(el) => getComputedStyle(el).stroke + ' ' + getComputedStyle(el).fill"
    assert orphans.locator("rect").evaluate(style) != normal.evaluate(style)  # drawn differently
    assert "G1.5" in page.locator("main").inner_text()
    assert_accessible_basics(page)
    screenshot(page, "loop")
    trace.scroll_into_view_if_needed()
    assert_no_serious_axe_violations(page)
    screenshot(page, "loop-trace")

    assert page.js_errors == []


def test_an_editor_reads_everything_but_sees_no_decision_buttons(page, screenshot, demo_book):
    charter = StoryCharter.objects.get(book=demo_book)
    log_in(page, "editor", "novelgraph-editor")
    page.get_by_role("link", name="The Lighthouse Letter").click()
    assert "You are the editor" in page.locator(".page-head").inner_text()
    assert_accessible_basics(page)
    page.get_by_role("link", name="Read the proposal").click()
    page.wait_for_url(f"**/review/{charter.approval_id}/")
    assert page.locator("[data-testid=read-only]").is_visible()
    assert_accessible_basics(page)
    assert page.get_by_role("button", name="Record the decision").count() == 0
    page.goto(f"/books/{demo_book.pk}/research/")
    assert page.get_by_text("Lighthouse keepers' logbooks").is_visible()
    assert page.get_by_role("button", name="Admit").count() == 0
    assert_accessible_basics(page)
    page.goto(f"/books/{demo_book.pk}/dossiers/")
    assert page.get_by_role("button", name="Take snapshot").count() == 0
    assert_accessible_basics(page)
    page.locator("section[aria-labelledby=dossiers-luna] a").first.click()
    caps = page.locator(".capabilities")
    assert "not given series:read" in " ".join(caps.inner_text().split())
    assert "series canon (luna lacks series:read)" in page.locator("main").inner_text()
    assert_accessible_basics(page)
    screenshot(page, "editor-dossier")
    charter.refresh_from_db()
    assert charter.status == "proposed"


def test_pages_read_well_at_phone_width_and_keyboard_focus_is_visible(page, screenshot, demo_book):
    page.set_viewport_size({"width": 375, "height": 812})
    log_in(page, "author", "novelgraph-author")
    for path in (
        "/",
        f"/books/{demo_book.pk}/",
        f"/books/{demo_book.pk}/scratchpad/",
        f"/books/{demo_book.pk}/research/",
    ):
        page.goto(path)
        assert_fits_phone_width(page)
        assert_no_serious_axe_violations(page)
    screenshot(page, "phone-research")
    # The first Tab reaches the skip link, which becomes visible and moves focus to the content.
    page.goto(f"/books/{demo_book.pk}/")
    page.keyboard.press("Tab")
    skip = page.locator(".skip-link")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    box = skip.bounding_box()
    assert box is not None and box["x"] >= 0
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
