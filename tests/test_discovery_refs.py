"""Source references resolve within the book the caller may read; one query per type."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from discovery.access import book_access
from discovery.models import KnowledgeBase, KnowledgeLink
from discovery.refs import resolve_source_refs, validate_source_refs
from discovery.schemas import EntryIn
from novelgraph.core.auth import Principal
from novelgraph.core.errors import Invalid
from novelgraph.core.schemas import parse_form

from .factories import (
    BookFactory,
    DiscoverySessionFactory,
    KnowledgeChunkFactory,
    KnowledgeClaimFactory,
    ResearchItemFactory,
    ScratchpadEntryFactory,
    StoryCharterFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


def _series_claim(book):
    base = KnowledgeBase.objects.create(scope="series", owner_id=str(book.series_id), name="Series canon")
    KnowledgeLink.objects.create(book=book, base=base, relation="series-canon")
    return KnowledgeClaimFactory(base=base)


def test_typed_refs_of_the_book_pass_and_come_back_normalised(author, book):
    session = DiscoverySessionFactory(book=book)
    turn = TurnFactory(session=session)
    entry = ScratchpadEntryFactory(session=session)
    sol = book_access(Principal(user=author, key_role="sol"), book)
    refs = [
        {"type": "turn", "id": str(turn.pk).upper()},
        {"type": "entry", "id": str(entry.pk)},
        {"type": "other", "id": "chat-2026-01-02", "label": "chat log"},
    ]
    out = validate_source_refs(sol, refs)
    assert out == [
        {"type": "turn", "id": str(turn.pk)},
        {"type": "entry", "id": str(entry.pk)},
        {"type": "other", "id": "chat-2026-01-02", "label": "chat log"},
    ]


def test_a_turn_of_another_book_is_refused_naming_the_index(author, book):
    foreign_turn = TurnFactory(session=DiscoverySessionFactory(book=BookFactory()))
    sol = book_access(Principal(user=author, key_role="sol"), book)
    with pytest.raises(Invalid) as err:
        validate_source_refs(sol, [{"type": "other", "id": "x"}, {"type": "turn", "id": str(foreign_turn.pk)}])
    assert err.value.field == "source_refs[1]"
    assert str(foreign_turn.pk) in err.value.message


def test_luna_may_not_cite_a_series_claim_but_sol_may(author, book):
    claim = _series_claim(book)
    refs = [{"type": "claim", "id": str(claim.pk)}]
    sol = book_access(Principal(user=author, key_role="sol"), book)
    assert validate_source_refs(sol, refs) == refs
    luna = book_access(Principal(user=author, key_role="luna"), book)
    with pytest.raises(Invalid) as err:
        validate_source_refs(luna, refs)
    assert err.value.field == "source_refs[0]"
    assert "luna" in err.value.message


def test_more_than_fifty_refs_and_malformed_ids_are_refused(author, book):
    entry = {"kind": "observation", "content": "x"}
    with pytest.raises(Invalid) as err:  # the input schema carries the limit
        parse_form(EntryIn, {**entry, "source_refs": [{"type": "other", "id": str(i)} for i in range(51)]})
    assert err.value.field == "source_refs"
    with pytest.raises(Invalid) as err:
        parse_form(EntryIn, {**entry, "source_refs": [{"type": "tweet", "id": "1"}]})
    assert err.value.field == "source_refs.0.type"
    sol = book_access(Principal(user=author, key_role="sol"), book)
    with pytest.raises(Invalid) as err:  # a typed reference must carry an id
        validate_source_refs(sol, [{"type": "turn", "id": "nope"}])
    assert err.value.field == "source_refs[0]"


def test_resolve_describes_each_ref_with_one_query_per_type(book):
    reader = book_access(Principal(user=book.owner), book)
    session = DiscoverySessionFactory(book=book)
    turns = [TurnFactory(session=session, ordinal=i + 1) for i in range(3)]
    entry = ScratchpadEntryFactory(session=session, kind="question", agent_role="luna")
    claim = _series_claim(book)
    chunk = KnowledgeChunkFactory()
    research = ResearchItemFactory(book=book)
    charter = StoryCharterFactory(book=book)
    refs = [{"type": "turn", "id": str(t.pk)} for t in turns] + [
        {"type": "entry", "id": str(entry.pk)},
        {"type": "claim", "id": str(claim.pk)},
        {"type": "chunk", "id": str(chunk.pk)},
        {"type": "research", "id": str(research.pk)},
        {"type": "charter", "id": str(charter.pk)},
        {"type": "observation", "id": str(uuid.uuid4())},
        {"type": "other", "id": "https://example.org/x"},
    ]
    with CaptureQueriesContext(connection) as ctx:
        resolved = resolve_source_refs(reader, refs)
    # turn, entry, claim (+3 for the book's bases), chunk, research, charter, observation
    assert len(ctx.captured_queries) <= 10
    assert [r["exists"] for r in resolved] == [True] * 8 + [False, True]
    assert resolved[0]["detail"]["ordinal"] == 1
    assert resolved[3]["detail"] == {
        "kind": "question",
        "role": "luna",
        "content": entry.content,
        "sequence": entry.sequence,
    }
    assert resolved[4]["detail"]["subject"] == "Mara" and resolved[4]["detail"]["status"] == "proposed"
    assert resolved[5]["detail"]["source"] == chunk.source.title
    assert resolved[6]["url"] == research.url and resolved[6]["detail"]["status"] == "pending"
    assert resolved[7]["detail"]["version"] == charter.version
    assert resolved[9]["url"] == "https://example.org/x"


def test_luna_reading_a_series_claim_sees_it_withheld_and_says_why(author, book):
    claim = _series_claim(book)
    refs = [{"type": "claim", "id": str(claim.pk)}]
    luna = book_access(Principal(user=author, key_role="luna"), book)
    [shown] = resolve_source_refs(luna, refs)
    assert shown["withheld"] is True and shown["detail"] == {}
    assert shown["label"] == "withheld: series canon (luna lacks series:read)"
    assert claim.subject not in str(shown) and str(claim.value) not in str(shown)
    [seen] = resolve_source_refs(book_access(Principal(user=author, key_role="sol"), book), refs)
    assert seen["detail"]["subject"] == claim.subject and "withheld" not in seen
