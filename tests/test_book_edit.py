"""Issue 26, "she can change her mind": the author edits her book's title, premise and genre in the browser (and
through PATCH /books/{id}); a new premise after G0 passed reopens G0, with the impact shown first; a book made
without a premise gets one and its G0 proceeds."""

from __future__ import annotations

import html as html_lib

import pytest
from django.test import Client

from approvals.models import Approval
from discovery.loop.models import LoopMeta, OptionCard
from discovery.models import Book

from .agents_support import work_off_queue

pytestmark = pytest.mark.django_db


class Author:
    """The author in her browser: each act is one form posted; the background worker runs after it."""

    def __init__(self, user):
        self.client = Client()
        self.client.force_login(user)

    def post(self, path: str, data: dict | None = None, expect=(200, 302)):
        response = self.client.post(path, data or {})
        assert response.status_code in expect, (path, response.status_code, response.content[:2000])
        work_off_queue()
        return response

    def page(self, path: str) -> str:
        response = self.client.get(path)
        assert response.status_code == 200, response.status_code
        return html_lib.unescape(response.content.decode())


def _g0_card(book) -> Approval | None:
    return Approval.objects.filter(book=book, status="pending", kind="gate", gate="G0").first()


def _new_book(author: Author, user, premise: str = "") -> Book:
    author.post("/books/new/", {"title": "The Salt Ledger", "premise": premise, "genre_pack": "mystery"})
    return Book.objects.get(owner=user)


def test_she_changes_the_title_and_genre_from_the_book_page(author):
    her = Author(author)
    book = _new_book(her, author, "A clerk finds a forged tide table.")
    page = her.page(f"/books/{book.pk}/")
    assert "Change the title, premise or genre" in page and f'action="/books/{book.pk}/edit/"' in page

    saved = her.post(
        f"/books/{book.pk}/edit/", {"title": "The Tide Ledger", "premise": book.premise, "genre_pack": "thriller"}
    )
    assert saved.status_code == 302 and saved["Location"] == f"/books/{book.pk}/"
    book.refresh_from_db()
    assert (book.title, book.genre_pack, book.premise) == (
        "The Tide Ledger",
        "thriller",
        "A clerk finds a forged tide table.",
    )
    # Bad input is said inline, naming the field; nothing changes.
    refused = her.post(f"/books/{book.pk}/edit/", {"title": "", "premise": "", "genre_pack": ""}, expect=(422,))
    assert 'role="alert"' in refused.content.decode() and 'aria-invalid="true"' in refused.content.decode()
    book.refresh_from_db()
    assert book.title == "The Tide Ledger"


def test_only_the_author_edits_her_book(author, editor, book, editor_browser, author_api, sol_api, editor_api):
    assert editor_browser.post(f"/books/{book.pk}/edit/", {"title": "Mine now"}).status_code == 403
    assert "Change the title" not in editor_browser.get(f"/books/{book.pk}/").content.decode()
    for api in (sol_api, editor_api):
        refused = api.patch(f"/books/{book.pk}", {"title": "Mine now"})
        assert refused.status_code == 403 and refused.json()["code"] == "author_only", refused.content
    bad = author_api.patch(f"/books/{book.pk}", {"title": ""})
    assert bad.status_code == 422 and bad.json()["field"] == "title", bad.content
    book.refresh_from_db()
    assert book.title == "The Tide Clock"
    done = author_api.patch(f"/books/{book.pk}", {"genre_pack": "romance"})
    assert (
        done.status_code == 200 and done.json()["genre_pack"] == "romance" and done.json()["title"] == "The Tide Clock"
    )


@pytest.mark.agents_act
def test_a_book_made_without_a_premise_gets_one_and_its_g0_proceeds(author, settings):
    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "PROVIDER": "offline"}
    her = Author(author)
    book = _new_book(her, author)
    her.post(f"/books/{book.pk}/discovery/start/")
    her.post(f"/books/{book.pk}/turns/", {"content": "The protagonist is Ines Varga, a harbour clerk."})
    assert _g0_card(book) is None, "G0 waits for a premise"
    assert "Add the premise (G0 waits for it)" in her.page(f"/books/{book.pk}/")

    her.post(
        f"/books/{book.pk}/edit/",
        {"title": book.title, "premise": "A clerk finds a forged tide table.", "genre_pack": "mystery"},
    )

    book.refresh_from_db()
    assert book.premise == "A clerk finds a forged tide table."
    card = _g0_card(book)
    assert card is not None, "Sol asks for G0 once the premise is there"
    assert "A clerk finds a forged tide table." in OptionCard.objects.get(approval_id=card.pk).summary


@pytest.mark.agents_act
def test_a_new_premise_after_g0_shows_its_impact_first_then_reopens_g0(author, settings):
    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "PROVIDER": "offline"}
    her = Author(author)
    book = _new_book(her, author, "A clerk finds a forged tide table.")
    her.post(f"/books/{book.pk}/discovery/start/")
    her.post(f"/books/{book.pk}/turns/", {"content": "The protagonist is Ines Varga, a harbour clerk."})
    g0 = _g0_card(book)
    assert g0 is not None
    her.post(f"/review/{g0.pk}/", {"verdict": "approve", "rationale": "This is why the book exists."})
    meta = LoopMeta.objects.get(book=book)
    assert meta.gate != "G0"
    passed = meta.gate
    new = {"title": book.title, "premise": "A tide clerk forges the table herself.", "genre_pack": "mystery"}

    shown = her.post(f"/books/{book.pk}/edit/", new)

    page = html_lib.unescape(shown.content.decode())
    assert shown.status_code == 200 and "A new premise reopens G0" in page
    assert f"The discovery is at {passed}" in page and "Nothing has changed yet." in page
    assert 'name="reopen" value="yes"' in page
    book.refresh_from_db()
    assert book.premise == "A clerk finds a forged tide table.", "nothing saved before she confirms"
    assert LoopMeta.objects.get(book=book).gate == passed

    her.post(f"/books/{book.pk}/edit/", {**new, "reopen": "yes"})

    book.refresh_from_db()
    assert book.premise == "A tide clerk forges the table herself."
    assert LoopMeta.objects.get(book=book).gate == "G0"
    card = _g0_card(book)
    assert (
        card is not None
        and "A tide clerk forges the table herself." in OptionCard.objects.get(approval_id=card.pk).summary
    )
    assert not Approval.objects.filter(book=book, status="pending", kind="gate").exclude(gate="G0").exists()


def test_through_the_api_a_new_premise_after_g0_is_a_409_with_the_impact_until_she_confirms(
    author, book, author_api, sol_api
):
    from .loop_scenes import ask_gate, start_discovery, url

    start_discovery(book)
    asked = ask_gate(sol_api, book, "G0")
    assert asked.status_code in (200, 201), asked.content
    verdict = author_api.post(
        url(book, f"/approvals/{asked.json()['approval_id']}/verdict"), {"verdict": "approve", "rationale": "Yes."}
    )
    assert verdict.status_code == 200, verdict.content
    assert LoopMeta.objects.get(book=book).gate != "G0"

    refused = author_api.patch(f"/books/{book.pk}", {"premise": "Another premise."})
    assert refused.status_code == 409, refused.content
    body = refused.json()
    assert (body["code"], body["field"]) == ("reopens_g0", "premise")
    assert body["impact"]["reopens"] is True and body["impact"]["gate"] == LoopMeta.objects.get(book=book).gate
    book.refresh_from_db()
    assert book.premise != "Another premise."

    done = author_api.patch(f"/books/{book.pk}", {"premise": "Another premise.", "reopen": True})
    assert done.status_code == 200 and done.json()["premise"] == "Another premise."
    assert LoopMeta.objects.get(book=book).gate == "G0"
