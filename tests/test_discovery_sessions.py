"""Series, books, starting discovery, the discovery view, turns with observations, thrusts."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from discovery.models import (
    OPENING_QUESTION,
    Book,
    DiscoverySession,
    KnowledgeLink,
    Observation,
    ScratchpadEntry,
    SessionQuestion,
    ThrustCandidate,
    Turn,
)
from novelgraph.core.services import api_key_create

from .conftest import Api
from .discovery_support import assert_forbidden, start, thrust_body
from .factories import BookFactory, KnowledgeChunkFactory, ScratchpadEntryFactory, TurnFactory

pytestmark = pytest.mark.django_db


def test_an_author_creates_a_series_and_a_book_in_it(author, author_api):
    series = author_api.post("/series", {"title": "Drowned City", "premise": "Cases", "publication_target": "2027"})
    assert series.status_code == 201
    response = author_api.post(
        "/books",
        {"series_id": series.json()["id"], "title": "The Tide Clock 2", "genre_pack": "mystery", "planned_order": 2},
    )
    assert response.status_code == 201
    book = Book.objects.get(pk=response.json()["id"])
    assert book.owner == author and str(book.series_id) == series.json()["id"] and book.planned_order == 2
    assert response.json()["slug"] == book.slug


def test_an_agent_key_creates_no_books_and_nobody_files_a_book_in_a_foreign_series(sol_api, outsider_api, book):
    assert sol_api.post("/books", {"title": "Sol's novel"}).status_code == 403
    response = outsider_api.post("/books", {"title": "Stolen", "series_id": str(book.series_id)})
    assert response.status_code == 404
    assert not Book.objects.filter(title__in=["Sol's novel", "Stolen"]).exists()


def test_book_list_is_paginated_and_shows_only_the_callers_books(author_api, editor_api, outsider_api, book):
    BookFactory(owner=book.owner, title="A second book")
    listing = author_api.get("/books", limit=1)
    assert listing.status_code == 200
    assert listing.json()["count"] == 2 and len(listing.json()["items"]) == 1
    assert [b["title"] for b in editor_api.get("/books").json()["items"]] == ["The Tide Clock"]
    assert book.title not in [b["title"] for b in outsider_api.get("/books").json()["items"]]
    assert outsider_api.get(f"/books/{book.pk}").status_code == 404
    assert editor_api.get(f"/books/{book.pk}").json()["role"] == "editor"


def test_starting_discovery_creates_the_session_and_the_knowledge_bases_once(author_api, book):
    first = author_api.post(f"/books/{book.pk}/discovery")
    assert first.status_code == 201
    assert first.json()["status"] == "active"
    assert first.json()["current_question"] == OPENING_QUESTION
    again = author_api.post(f"/books/{book.pk}/discovery")
    assert again.status_code == 200
    assert again.json()["session_id"] == first.json()["session_id"]
    assert DiscoverySession.objects.filter(book=book).count() == 1
    links = {(link.relation, link.base.scope) for link in KnowledgeLink.objects.filter(book=book)}
    assert links == {("literary-guidance", "literary"), ("series-canon", "series"), ("book-canon", "book")}
    literary = KnowledgeLink.objects.get(book=book, relation="literary-guidance").base
    assert literary.owner_id == "global"
    assert KnowledgeLink.objects.get(book=book, relation="series-canon").base.owner_id == str(book.series_id)
    assert KnowledgeLink.objects.get(book=book, relation="book-canon").base.owner_id == str(book.pk)


def test_a_book_without_a_series_gets_no_series_base(author, author_api):
    lone = BookFactory(owner=author, series=None)
    start(author_api, lone)
    assert set(KnowledgeLink.objects.filter(book=lone).values_list("relation", flat=True)) == {
        "literary-guidance",
        "book-canon",
    }


def test_turns_are_numbered_and_carry_their_observations(author_api, sol_api, book):
    session = start(author_api, book)
    first = author_api.post(
        f"/sessions/{session.pk}/turns",
        {
            "role": "author",
            "content": "I want the reader to distrust the narrator.",
            "observations": [{"key": "aftertaste", "value": "distrust", "provenance": "author-stated"}],
        },
    )
    assert first.status_code == 201
    assert first.json()["ordinal"] == 1
    assert first.json()["observations"][0]["status"] == "working"
    second = sol_api.post(f"/sessions/{session.pk}/turns", {"role": "sol", "content": "Who should she lie to?"})
    assert second.status_code == 201 and second.json()["ordinal"] == 2
    assert list(Turn.objects.filter(session=session).values_list("ordinal", "role")) == [(1, "author"), (2, "sol")]
    assert Observation.objects.get(session=session).turn_id == Turn.objects.get(ordinal=1).pk


def test_a_turn_claiming_another_role_is_refused(sol_api, editor_api, author_api, book):
    session = start(author_api, book)
    response = sol_api.post(f"/sessions/{session.pk}/turns", {"role": "author", "content": "I, the author, approve."})
    assert response.status_code == 403
    assert "sol" in response.json()["detail"] and "'author'" in response.json()["detail"]
    assert editor_api.post(f"/sessions/{session.pk}/turns", {"role": "author", "content": "x"}).status_code == 403
    assert editor_api.post(f"/sessions/{session.pk}/turns", {"role": "editor", "content": "x"}).status_code == 201
    assert Turn.objects.filter(session=session).count() == 1


def test_bad_turn_input_is_a_422_naming_the_field_and_writes_nothing(author_api, book):
    session = start(author_api, book)
    response = author_api.post(
        f"/sessions/{session.pk}/turns",
        {
            "role": "author",
            "content": "Fine.",
            "observations": [{"key": "k", "value": "v", "provenance": "author-stated", "confidence": 1.5}],
        },
    )
    assert response.status_code == 422
    assert response.json()["field"] == "observations.0.confidence"
    assert author_api.post(f"/sessions/{session.pk}/turns", {"role": "narrator", "content": "x"}).status_code == 422
    assert author_api.post("/sessions/not-a-uuid/turns", {"role": "author", "content": "x"}).status_code == 422
    assert not Turn.objects.filter(session=session).exists()


def test_a_turn_in_a_closed_session_is_a_conflict(author_api, book):
    session = start(author_api, book)
    DiscoverySession.objects.filter(pk=session.pk).update(status="closed")  # as the G3 hand-off leaves it
    response = author_api.post(f"/sessions/{session.pk}/turns", {"role": "author", "content": "More."})
    assert response.status_code == 409 and "handed off" in response.json()["detail"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_turns_get_distinct_ordinals(author, editor):
    book = BookFactory(owner=author, editors=[editor])
    key = api_key_create(owner=author, role="author")[1]
    session = start(Api(Client(), key), book)
    statuses: list[int] = []
    barrier = threading.Barrier(6)

    def post(i: int) -> None:
        try:
            api = Api(Client(), key)
            barrier.wait()
            statuses.append(
                api.post(f"/sessions/{session.pk}/turns", {"role": "author", "content": f"t{i}"}).status_code
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [201] * 6
    assert sorted(Turn.objects.filter(session=session).values_list("ordinal", flat=True)) == [1, 2, 3, 4, 5, 6]


def test_a_thrust_moves_an_active_session_to_charter_proposed_but_never_back(sol_api, terra_api, author_api, book):
    session = start(author_api, book)
    response = terra_api.post(f"/sessions/{session.pk}/thrusts", thrust_body())
    assert response.status_code == 201
    assert response.json()["status"] == "proposed" and response.json()["proposed_by"] == "terra"
    session.refresh_from_db()
    assert session.status == "charter-proposed"
    DiscoverySession.objects.filter(pk=session.pk).update(status="approved")
    assert sol_api.post(f"/sessions/{session.pk}/thrusts", thrust_body(kind="wild")).status_code == 201
    session.refresh_from_db()
    assert session.status == "approved"
    assert ThrustCandidate.objects.filter(session=session).count() == 2


def test_a_thrust_needs_a_reader_promise(terra_api, author_api, book):
    session = start(author_api, book)
    response = terra_api.post(f"/sessions/{session.pk}/thrusts", thrust_body(reader_promise=[]))
    assert response.status_code == 422 and response.json()["field"] == "reader_promise"
    assert not ThrustCandidate.objects.exists()


def test_luna_proposes_no_thrust(luna_api, author_api, book):
    session = start(author_api, book)
    assert_forbidden(luna_api.post(f"/sessions/{session.pk}/thrusts", thrust_body()), "luna lacks charter:propose")


def test_the_discovery_view_runs_a_fixed_number_of_queries(author_api, luna_api, book):
    session = start(author_api, book)

    def measure() -> int:
        with CaptureQueriesContext(connection) as ctx:
            response = author_api.get(f"/books/{book.pk}/discovery")
        assert response.status_code == 200
        return len(ctx.captured_queries)

    TurnFactory(session=session, ordinal=1)
    ScratchpadEntryFactory(session=session, sequence=1)
    small = measure()
    for i in range(2, 12):
        TurnFactory(session=session, ordinal=i)
        ScratchpadEntryFactory(session=session, sequence=i)
    assert measure() == small
    view = author_api.get(f"/books/{book.pk}/discovery").json()
    assert [t["ordinal"] for t in view["turns"]] == list(range(1, 12))
    assert [e["sequence"] for e in view["scratchpad"]] == list(range(1, 12))
    assert {b["relation"] for b in view["knowledge_bases"]} == {"literary-guidance", "series-canon", "book-canon"}
    luna_view = luna_api.get(f"/books/{book.pk}/discovery").json()
    assert {b["relation"] for b in luna_view["knowledge_bases"]} == {"literary-guidance", "book-canon"}


def test_the_view_of_a_book_not_yet_started_is_empty_and_reading_writes_nothing(luna_api, book):
    response = luna_api.get(f"/books/{book.pk}/discovery")
    assert response.status_code == 200
    assert response.json()["session"] is None and response.json()["turns"] == []
    assert not DiscoverySession.objects.exists() and not KnowledgeLink.objects.exists()


# --- Sol keeps the question moving (seed 000: "choose the next consequential question") ---------


def test_sol_sets_the_next_question_citing_the_turn_that_prompted_it(sol_api, author_api, book):
    session_id = author_api.post(f"/books/{book.pk}/discovery").json()["session_id"]
    turn = author_api.post(
        f"/sessions/{session_id}/turns", {"role": "author", "content": "The keeper lies to the coroner."}
    ).json()

    asked = sol_api.post(
        f"/sessions/{session_id}/question",
        {"question": "What does she hide from the coroner?", "source_refs": [{"type": "turn", "id": turn["id"]}]},
    )

    assert asked.status_code == 201 and asked.json()["sequence"] == 1 and asked.json()["asked_by"] == "sol"
    view = author_api.get(f"/books/{book.pk}/discovery").json()
    assert view["session"]["current_question"] == "What does she hide from the coroner?"
    history = author_api.get(f"/sessions/{session_id}/questions").json()["items"]
    assert [q["question"] for q in history] == ["What does she hide from the coroner?"]


def test_a_question_without_a_citation_or_from_a_lens_is_refused(sol_api, luna_api, author_api, book):
    session_id = author_api.post(f"/books/{book.pk}/discovery").json()["session_id"]
    bare = sol_api.post(f"/sessions/{session_id}/question", {"question": "Why?", "source_refs": []})
    assert bare.status_code == 422 and bare.json()["field"] == "source_refs"
    free = sol_api.post(
        f"/sessions/{session_id}/question", {"question": "Why?", "source_refs": [{"type": "other", "id": "a hunch"}]}
    )
    assert free.status_code == 422 and free.json()["field"] == "source_refs"
    turn = author_api.post(f"/sessions/{session_id}/turns", {"role": "author", "content": "A turn."}).json()
    refused = luna_api.post(
        f"/sessions/{session_id}/question", {"question": "Why?", "source_refs": [{"type": "turn", "id": turn["id"]}]}
    )
    assert refused.status_code == 403 and "discovery:write" in refused.json()["detail"]
    assert not SessionQuestion.objects.exists()


def test_literary_guidance_in_the_scratchpad_cites_its_chunk_and_agents_never_write_author_stated(
    luna_api, author_api, book
):
    session_id = author_api.post(f"/books/{book.pk}/discovery").json()["session_id"]
    chunk = KnowledgeChunkFactory(citation="Fair play", content="Show every clue before the reveal.")
    body = {"kind": "observation", "content": "Every clue must be visible first.", "provenance": "literary-guidance"}
    missing = luna_api.post(f"/sessions/{session_id}/scratchpad", body)
    assert missing.status_code == 422 and missing.json()["field"] == "source_refs"
    cited = luna_api.post(
        f"/sessions/{session_id}/scratchpad", {**body, "source_refs": [{"type": "chunk", "id": str(chunk.pk)}]}
    )
    assert cited.status_code == 201 and cited.json()["provenance"] == "literary-guidance"
    forged = luna_api.post(f"/sessions/{session_id}/scratchpad", {**body, "provenance": "author-stated"})
    assert forged.status_code == 422 and forged.json()["field"] == "provenance"
    assert ScratchpadEntry.objects.filter(session_id=session_id).count() == 1
