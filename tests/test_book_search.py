"""Searching a book's own record (turns, scratchpad, claims, charters) through the API and the book's page.

The same search module and modes as the library (any word, ranked); what the role may not read is
withheld and named (Luna never sees series canon). No stored index: the search reads the rows as they are.
"""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from discovery.models import KnowledgeBase

from .factories import (
    DiscoverySessionFactory,
    KnowledgeBaseFactory,
    KnowledgeClaimFactory,
    KnowledgeLinkFactory,
    ScratchpadEntryFactory,
    StoryCharterFactory,
    TurnFactory,
)

RANKED = "postgres" if connection.vendor == "postgresql" else "like"


@pytest.fixture
def record(book):
    """One record of each kind, each holding the word "lighthouse" (and some "keeper")."""
    session = DiscoverySessionFactory(book=book)
    series_base = KnowledgeBaseFactory(scope="series", owner_id=str(book.series_id), name="Drowned Coast canon")
    KnowledgeLinkFactory(book=book, base=series_base, relation="series-canon")
    book_base, _ = KnowledgeBase.objects.get_or_create(
        scope="book", owner_id=str(book.pk), defaults={"name": "Tide Clock canon"}
    )
    return {
        "turn": TurnFactory(session=session, content="The lighthouse keeper lies to everyone, even the reader."),
        "entry": ScratchpadEntryFactory(session=session, content="Could the lighthouse be the real narrator?"),
        "charter": StoryCharterFactory(
            book=book,
            content={"main_thrust": "A lighthouse murder, told by its keeper", "setting": {"town": "Café Brûlé"}},
        ),
        "claim": KnowledgeClaimFactory(base=book_base, subject="Mara", predicate="keeps", value="the lighthouse"),
        "series_claim": KnowledgeClaimFactory(
            base=series_base, subject="The lighthouse", predicate="was built in", value="1871"
        ),
    }


def ids(response) -> dict[str, str]:
    return {hit["id"]: hit["kind"] for hit in response.json()["results"]}


def test_the_author_finds_every_kind_of_record_by_any_word(author_api, book, record):
    response = author_api.get(f"/books/{book.pk}/search", q="where is the lighthouse?")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["mode"] == RANKED and body["withheld"] == []
    assert ids(response) == {
        str(record["turn"].pk): "turn",
        str(record["entry"].pk): "entry",
        str(record["charter"].pk): "charter",
        str(record["claim"].pk): "claim",
        str(record["series_claim"].pk): "claim",
    }
    scores = [hit["score"] for hit in body["results"]]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0


def test_records_holding_more_of_the_words_rank_first(author_api, book, record):
    body = author_api.get(f"/books/{book.pk}/search", q="lighthouse keeper reader").json()

    assert body["results"][0]["id"] == str(record["turn"].pk)  # all three words
    assert body["results"][1]["id"] == str(record["charter"].pk)  # two
    assert body["results"][0]["score"] > body["results"][1]["score"] > body["results"][2]["score"]


def test_json_values_are_searched_by_their_text_not_their_keys(author_api, book, record):
    assert ids(author_api.get(f"/books/{book.pk}/search", q="brûlé")) == {str(record["charter"].pk): "charter"}
    assert ids(author_api.get(f"/books/{book.pk}/search", q="BRULE")) == {str(record["charter"].pk): "charter"}
    assert ids(author_api.get(f"/books/{book.pk}/search", q="setting main_thrust")) == {}  # keys only
    assert ids(author_api.get(f"/books/{book.pk}/search", q="1871")) == {str(record["series_claim"].pk): "claim"}


def test_luna_never_sees_series_canon_and_is_told_so(luna_api, sol_api, book, record):
    luna = luna_api.get(f"/books/{book.pk}/search", q="lighthouse").json()
    assert str(record["series_claim"].pk) not in {hit["id"] for hit in luna["results"]}
    assert str(record["claim"].pk) in {hit["id"] for hit in luna["results"]}
    assert luna["withheld"] == ["series canon"]
    assert luna_api.get(f"/books/{book.pk}/search", q="1871").json()["results"] == []

    sol = sol_api.get(f"/books/{book.pk}/search", q="1871").json()
    assert [hit["id"] for hit in sol["results"]] == [str(record["series_claim"].pk)] and sol["withheld"] == []


def test_the_search_reads_the_rows_as_they_are_now(author_api, book, record):
    claim = record["claim"]
    claim.value = "the harbour"
    claim.save()
    assert str(claim.pk) not in ids(author_api.get(f"/books/{book.pk}/search", q="lighthouse"))
    assert ids(author_api.get(f"/books/{book.pk}/search", q="harbour")) == {str(claim.pk): "claim"}
    record["charter"].delete()
    assert ids(author_api.get(f"/books/{book.pk}/search", q="brûlé")) == {}


def test_another_book_is_not_searched_and_a_stranger_gets_a_404(author_api, outsider_api, other_book, book, record):
    TurnFactory(session=DiscoverySessionFactory(book=other_book), content="Another lighthouse entirely.")

    assert len(author_api.get(f"/books/{book.pk}/search", q="lighthouse").json()["results"]) == 5
    assert outsider_api.get(f"/books/{book.pk}/search", q="lighthouse").status_code == 404
    assert author_api.get(f"/books/{uuid.uuid4()}/search", q="lighthouse").status_code == 404


@pytest.mark.parametrize(
    "params, field", [({"q": "a\x00b"}, "q"), ({"q": "x", "limit": 0}, "limit"), ({"q": "x", "limit": 51}, "limit")]
)
def test_bad_input_is_a_422_naming_the_field(author_api, book, record, params, field):
    response = author_api.get(f"/books/{book.pk}/search", **params)
    assert response.status_code == 422
    assert field in response.content.decode()


@pytest.mark.parametrize("query", ["", "   ", '"', "' OR 1=1 --", "%", "_", "\\", "NEAR(qz zq)", "x" * 10_000])
def test_blank_and_hostile_queries_answer_normally(author_api, book, record, query):
    response = author_api.get(f"/books/{book.pk}/search", q=query)
    assert response.status_code == 200
    assert response.json()["results"] == []


def test_the_like_mode_answers_the_same_records(author_api, book, record, settings):
    settings.NOVELGRAPH_SEARCH_MODE = "like"
    body = author_api.get(f"/books/{book.pk}/search", q="lighthouse keeper reader").json()
    assert body["mode"] == "like"
    assert body["results"][0]["id"] == str(record["turn"].pk)
    assert [hit["score"] for hit in body["results"][:2]] == [3.0, 2.0]


# --- The page ---------------------------------------------------------------------


def test_the_book_page_search_lists_links_to_each_record(author_browser, book, record):
    page = author_browser.get(f"/books/{book.pk}/search/", {"q": "how do I find the lighthouse?"})

    html = page.content.decode()
    assert page.status_code == 200
    assert f"/books/{book.pk}/scratchpad/#turn-{record['turn'].pk}" in html
    assert f"/books/{book.pk}/scratchpad/#entry-{record['entry'].pk}" in html
    assert f"/books/{book.pk}/#charter-{record['charter'].pk}" in html
    assert f"/books/{book.pk}/#claim-{record['claim'].pk}" in html
    assert "5 records found" in html
    assert f'href="/books/{book.pk}/search/"' in author_browser.get(f"/books/{book.pk}/").content.decode()


def test_the_page_answers_htmx_with_the_results_only_and_bad_input_inline(author_browser, editor_browser, book, record):
    partial = author_browser.get(f"/books/{book.pk}/search/", {"q": "lighthouse"}, HTTP_HX_REQUEST="true")
    assert partial.content.decode().lstrip().startswith('<section id="record-results"')

    bad = author_browser.get(f"/books/{book.pk}/search/", {"q": "a\x00b"})
    assert bad.status_code == 422 and "form-error" in bad.content.decode()

    assert "5 records found" in editor_browser.get(f"/books/{book.pk}/search/", {"q": "lighthouse"}).content.decode()


def test_a_stranger_gets_a_404_page(client, outsider, book, record):
    from .factories import PASSWORD

    assert client.login(username=outsider.username, password=PASSWORD)
    assert client.get(f"/books/{book.pk}/search/", {"q": "lighthouse"}).status_code == 404
