"""Reader promises (issue 28): every reveal, every clue a reveal needs and the charter's promise, traced through
the chapter texts by the continuity check's matching. The report at a chapter says what is open, overdue and
never planted; the first chapter whose text shows a fact stands beside its planned chapter, and a fact first
shown later than planned is a continuity finding (``first-shown-differs``)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from discovery.continuity import Claim, Entry, check_chapter
from tests.canon_support import approved_claim, chapters_written, codex_entries
from tests.factories import StoryCharterFactory
from tests.test_continuity_check import check
from tests.test_plain_words import internal_words

pytestmark = pytest.mark.django_db

CHAPTERS = {
    1: "Mara Quell mended nets on the quay.",
    2: "Tova saw a lantern on the quay the night the pilot died.",
    3: "Aubrey prayed in the cold church.",
    4: "Tova spoke at last: Mara killed the harbour pilot.",
    5: "Aubrey hid the letter under the altar stone. The tide clock was stopped at seven bells.",
}


@pytest.fixture
def promised(author_api, sol_api, book) -> dict[str, str]:
    """The codex, canon with its story records, an approved charter with a reader promise, and five chapters."""
    assert author_api.post(f"/books/{book.pk}/discovery").status_code in (200, 201)
    codex_entries(
        author_api,
        book,
        (
            ("Mara Quell", "person", ["Mara"]),
            ("Tova", "person", []),
            ("Father Aubrey", "person", ["Aubrey"]),
            ("the tide clock", "person", []),
        ),
    )
    claims: dict[str, str] = {}

    def claim(label, subject, predicate, value, **story):
        claims[label] = approved_claim(author_api, sol_api, book, subject, predicate, value, **story)

    claim("killer", "Mara", "killed", "the harbour pilot", known_by="nobody", first_shown_chapter=4, reveal="solution")
    claim("lantern", "Tova", "saw", "a lantern on the quay", decisive=True, evidence_for=claims["killer"])
    claim("clock", "the tide clock", "was stopped at", "seven bells", decisive=True, evidence_for=claims["killer"])
    claim("letter", "Father Aubrey", "hid", "the letter", first_shown_chapter=3, reveal="twist")
    claim("birth", "Tova", "was born in", "Lyle", first_shown_chapter=5, reveal="twist")
    StoryCharterFactory(book=book, status="approved", content={"reader_promise": ["Mara's secret comes out, fairly"]})
    chapters_written(author_api, book, CHAPTERS, title="Part")
    return claims


def by_claim(section: list[dict]) -> set[str]:
    return {item["claim_id"] or item["words"] for item in section}


def test_the_report_at_chapter_three_shows_what_is_open_and_overdue(author_api, book, promised):
    claims = promised
    report = author_api.get(f"/books/{book.pk}/promises", chapter=3)
    assert report.status_code == 200, report.content
    body = report.json()
    assert (body["chapter"], body["chapters"], body["chapters_with_text"]) == (3, 5, [1, 2, 3])
    # The lantern is planted in chapter 2 and waits for the reveal; the charter's promise names Mara (chapter 1).
    assert by_claim(body["open"]) == {claims["lantern"], "Mara's secret comes out, fairly"}
    lantern = next(i for i in body["open"] if i["claim_id"] == claims["lantern"])
    assert (lantern["kind"], lantern["planted_in"], lantern["paid_off_in"], lantern["reveal_id"]) == (
        "clue",
        2,
        None,
        claims["killer"],
    )
    promise = next(i for i in body["open"] if i["kind"] == "promise")
    assert promise["planted_in"] == 1
    # The letter is planned for chapter 3, whose text does not show it.
    assert by_claim(body["overdue"]) == {claims["letter"]}
    assert body["overdue"][0]["planned_chapter"] == 3 and body["overdue"][0]["first_shown_in_text"] is None
    # The killer's reveal (chapter 4) and its clock clue are not due yet.
    assert by_claim(body["to_come"]) == {claims["killer"], claims["clock"], claims["birth"]}
    assert body["never_planted"] == [] and body["paid_off"] == []


def test_the_report_at_chapter_five_shows_what_paid_off_and_what_was_never_planted(luna_api, book, promised):
    claims = promised
    body = luna_api.get(f"/books/{book.pk}/promises", chapter=5).json()
    # The reveal pays off in its chapter; its planted clue with it; the charter's promise with the reveal about Mara.
    paid = {i["claim_id"] or i["kind"]: i for i in body["paid_off"]}
    assert set(paid) == {claims["killer"], claims["lantern"], claims["letter"], "promise"}
    assert (paid[claims["killer"]]["planted_in"], paid[claims["killer"]]["paid_off_in"]) == (4, 4)
    assert paid[claims["lantern"]]["paid_off_in"] == 4 and paid["promise"]["paid_off_in"] == 4
    # The letter is first shown in chapter 5, beside its planned chapter 3.
    letter = paid[claims["letter"]]
    assert (letter["planned_chapter"], letter["first_shown_in_text"], letter["paid_off_in"]) == (3, 5, 5)
    # The clock clue shows only after its reveal: never planted. Tova's birthplace is due and unshown.
    assert by_claim(body["never_planted"]) == {claims["clock"]}
    assert body["never_planted"][0]["first_shown_in_text"] == 5
    assert by_claim(body["overdue"]) == {claims["birth"]}
    assert body["open"] == [] and body["to_come"] == []
    # Without a chapter the report is as of the last one.
    assert luna_api.get(f"/books/{book.pk}/promises").json() == body


def test_a_bad_chapter_is_a_422_naming_it(author_api, book, promised):
    for chapter, reason in ((0, ""), (9, "no chapter 9"), ("three", "")):
        refused = author_api.get(f"/books/{book.pk}/promises", chapter=chapter)
        assert refused.status_code == 422, refused.content
        assert refused.json()["field"].endswith("chapter") and reason in refused.json()["detail"]


def test_a_fact_first_shown_later_than_planned_is_a_finding(author_api, book, promised):
    claims = promised
    check(author_api, book, 5)
    findings = author_api.get(f"/books/{book.pk}/continuity", chapter=5).json()["items"]
    differs = [f for f in findings if f["kind"] == "first-shown-differs"]
    assert len(differs) == 1
    assert differs[0]["quote"] == "Aubrey hid the letter under the altar stone."
    assert differs[0]["claim_ids"] == [claims["letter"]]
    assert "chapter 3" in differs[0]["message"] and "chapter 5" in differs[0]["message"]
    # Its planned chapter itself files nothing of this kind (not shown there: the report's "overdue").
    check(author_api, book, 3)
    assert author_api.get(f"/books/{book.pk}/continuity", chapter=3).json()["items"] == []


def test_a_fact_shown_before_its_chapter_is_reveal_too_early_not_also_first_shown_differs():
    entries = [Entry("m", "Mara")]
    reveal = Claim("k", "m", "killed", "the pilot", first_shown_chapter=4)
    early = check_chapter(number=2, text="Mara killed the pilot.", entries=entries, claims=[reveal], earlier={})
    assert [f["kind"] for f in early] == ["reveal-too-early"]
    late = check_chapter(
        number=6, text="Mara killed the pilot.", entries=entries, claims=[reveal], earlier={4: "Mara wept."}
    )
    assert [f["kind"] for f in late] == ["first-shown-differs"]
    # Shown once already, later chapters saying it again are not "first".
    again = check_chapter(
        number=7, text="Mara killed the pilot.", entries=entries, claims=[reveal], earlier={6: "Mara killed the pilot."}
    )
    assert again == []


def test_the_page_shows_the_report_in_words_with_a_chapter_selector(client, author, book, promised):
    client.force_login(author)
    chapters = client.get(reverse("discovery:chapters", args=[book.pk]))
    url = reverse("discovery:promises", args=[book.pk])
    assert url in chapters.content.decode()
    page = client.get(url, {"chapter": 3})
    html = page.content.decode()
    assert page.status_code == 200
    assert "Reader promises as of chapter 3" in html and 'value="3" selected' in html
    overdue = html.split('id="promises-overdue"')[1].split("</section>")[0]
    assert "Father Aubrey hid the letter" in overdue and "Canon plans it for chapter 3" in overdue
    later = client.get(url, {"chapter": 5}).content.decode()
    never = later.split('id="promises-never_planted"')[1].split("</section>")[0]
    assert "the tide clock was stopped at seven bells" in never
    assert "the text first shows it in chapter 5" in later
    assert internal_words(html) == [] and internal_words(later) == []
    bad = client.get(url, {"chapter": 12})
    assert bad.status_code == 422 and "there is no chapter 12" in bad.content.decode()


def test_the_page_of_a_book_without_chapters_says_so(client, author, book):
    client.force_login(author)
    page = client.get(reverse("discovery:promises", args=[book.pk]))
    assert page.status_code == 200 and "No chapters yet" in page.content.decode()
