"""``/me``'s page of book ids is ``books_visible_to`` itself, compiled once per vendor: the same ids, in the same
order, for a person (her books and the books she edits), an agent key (its owner's books only) and a key limited
to some books, past a page and with nothing to show."""

from __future__ import annotations

import pytest

from discovery.access import VISIBLE_PAGE, books_visible_to, first_visible_book_ids
from novelgraph.core.auth import Principal

from .factories import BookFactory, UserFactory


def reference(principal: Principal) -> tuple[list, bool]:
    rows = list(books_visible_to(principal).order_by("title", "id").values_list("pk", flat=True)[: VISIBLE_PAGE + 1])
    return rows[:VISIBLE_PAGE], len(rows) > VISIBLE_PAGE


@pytest.mark.parametrize("books", [0, 3, VISIBLE_PAGE + 4])
@pytest.mark.parametrize("role", ["author", "sol", "luna"])
def test_the_first_page_of_visible_books_is_books_visible_to_s(db, books, role):
    person, someone = UserFactory(), UserFactory()
    for n in range(books):
        BookFactory(owner=person, title=f"Book {n % 5}")  # equal titles: the id breaks the tie
    edited = BookFactory(owner=someone, title="Edited")
    edited.editors.add(person)
    BookFactory(owner=someone, title="Not hers")

    principal = Principal(user=person, key_role=role)
    ids, more = first_visible_book_ids(principal)

    assert (ids, more) == reference(principal)
    assert (edited.pk in ids) == (role == "author" and books < VISIBLE_PAGE), "a person sees what she edits"
    assert more == (books + (role == "author") > VISIBLE_PAGE)


def test_a_key_limited_to_some_books_sees_only_those(db):
    person = UserFactory()
    mine = [BookFactory(owner=person, title=f"Book {n}") for n in range(4)]
    principal = Principal(user=person, key_role="sol", key_book_ids=frozenset({mine[1].pk, mine[3].pk}))

    assert first_visible_book_ids(principal) == ([mine[1].pk, mine[3].pk], False) == reference(principal)
