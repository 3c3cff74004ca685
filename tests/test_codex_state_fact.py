"""Issue 26, canon from the conversation: the codex's "State a fact" form (subject, predicate, value and the story
record). Her statement and her verdict are one act; it lands in the decision log with her rationale; a bad field
is an inline message naming it and nothing is recorded; only the author states facts. With no reveal yet, the
fair-play check says there is nothing to check. Through her routes (what her browser posts)."""

from __future__ import annotations

import pytest

from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.models import KnowledgeClaim

pytestmark = pytest.mark.django_db

FORM = {
    "subject": "Old Tom",
    "predicate": "is",
    "value": "alive",
    "true_from_chapter": "",
    "true_until_chapter": "9",
    "known_by": "reader",
    "known_by_characters": "",
    "first_shown_chapter": "",
    "reveal": "none",
    "evidence_for": "",
    "rationale": "Tom dies in chapter nine.",
}


def _codex(browser, book) -> str:
    response = browser.get(f"/books/{book.pk}/codex/")
    assert response.status_code == 200
    return response.content.decode()


def test_she_states_a_fact_with_its_story_record_and_it_is_canon_with_her_rationale_in_the_log(
    author_browser, editor_browser, book
):
    page = _codex(author_browser, book)
    assert "State a fact" in page and 'name="first_shown_chapter"' in page and 'name="known_by"' in page
    assert "nothing to check yet" in page, "no reveal in canon: fair play has nothing to check"
    assert "State a fact" not in _codex(editor_browser, book)

    response = author_browser.post(f"/books/{book.pk}/codex/facts/", FORM)
    assert response.status_code == 302, response.content[:1500]
    claim = KnowledgeClaim.objects.get(subject="Old Tom")
    assert (claim.status, claim.provenance, claim.proposed_by, claim.true_until_chapter, claim.base.scope) == (
        "approved",
        "author-stated",
        "author",
        9,
        "book",
    )
    entry = DecisionLogEntry.objects.filter(book=book, subject_type="claim", subject_id=str(claim.pk)).get()
    assert entry.rationale == "Tom dies in chapter nine." and entry.decision == "approve"
    assert decision_log_verify(book).ok
    assert response["Location"].endswith(f"#claim-{claim.pk}")
    assert "alive" in _codex(author_browser, book)

    # A secret reveal with the characters who know it: the whole story record from the form.
    secret = {
        **FORM,
        "subject": "The harbour master",
        "value": "the killer",
        "true_until_chapter": "",
        "known_by": "characters",
        "known_by_characters": "Ines, Mara",
        "first_shown_chapter": "12",
        "reveal": "solution",
        "rationale": "The solution.",
    }
    assert author_browser.post(f"/books/{book.pk}/codex/facts/", secret).status_code == 302
    reveal = KnowledgeClaim.objects.get(subject="The harbour master")
    assert (reveal.known_by, reveal.known_by_characters, reveal.first_shown_chapter, reveal.reveal) == (
        "characters",
        ["Ines", "Mara"],
        12,
        "solution",
    )
    page = _codex(author_browser, book)
    assert "nothing to check yet" not in page and "FAIR-PLAY-001" in page, "now a reveal without evidence"
    clue = {
        **FORM,
        "subject": "The harbour master's boots",
        "predicate": "are",
        "value": "wet",
        "true_until_chapter": "",
        "first_shown_chapter": "3",
        "decisive": "on",
        "evidence_for": str(reveal.pk),
        "rationale": "The clue.",
    }
    assert author_browser.post(f"/books/{book.pk}/codex/facts/", clue).status_code == 302
    assert KnowledgeClaim.objects.get(subject="The harbour master's boots").evidence_for_id == reveal.pk
    assert "Every reveal is supported" in _codex(author_browser, book)


@pytest.mark.parametrize(
    ("change", "field_words"),
    [
        ({"rationale": "  "}, "rationale"),
        ({"true_from_chapter": "10", "true_until_chapter": "9"}, "true_until_chapter"),
        ({"reveal": "twist"}, "first_shown_chapter"),
        ({"known_by": "characters"}, "known_by_characters"),
        ({"true_until_chapter": "nine"}, "true_until_chapter"),
        ({"subject": ""}, "subject"),
    ],
)
def test_a_bad_fact_is_an_inline_message_and_nothing_is_recorded(author_browser, book, change, field_words):
    before = (KnowledgeClaim.objects.count(), DecisionLogEntry.objects.count())
    response = author_browser.post(f"/books/{book.pk}/codex/facts/", {**FORM, **change})
    assert response.status_code == 422, response.status_code
    page = response.content.decode()
    assert 'data-testid="state-error"' in page and "Nothing was recorded" in page
    assert field_words.replace("_", " ") in page.replace("_", " ") or field_words in page, page[:300]
    assert 'value="Old Tom"' in page or change.get("subject") == "", "her words are kept"
    assert (KnowledgeClaim.objects.count(), DecisionLogEntry.objects.count()) == before


def test_only_the_author_states_a_fact(editor_browser, client, book):
    assert editor_browser.post(f"/books/{book.pk}/codex/facts/", FORM).status_code == 403
    assert client.post(f"/books/{book.pk}/codex/facts/", FORM).status_code == 302  # to the login page
    assert not KnowledgeClaim.objects.filter(subject="Old Tom").exists()
