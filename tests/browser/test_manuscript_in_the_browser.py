"""The manuscript in Debian's Chromium: the author of a book with canon uploads a manuscript that plants one error
of each offline kind, runs Luna's continuity check from the chapter's button (a worker runs it, as in the app),
sees the findings highlighted beside the text, and settles one of each kind: fix the text (a new revision, and the
check closes it), intentional with her reason (in the decision log), change canon (a proposal in her Review). Then
she compares two revisions."""

from __future__ import annotations

import pytest

from discovery.access import book_access
from discovery.models import KnowledgeBase
from discovery.schemas import ClaimIn
from discovery.services import discovery_start
from discovery.services.claims import claim_state
from discovery.services.manuscript import entry_create
from novelgraph.core.auth import principal_for_user
from tests.factories import PASSWORD, BookFactory, UserFactory

from .conftest import assert_accessible_basics, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REVEAL = "Only she knew the rest: Mara killed the harbour pilot."
MANUSCRIPT = f"""# Chapter 1: The Bell

Father Aubrey rang the bell at dawn. Mara Quell watched him from the quay of Greyhaven.

# Chapter 2: The Pilot

Mara mended nets all morning. {REVEAL}
Aubrey blessed the boats before the storm.
She walked to the pier, where Inspector Hale was waiting.

# Chapter 3: The Reveal

Tova spoke at last. Mara killed the harbour pilot, she said.
"""


def book_with_canon():
    """The author's book with codex entries and approved canon that has a story record (her own stated facts)."""
    author = UserFactory(username="mara-author")
    book = BookFactory(owner=author, title="The Tide Clock", premise="A harbour town's bell rings for a murder.")
    access = book_access(principal_for_user(author), book)
    discovery_start(access=access)
    for name, kind, aliases in (
        ("Father Aubrey", "person", ["Aubrey", "the chaplain"]),
        ("Mara Quell", "person", ["Mara"]),
        ("Greyhaven", "place", []),
        ("the tide clock", "object", []),
        ("Tova", "person", []),
    ):
        entry_create(access=access, name=name, kind=kind, aliases=aliases)

    def fact(subject: str, predicate: str, value: str, **story):
        claim = ClaimIn(
            scope=KnowledgeBase.Scope.BOOK, scope_id=str(book.pk), subject=subject, predicate=predicate,
            value=value, provenance="author-stated", **story,
        )  # fmt: skip
        return claim_state(access=access, payload=claim, rationale="Canon.")

    fact("Father Aubrey", "is alive", "yes", true_from_chapter=1, true_until_chapter=1)
    killer = fact("Mara", "killed", "the harbour pilot", known_by="nobody", first_shown_chapter=3, reveal="solution")
    fact("the tide clock", "was stopped at", "seven bells", decisive=True, evidence_for=killer.pk)
    return author, book


def run_the_check(page) -> None:
    """Press the button; the status polls in place until Luna's run is done and the findings refresh."""
    page.get_by_role("button", name="Run the check").click()
    page.locator('#check-status [data-status="done"]').wait_for(timeout=60_000)


def settle(page, kind: str, resolution: str, **fields: str) -> None:
    finding = page.locator(f'li.finding[data-kind="{kind}"][data-status="open"]')
    finding.get_by_label("Settle").select_option(label=resolution)
    for label, value in fields.items():
        finding.get_by_label(label).fill(value)
    finding.get_by_role("button", name="Settle").click()


def test_the_author_checks_her_manuscript_and_settles_a_finding_each_way(page, screenshot, seeded, worker):
    author, book = book_with_canon()
    worker()
    log_in(page, author.username, PASSWORD)

    page.goto(f"/books/{book.pk}/chapters/")
    page.get_by_label("File").set_input_files(
        files=[{"name": "the-tide-clock.md", "mimeType": "text/markdown", "buffer": MANUSCRIPT.encode()}]
    )
    page.get_by_role("button", name="Upload").click()
    page.get_by_text("Uploaded 3 chapter(s).").wait_for()

    # Chapter 3: the reveal, whose decisive evidence no earlier chapter shows.
    page.goto(f"/books/{book.pk}/chapters/3/")
    run_the_check(page)
    page.locator('li.finding[data-kind="evidence-not-shown"]').wait_for()
    assert page.locator("li.finding").count() == 1

    # Chapter 2: told too early, an entry acting after its time, and a name canon does not know.
    page.goto(f"/books/{book.pk}/chapters/2/")
    run_the_check(page)
    findings = page.locator("li.finding")
    findings.nth(2).wait_for()
    assert sorted(findings.evaluate_all("(els) => els.map((el) => el.dataset.kind)")) == [
        "not-in-canon",
        "out-of-time",
        "reveal-too-early",
    ]
    assert page.locator(".manuscript mark").all_inner_texts() == [
        REVEAL,
        "Aubrey blessed the boats before the storm.",
        "Hale",
    ]
    assert_accessible_basics(page)
    screenshot(page, "manuscript-findings")

    # Intentional, with her reason: in the decision log.
    settle(page, "not-in-canon", "It is intentional", **{"Why (for intentional)": "Hale is a passer-by."})
    page.get_by_text("your reason is in the decision log").wait_for()
    # Change canon: a proposal that waits in her Review.
    settle(page, "out-of-time", "Change canon", **{"New value (for a canon change)": "yes, until chapter 2"})
    page.get_by_text("A change of canon is proposed").wait_for()
    # Fix the text: a new revision without the reveal, and the check closes the finding.
    settle(page, "reveal-too-early", "I will fix the text")
    page.get_by_text("save a new revision").wait_for()
    text = page.get_by_label("New text (Markdown)")
    text.fill(text.input_value().replace(REVEAL, "She said nothing."))
    page.get_by_role("button", name="Save as a new revision").click()
    page.get_by_text("Saved revision 2").wait_for()
    run_the_check(page)
    page.locator('li.finding[data-kind="reveal-too-early"][data-status="fixed"]').wait_for()
    assert page.locator('li.finding[data-status="open"]').count() == 0
    assert page.locator('li.finding[data-kind="not-in-canon"]').get_attribute("data-status") == "intentional"
    assert page.locator('li.finding[data-kind="out-of-time"]').get_attribute("data-status") == "canon-change"
    assert page.locator(".manuscript mark").count() == 0
    screenshot(page, "manuscript-settled")

    # The two revisions compared: words added and removed, the changed lines.
    page.get_by_role("button", name="Compare").click()
    compare = page.locator("#compare")
    compare.wait_for()
    assert "3 words added" in compare.inner_text() and "10 words removed" in compare.inner_text()
    # Only the words that changed are marked; the kept start of the line is not.
    assert compare.locator("del").all_inner_texts() == [REVEAL]
    assert compare.locator("ins").all_inner_texts() == ["She said nothing."]
    assert_accessible_basics(page)
    screenshot(page, "manuscript-compare")

    page.goto(f"/review/books/{book.pk}/log/")
    page.get_by_text("Hale is a passer-by.").wait_for()
    page.goto("/review/")
    page.get_by_role("link", name="Canon: Father Aubrey is alive yes, until chapter 2").wait_for()
    screenshot(page, "manuscript-canon-change-in-review")
    assert page.js_errors == []
