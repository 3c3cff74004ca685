"""Dossiers are immutable, role-scoped snapshots (invariant 4)."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from approvals.models import Approval
from discovery.models import ContextDossier, KnowledgeBase, KnowledgeClaim

from .discovery_support import assert_forbidden, charter_body, start
from .factories import BookFactory, KnowledgeClaimFactory, ObservationFactory, ScratchpadEntryFactory, TurnFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(author_api, book):
    return start(author_api, book)


def _approved_claim(base, *, book, **kw) -> KnowledgeClaim:
    approval = Approval.objects.create(
        book=book,
        kind="canon-promotion",
        subject_type="claim",
        subject_id="x",
        subject_digest="0" * 64,
        summary="s",
        requested_by_role="sol",
    )
    return KnowledgeClaimFactory(base=base, status="approved", approval=approval, **kw)


@pytest.fixture
def canon(book, session):
    """An approved claim in each of the book's series and book bases, and a proposed one."""
    series_base = KnowledgeBase.objects.get(scope="series", owner_id=str(book.series_id))
    book_base = KnowledgeBase.objects.get(scope="book", owner_id=str(book.pk))
    return {
        "series": _approved_claim(series_base, book=book, subject="The city", predicate="floods", value={"every": 7}),
        "book": _approved_claim(book_base, book=book, subject="Mara", predicate="fears", value="deep water"),
        "proposed": KnowledgeClaimFactory(base=book_base, subject="Mara", predicate="killed"),
    }


def test_luna_dossier_has_no_series_claims_while_sols_has_them(sol_api, luna_api, book, canon):
    sol = sol_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "sol"})
    luna = luna_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "luna"})
    assert sol.status_code == 201 and luna.status_code == 201
    sol_claims = {c["id"]: c for c in sol.json()["content"]["claims"]}
    luna_claims = {c["id"]: c for c in luna.json()["content"]["claims"]}
    assert set(sol_claims) == {str(canon["series"].pk), str(canon["book"].pk)}
    assert set(luna_claims) == {str(canon["book"].pk)}
    assert sol_claims[str(canon["series"].pk)]["value"] == {"every": 7}  # decoded, not a string
    assert "series" not in {b["scope"] for b in luna.json()["content"]["knowledge_bases"]}
    assert luna.json()["content"]["withheld"] == ["series canon (luna lacks series:read)"]
    assert sol.json()["content"]["withheld"] == []
    assert "series:read" not in luna.json()["content"]["capabilities"]
    assert str(canon["proposed"].pk) not in sol_claims  # only approved claims


def test_a_dossier_holds_charter_scratchpad_observations_and_capabilities(
    author_api, sol_api, terra_api, book, session
):
    charter = sol_api.post(f"/books/{book.pk}/charters", charter_body()).json()
    author_api.post(f"/charters/{charter['id']}/resolve", {"approved": True, "rationale": "Yes."})
    turn = TurnFactory(session=session, ordinal=1)
    working = ObservationFactory(turn=turn, session=session, status="working")
    ObservationFactory(turn=turn, session=session, status="resolved", key="done")
    entry = ScratchpadEntryFactory(session=session, sequence=1)
    dossier = terra_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "terra"}).json()
    content = dossier["content"]
    assert dossier["agent_role"] == "terra"
    assert content["charter"]["id"] == charter["id"] and content["charter"]["version"] == 1
    assert [e["id"] for e in content["scratchpad"]] == [str(entry.pk)]
    assert [o["id"] for o in content["observations"]] == [str(working.pk)]
    assert "charter:propose" in content["capabilities"] and "canon:propose" not in content["capabilities"]
    assert {b["relation"] for b in content["knowledge_bases"]} == {"literary-guidance", "series-canon", "book-canon"}


def test_a_dossier_taken_before_a_new_entry_still_holds_the_old_scratchpad(terra_api, luna_api, book, session):
    first = terra_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "hypothesis", "content": "Old."}).json()
    dossier = luna_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "luna"}).json()
    terra_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "question", "content": "New."})
    again = luna_api.get(f"/dossiers/{dossier['id']}").json()
    assert [e["id"] for e in again["content"]["scratchpad"]] == [first["id"]]
    assert again["content"] == dossier["content"]
    newer = luna_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "luna"}).json()
    assert [e["content"] for e in newer["content"]["scratchpad"]] == ["Old.", "New."]


def test_agents_take_only_their_own_dossier_and_the_author_any(author_api, luna_api, editor_api, book, session):
    assert_forbidden(luna_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "sol"}), "luna may take only")
    assert_forbidden(editor_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "luna"}), "editor lacks")
    for role in ("sol", "terra", "luna"):
        assert author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": role}).status_code == 201
    assert luna_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "moon"}).status_code == 422
    assert ContextDossier.objects.count() == 3


def test_reading_dossiers_never_writes_and_agents_see_only_their_roles(author_api, sol_api, luna_api, book, session):
    sol_dossier = author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "sol"}).json()
    author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "luna"})
    count = ContextDossier.objects.count()
    listing = author_api.get(f"/books/{book.pk}/dossiers")
    assert listing.status_code == 200 and listing.json()["count"] == 2
    assert [d["agent_role"] for d in luna_api.get(f"/books/{book.pk}/dossiers").json()["items"]] == ["luna"]
    assert sol_api.get(f"/dossiers/{sol_dossier['id']}").status_code == 200
    assert luna_api.get(f"/dossiers/{sol_dossier['id']}").status_code == 403
    assert ContextDossier.objects.count() == count


def test_a_dossier_cannot_be_changed_or_deleted(author_api, book, session):
    dossier_id = author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "luna"}).json()["id"]
    with pytest.raises((IntegrityError, DatabaseError)), transaction.atomic():
        ContextDossier.objects.filter(pk=dossier_id).update(content={})
    with pytest.raises((IntegrityError, DatabaseError)), transaction.atomic():
        ContextDossier.objects.filter(pk=dossier_id).delete()
    assert ContextDossier.objects.get(pk=dossier_id).content["agent_role"] == "luna"


def test_taking_a_dossier_needs_a_session(author, author_api):
    fresh = BookFactory(owner=author)
    assert author_api.post(f"/books/{fresh.pk}/dossiers", {"agent_role": "sol"}).status_code == 409


def test_the_dossier_query_count_does_not_grow_with_the_data(sol_api, book, session, canon):
    def measure() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert sol_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "sol"}).status_code == 201
        return len(ctx.captured_queries)

    measure()  # the key's first use of the minute records it; measure the steady state
    small = measure()
    base = KnowledgeBase.objects.get(scope="book", owner_id=str(book.pk))
    for i in range(20):
        turn = TurnFactory(session=session, ordinal=i + 1)
        ObservationFactory(turn=turn, session=session)
        ScratchpadEntryFactory(session=session, sequence=i + 1)
        _approved_claim(base, book=book, subject=f"S{i}")
    assert measure() == small
