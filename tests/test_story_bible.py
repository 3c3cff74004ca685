"""Issue 29, a readable story bible: the codex as a document as of chapter N, spoiler-safe (a reader of chapter N
is told only what she may know, and told how many facts are left out), as a page, a Markdown download and an API
answer, and a share link fixed at a chapter that the author makes and revokes."""

from __future__ import annotations

import pytest

from discovery.access import book_access
from discovery.models import BibleShareLink, KnowledgeClaim
from discovery.schemas import ClaimIn
from discovery.services import claim_state
from discovery.services.manuscript import entry_create
from novelgraph.core.auth import principal_for_user

pytestmark = pytest.mark.django_db

REVEAL = "the keeper herself rang the bell"
SECRET = "buried the letter under the lamp"


def _fact(access, subject, predicate, value, **story):
    payload = ClaimIn(
        scope="book", scope_id=str(access.book.pk), subject=subject, predicate=predicate, value=value,
        provenance="author-stated", **story,
    )  # fmt: skip
    return claim_state(access=access, payload=payload, rationale="Mine.")


@pytest.fixture
def canon(author, book):
    """Mara's canon: a fact the reader knows from chapter 1, the solution revealed in chapter 12, a secret nobody
    knows, and a fact true only from chapter 8; Mara is a person in the codex, the lighthouse a place."""
    access = book_access(principal_for_user(author), book)
    mara = entry_create(access=access, name="Mara", kind="person", aliases=["the keeper"])
    lamp = entry_create(access=access, name="The lighthouse", kind="place", aliases=[])
    claims = [
        _fact(access, "Mara", "fears", "deep water"),
        _fact(access, "Mara", "is", REVEAL, first_shown_chapter=12, reveal="solution", known_by="nobody"),
        _fact(access, "Mara", "once", SECRET, known_by="nobody"),
        _fact(access, "The lighthouse", "stands on", "the north rock"),
        _fact(access, "The lighthouse", "is", "dark", true_from_chapter=8),
    ]
    for claim in claims:
        KnowledgeClaim.objects.filter(pk=claim.pk).update(entry=mara if claim.subject == "Mara" else lamp)
    return access


def test_as_of_chapter_3_the_chapter_12_reveal_is_left_out_and_the_bible_says_so(author_browser, canon, book):
    page = author_browser.get(f"/books/{book.pk}/bible/", {"chapter": "3"})
    assert page.status_code == 200
    text = page.content.decode()
    assert "deep water" in text and "the north rock" in text
    assert REVEAL not in text and SECRET not in text and "dark" not in text
    assert "2 facts are left out until later chapters." in text  # the reveal, and the lighthouse going dark
    assert "1 fact is left out: the reader is not told it yet." in text
    # By kind, then entry, with its other names.
    assert text.index("People") < text.index("Mara") < text.index("Places") < text.index("The lighthouse")
    assert "Also called: the keeper" in text
    download = author_browser.get(f"/books/{book.pk}/bible.md", {"chapter": "3"})
    assert download.status_code == 200 and download["Content-Type"].startswith("text/markdown")
    markdown = download.content.decode()
    assert "## People" in markdown and "- fears: deep water" in markdown and REVEAL not in markdown
    assert "> 2 facts are left out until later chapters." in markdown


def test_as_of_chapter_12_the_reveal_is_in(author_api, editor_api, canon, book):
    answer = editor_api.get(f"/books/{book.pk}/bible", chapter=12)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    facts = [f["value"] for kind in body["kinds"] for entry in kind["entries"] for f in entry["facts"]]
    assert REVEAL in facts and "dark" in facts and SECRET not in facts
    assert body["left_out"]["secret"] == 1 and body["left_out"]["later_reveals"] == 0
    markdown = author_api.get(f"/books/{book.pk}/bible", chapter=12, format="markdown")
    assert markdown.status_code == 200 and REVEAL in markdown.content.decode()


@pytest.mark.parametrize("chapter", ["0", "three", "-2", "100001"])
def test_a_bad_chapter_is_a_422_naming_it_and_an_inline_message(author_api, author_browser, canon, book, chapter):
    answer = author_api.get(f"/books/{book.pk}/bible", chapter=chapter)
    assert answer.status_code == 422 and "chapter" in answer.content.decode()
    page = author_browser.get(f"/books/{book.pk}/bible/", {"chapter": chapter})
    assert page.status_code == 422 and 'id="bible-error"' in page.content.decode()
    assert author_browser.get(f"/books/{book.pk}/bible.md", {"chapter": chapter}).status_code == 422


def test_a_share_link_shows_the_bible_as_of_its_chapter_until_it_is_revoked(author_browser, canon, book, client):
    made = author_browser.post(f"/books/{book.pk}/bible/links/", {"chapter": "3", "label": "Beta reader"})
    assert made.status_code == 200
    link = BibleShareLink.objects.get(book=book)
    url = made.context["made"]["url"]
    token = url.rstrip("/").rsplit("/", 1)[1]
    assert link.token_hash != token and token not in str(BibleShareLink.objects.values().get())
    shared = client.get(f"/bible/shared/{token}/")
    assert shared.status_code == 200 and shared["X-Robots-Tag"].startswith("noindex")
    text = shared.content.decode()
    assert "deep water" in text and REVEAL not in text and "left out until later chapters" in text
    assert 'name="robots" content="noindex' in text and "/books/" not in text, "no way into the rest of the app"
    assert "Beta reader" in author_browser.get(f"/books/{book.pk}/bible/").content.decode()
    # The same bible as Markdown, from the shared page, with no login.
    assert f'href="/bible/shared/{token}/bible.md"' in text
    markdown = client.get(f"/bible/shared/{token}/bible.md")
    assert markdown.status_code == 200 and markdown["Content-Type"].startswith("text/markdown")
    assert markdown["X-Robots-Tag"].startswith("noindex") and "attachment" in markdown["Content-Disposition"]
    body = markdown.content.decode()
    assert "deep water" in body and REVEAL not in body and "left out until later chapters" in body

    revoked = author_browser.post(f"/books/{book.pk}/bible/links/{link.pk}/revoke/")
    assert revoked.status_code == 302
    assert client.get(f"/bible/shared/{token}/").status_code == 404
    assert client.get(f"/bible/shared/{token}/bible.md").status_code == 404
    assert client.get("/bible/shared/bb_not-a-token/").status_code == 404


def test_editors_read_the_bible_but_only_the_author_makes_share_links(
    editor_api, author_api, editor_browser, canon, book
):
    assert editor_browser.get(f"/books/{book.pk}/bible/", {"chapter": "3"}).status_code == 200
    assert "Make a share link" not in editor_browser.get(f"/books/{book.pk}/bible/").content.decode()
    assert editor_browser.post(f"/books/{book.pk}/bible/links/", {"chapter": "3"}).status_code == 403
    assert editor_api.post(f"/books/{book.pk}/bible/links", {"chapter": 3}).status_code == 403
    assert editor_api.get(f"/books/{book.pk}/bible/links").status_code == 403
    assert not BibleShareLink.objects.exists()
    made = author_api.post(f"/books/{book.pk}/bible/links", {"chapter": 3})
    assert made.status_code == 201 and made.json()["url"].endswith("/")
    listed = author_api.get(f"/books/{book.pk}/bible/links").json()
    assert [link["chapter"] for link in listed] == [3] and "token" not in listed[0]
    link_id = listed[0]["id"]
    assert editor_api.delete(f"/books/{book.pk}/bible/links/{link_id}").status_code == 403
    assert author_api.delete(f"/books/{book.pk}/bible/links/{link_id}").status_code == 200
    assert author_api.get(f"/books/{book.pk}/bible/links").json() == []


def test_the_api_asks_for_the_chapter_and_a_stranger_still_gets_404(author_api, outsider_api, canon, book):
    missing = author_api.get(f"/books/{book.pk}/bible")
    assert missing.status_code == 422 and missing.json()["field"] == "chapter"
    assert outsider_api.get(f"/books/{book.pk}/bible", chapter=3).status_code == 404
