"""Issue 29, the series bible: the story bible of a series "as of book K, chapter N", spoiler-safe. A reader there
has read the earlier books entirely and book K up to chapter N: the series' canon and those books' canon are in,
later books, later reveals and secrets are left out and counted in plain words, never named. A page, a Markdown
download, an API answer, an MCP read, and a share link fixed at a book and chapter that the owner revokes."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from approvals.services import approval_decide
from discovery.access import book_access
from discovery.models import BibleShareLink, KnowledgeClaim
from discovery.schemas import ClaimIn
from discovery.services import claim_propose, claim_request_approval, claim_state
from discovery.services.knowledge import ensure_knowledge_bases, series_base
from discovery.services.manuscript import entry_create
from novelgraph.core.auth import principal_for_key, principal_for_user
from novelgraph.core.services import api_key_create

from .factories import BookFactory

pytestmark = pytest.mark.django_db

BOOK_ONE_REVEAL = "the keeper herself rang the bell"
BOOK_TWO_REVEAL = "the harbour master drowned the bell"
BOOK_ONE_SECRET = "buried the letter under the lamp"
SERIES_SECRET = "the lamp was lit by the drowned"
LATER_BOOK_FACT = "sails at dawn"


def _fact(access, subject, predicate, value, **story):
    payload = ClaimIn(
        scope="book", scope_id=str(access.book.pk), subject=subject, predicate=predicate, value=value,
        provenance="author-stated", **story,
    )  # fmt: skip
    return claim_state(access=access, payload=payload, rationale="Mine.")


def _series_fact(author, access, subject, predicate, value, **story):
    """Series canon as it becomes canon: proposed through a book of the series, requested by Sol, approved."""
    payload = ClaimIn(
        scope="series", scope_id=str(access.book.series_id), subject=subject, predicate=predicate, value=value,
        provenance="author-stated", **story,
    )  # fmt: skip
    claim = claim_propose(access=access, base=series_base(access.book.series), payload=payload)
    sol = book_access(principal_for_key(api_key_create(owner=author, role="sol")[1]), access.book)
    approval = claim_request_approval(access=sol, claim_id=claim.pk)
    approval_decide(access=access, approval_id=approval.pk, verdict="approve", rationale="It holds.")
    claim.refresh_from_db()
    assert claim.status == KnowledgeClaim.Status.APPROVED
    return claim


@pytest.fixture
def series(author, book):
    """Three books of the author's series, in planned order: The Tide Clock (book 1, which the editor edits),
    The Drowned Bell (book 2, with a chapter-12 reveal) and The Last Ferry (book 3, not read yet). The series'
    canon holds a fact every book shares and a secret nobody knows."""
    two = BookFactory(owner=author, series=book.series, planned_order=2, title="The Drowned Bell")
    three = BookFactory(owner=author, series=book.series, planned_order=3, title="The Last Ferry")
    one = book_access(principal_for_user(author), book)
    for each in (book, two, three):
        ensure_knowledge_bases(each)
    entry_create(access=one, name="Mara", kind="person", aliases=["the keeper"])
    _fact(one, "Mara", "fears", "deep water")
    _fact(one, "Mara", "is", BOOK_ONE_REVEAL, first_shown_chapter=12, reveal="solution", known_by="nobody")
    _fact(one, "Mara", "once", BOOK_ONE_SECRET, known_by="nobody")
    second = book_access(principal_for_user(author), two)
    entry_create(access=second, name="Hale", kind="person", aliases=[])
    _fact(second, "Hale", "works as", "harbour master")
    _fact(second, "Hale", "is", BOOK_TWO_REVEAL, first_shown_chapter=12, reveal="twist", known_by="nobody")
    _fact(book_access(principal_for_user(author), three), "The ferry", "sails", LATER_BOOK_FACT)
    _series_fact(author, one, "The coast", "is", "drowned every spring")
    _series_fact(author, one, "The lamp", "was lit by", SERIES_SECRET, known_by="nobody")
    return {"id": book.series_id, "one": book, "two": two, "three": three}


def _values(section) -> list[str]:
    return [f["value"] for kind in section["kinds"] for entry in kind["entries"] for f in entry["facts"]]


def test_as_of_book_2_chapter_3_the_chapter_12_reveal_is_left_out_and_the_bible_says_so(author_api, series):
    answer = author_api.get(f"/series/{series['id']}/bible", book=str(series["two"].pk), chapter=3)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["position"], body["books"], body["chapter"]) == (2, 3, 3)
    one, two = body["sections"]
    assert (one["title"], one["read"], two["title"], two["read"]) == (
        "The Tide Clock", "entirely", "The Drowned Bell", "to chapter 3",
    )  # fmt: skip
    # Book 1 is read entirely: its facts, its chapter-12 solution too; its secret stays out.
    assert set(_values(one)) == {"deep water", BOOK_ONE_REVEAL}
    assert _values(two) == ["harbour master"]
    assert _values(body["series_canon"]) == ["drowned every spring"]
    text = answer.content.decode()
    for hidden in (BOOK_TWO_REVEAL, BOOK_ONE_SECRET, SERIES_SECRET, LATER_BOOK_FACT, "The Last Ferry"):
        assert hidden not in text, hidden
    assert body["left_out"]["later_reveals"] == 1
    assert body["left_out"]["secret"] == 2 and body["left_out"]["later_books"] == 1
    assert body["left_out_words"] == [
        "1 fact is left out until later chapters.",
        "2 facts are left out: the reader is not told them yet.",
        "1 later book of the series left out, with 1 fact: not read yet.",
    ]
    assert body["series_canon"]["left_out_words"] == ["1 fact is left out: the reader is not told it yet."]
    # A series fact says the book its chapters count in only where it names a chapter.
    assert body["series_canon"]["kinds"][0]["entries"][0]["facts"][0]["book"] == "The Tide Clock"


def test_as_of_book_2_chapter_12_the_reveal_is_in_and_the_book_bible_rule_is_the_same(author_api, series):
    body = author_api.get(f"/series/{series['id']}/bible", book=str(series["two"].pk), chapter=12).json()
    assert BOOK_TWO_REVEAL in _values(body["sections"][1]) and body["left_out"]["later_reveals"] == 0
    book_bible = author_api.get(f"/books/{series['two'].pk}/bible", chapter=12).json()
    # The reader's book reads as its own bible reads it, less the series' canon (its own part of the document).
    assert set(_values(book_bible)) - {"drowned every spring"} == set(_values(body["sections"][1]))


def test_as_of_book_1_the_later_books_are_counted_never_named(author_api, series):
    body = author_api.get(f"/series/{series['id']}/bible", book=str(series["one"].pk), chapter=3).json()
    assert [s["title"] for s in body["sections"]] == ["The Tide Clock"]
    assert BOOK_ONE_REVEAL not in _values(body["sections"][0])
    assert "2 later books of the series left out, with 3 facts: not read yet." in body["left_out_words"]
    assert "The Drowned Bell" not in str(body) and "harbour master" not in str(body)


def test_the_page_and_the_markdown_download(author_browser, series):
    at = {"book": str(series["two"].pk), "chapter": "3"}
    page = author_browser.get(f"/series/{series['id']}/bible/", at)
    assert page.status_code == 200
    text = page.content.decode()
    assert "harbour master" in text and "deep water" in text and "drowned every spring" in text
    document = text[text.index("<article") : text.index("</article>")]
    assert BOOK_TWO_REVEAL not in text and SERIES_SECRET not in text
    assert "The Last Ferry" not in document, "the later book is counted in the document, never named"
    assert "1 fact is left out until later chapters." in text
    assert text.index("Series canon") < text.index("Book 1: The Tide Clock") < text.index("Book 2: The Drowned Bell")
    assert "css/bible.css" in text, "the print stylesheet"
    download = author_browser.get(f"/series/{series['id']}/bible.md", at)
    assert download.status_code == 200 and download["Content-Type"].startswith("text/markdown")
    assert "series-bible-book-2-chapter-3.md" in download["Content-Disposition"]
    markdown = download.content.decode()
    assert (
        markdown.startswith("# ")
        and "## Series canon" in markdown
        and "## Book 2: The Drowned Bell (read to chapter 3)" in markdown
    )
    assert "- works as: harbour master" in markdown and BOOK_TWO_REVEAL not in markdown
    assert "> 1 fact is left out until later chapters." in markdown
    api = author_browser.get(f"/api/v1/series/{series['id']}/bible", {**at, "format": "markdown"})
    assert api.content.decode() == markdown


def test_the_series_bible_is_linked_from_the_book_bible_and_wherever_the_series_is_shown(author_browser, series):
    bible = author_browser.get(f"/books/{series['two'].pk}/bible/", {"chapter": "3"}).content.decode()
    assert f'href="/series/{series["id"]}/bible/?book={series["two"].pk}&amp;chapter=3"' in bible
    for url in ("/", f"/books/{series['two'].pk}/"):
        assert f"/series/{series['id']}/bible/" in author_browser.get(url).content.decode(), url


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"chapter": "3"}, "book"),
        ({"book": "not-a-book", "chapter": "3"}, "book"),
        ({"book": "00000000-0000-0000-0000-000000000000", "chapter": "3"}, "book"),
        ({"book": "two", "chapter": "0"}, "chapter"),
        ({"book": "two", "chapter": "three"}, "chapter"),
        ({"book": "two"}, "chapter"),
    ],
)
def test_a_bad_book_or_chapter_is_a_422_naming_it_and_an_inline_message(
    author_api, author_browser, series, query, field
):
    query = {k: str(series["two"].pk) if v == "two" else v for k, v in query.items()}
    answer = author_api.get(f"/series/{series['id']}/bible", **query)
    assert answer.status_code == 422 and answer.json()["field"] == field, answer.content
    page = author_browser.get(f"/series/{series['id']}/bible/", query)
    assert page.status_code == 422 and 'id="bible-error"' in page.content.decode()
    assert author_browser.get(f"/series/{series['id']}/bible.md", query).status_code == 422


def test_a_share_link_shows_the_series_bible_as_of_its_book_and_chapter_until_it_is_revoked(
    author_browser, series, client
):
    made = author_browser.post(
        f"/series/{series['id']}/bible/links/", {"book": str(series["two"].pk), "chapter": "3", "label": "Beta"}
    )
    assert made.status_code == 200
    link = BibleShareLink.objects.get(series_id=series["id"])
    assert (link.book_id, link.series_book_id, link.chapter) == (None, series["two"].pk, 3)
    token = made.context["made"]["url"].rstrip("/").rsplit("/", 1)[1]
    assert token not in str(BibleShareLink.objects.values().get())
    shared = client.get(f"/bible/shared/{token}/")
    assert shared.status_code == 200 and shared["X-Robots-Tag"].startswith("noindex")
    text = shared.content.decode()
    assert "series bible" in text and "harbour master" in text and "deep water" in text
    assert BOOK_TWO_REVEAL not in text and SERIES_SECRET not in text and "1 later book of the series" in text
    assert "/books/" not in text and "/series/" not in text, "no way into the rest of the app"
    # Read-only: the link takes no form, and a write through it is refused.
    assert "<form" not in text and client.post(f"/bible/shared/{token}/").status_code in (403, 405)
    markdown = client.get(f"/bible/shared/{token}/bible.md").content.decode()
    assert "series bible" in markdown and "harbour master" in markdown and BOOK_TWO_REVEAL not in markdown
    assert "Beta" in author_browser.get(f"/series/{series['id']}/bible/").content.decode()

    revoked = author_browser.post(f"/series/{series['id']}/bible/links/{link.pk}/revoke/")
    assert revoked.status_code == 302
    assert client.get(f"/bible/shared/{token}/").status_code == 404
    assert client.get(f"/bible/shared/{token}/bible.md").status_code == 404
    assert BibleShareLink.objects.get(pk=link.pk).revoked_at is not None


def test_share_links_through_the_api_are_the_owners(author_api, editor_api, series):
    url = f"/series/{series['id']}/bible/links"
    assert editor_api.post(url, {"book": str(series["one"].pk), "chapter": 3}).status_code == 403
    assert editor_api.get(url).status_code == 403
    assert author_api.post(url, {"book": str(series["one"].pk), "chapter": 0}).json()["field"] == "chapter"
    foreign = BookFactory(title="Not of the series")
    assert author_api.post(url, {"book": str(foreign.pk), "chapter": 3}).json()["field"] == "book"
    assert not BibleShareLink.objects.exists()
    made = author_api.post(url, {"book": str(series["two"].pk), "chapter": 3, "label": "Editor"})
    assert made.status_code == 201, made.content
    assert made.json()["book_id"] == str(series["two"].pk) and "/bible/shared/bb_" in made.json()["url"]
    listed = author_api.get(url).json()
    assert [(link["book_id"], link["chapter"]) for link in listed] == [(str(series["two"].pk), 3)]
    assert "token" not in listed[0]
    # A series link is not the book's: the book's list and revoke do not reach it.
    assert author_api.get(f"/books/{series['two'].pk}/bible/links").json() == []
    assert author_api.delete(f"/books/{series['two'].pk}/bible/links/{listed[0]['id']}").status_code == 404
    assert editor_api.delete(f"{url}/{listed[0]['id']}").status_code == 403
    assert author_api.delete(f"{url}/{listed[0]['id']}").status_code == 200
    assert author_api.get(url).json() == []


def test_a_link_opens_exactly_one_bible(author, series):
    with transaction.atomic(), pytest.raises(IntegrityError):
        BibleShareLink.objects.create(
            book=series["one"], series_id=series["id"], series_book=series["one"], chapter=1, prefix="bb_x",
            token_hash="a" * 64, created_by=author,
        )  # fmt: skip
    with transaction.atomic(), pytest.raises(IntegrityError):
        BibleShareLink.objects.create(
            series_id=series["id"], chapter=1, prefix="bb_y", token_hash="b" * 64, created_by=author
        )
    with transaction.atomic(), pytest.raises(IntegrityError):
        BibleShareLink.objects.create(chapter=1, prefix="bb_z", token_hash="c" * 64, created_by=author)


def test_who_reads_the_series_bible(editor_api, outsider_api, luna_api, sol_api, author, series, editor_browser):
    at = {"book": str(series["one"].pk), "chapter": 3}
    # The editor of book 1 reads the series bible for that book; book 2 is not hers, and is counted, not named.
    mine = editor_api.get(f"/series/{series['id']}/bible", **at)
    assert mine.status_code == 200, mine.content
    assert [s["title"] for s in mine.json()["sections"]] == ["The Tide Clock"]
    assert "2 books of the series are left out: not shared with you." in mine.json()["left_out_words"]
    assert "harbour master" not in mine.content.decode() and "The Drowned Bell" not in mine.content.decode()
    theirs = editor_api.get(f"/series/{series['id']}/bible", book=str(series["two"].pk), chapter=3)
    assert theirs.status_code == 422 and theirs.json()["field"] == "book"
    assert editor_browser.get(f"/series/{series['id']}/bible/", at).status_code == 200
    # Someone with no book of the series: the series does not exist for her.
    assert outsider_api.get(f"/series/{series['id']}/bible", **at).status_code == 404
    # Luna reads no series material; Sol does.
    refused = luna_api.get(f"/series/{series['id']}/bible", **at)
    assert refused.status_code == 403 and "series:read" in refused.json()["detail"]
    assert sol_api.get(f"/series/{series['id']}/bible", **at).status_code == 200
    # A key limited to a book outside the series does not reach it.
    elsewhere = BookFactory(owner=author, title="Her other book")
    limited = api_key_create(owner=author, role="author", books=[elsewhere])[1]
    answer = Client().get(f"/api/v1/series/{series['id']}/bible", at, HTTP_AUTHORIZATION=f"Bearer {limited}")
    assert answer.status_code == 404


def test_a_books_bible_reads_the_series_canon_by_the_same_rule(author, author_api, series):
    """A series fact counts its chapters in the book it came through: in an earlier book's bible it is left out
    and counted; in a later book's, the earlier book has been read entirely."""
    two = book_access(principal_for_user(author), series["two"])
    _series_fact(author, two, "The bell", "was cast from", "the drowned ship's anchor")
    book_one = author_api.get(f"/books/{series['one'].pk}/bible", chapter=12).json()
    assert "the drowned ship's anchor" not in str(book_one) and "drowned every spring" in _values(book_one)
    assert "1 fact is left out until later books." in book_one["left_out_words"]
    book_two = author_api.get(f"/books/{series['two'].pk}/bible", chapter=1).json()
    assert {"the drowned ship's anchor", "drowned every spring", "harbour master"} == set(_values(book_two))
    assert SERIES_SECRET not in str(book_two) and book_two["left_out"]["secret"] == 1
