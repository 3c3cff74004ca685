"""The scratchpad is append-only, ordered, never deduplicated and never promoted (invariant 1)."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.test import Client

from discovery.models import KnowledgeClaim, Observation, ScratchpadEntry
from novelgraph.core.services import api_key_create

from .conftest import Api
from .discovery_support import start
from .factories import BookFactory, DiscoverySessionFactory, ScratchpadEntryFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(author_api, book):
    return start(author_api, book)


def test_terra_appends_entries_in_creation_order(terra_api, luna_api, session):
    first = terra_api.post(
        f"/sessions/{session.pk}/scratchpad", {"kind": "hypothesis", "content": "Lies drive her.", "confidence": 0.4}
    )
    assert first.status_code == 201
    body = first.json()
    assert (body["sequence"], body["agent_role"], body["kind"], body["confidence"]) == (1, "terra", "hypothesis", 0.4)
    second = luna_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "question", "content": "Whose letter?"})
    assert second.status_code == 201 and second.json()["sequence"] == 2 and second.json()["confidence"] is None
    listing = luna_api.get(f"/sessions/{session.pk}/scratchpad")
    assert [e["sequence"] for e in listing.json()["items"]] == [1, 2]
    assert listing.json()["count"] == 2
    assert [e["kind"] for e in luna_api.get(f"/sessions/{session.pk}/scratchpad", kind="question").json()["items"]] == [
        "question"
    ]
    only_terra = luna_api.get(f"/sessions/{session.pk}/scratchpad", agent_role="terra").json()["items"]
    assert [e["agent_role"] for e in only_terra] == ["terra"]
    assert luna_api.get(f"/sessions/{session.pk}/scratchpad", kind="rumour").status_code == 422


def test_sol_appends_through_discovery_write(sol_api, session):
    response = sol_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "observation", "content": "Noted."})
    assert response.status_code == 201 and response.json()["agent_role"] == "sol"


@pytest.mark.parametrize("confidence", [-0.1, 1.01, "high"])
def test_confidence_outside_zero_to_one_is_a_422(terra_api, session, confidence):
    response = terra_api.post(
        f"/sessions/{session.pk}/scratchpad", {"kind": "hypothesis", "content": "x", "confidence": confidence}
    )
    assert response.status_code == 422 and response.json()["field"] == "confidence"
    assert not ScratchpadEntry.objects.exists()


@pytest.mark.parametrize("confidence", [0, 1])
def test_confidence_bounds_are_accepted(terra_api, session, confidence):
    response = terra_api.post(
        f"/sessions/{session.pk}/scratchpad", {"kind": "hypothesis", "content": "x", "confidence": confidence}
    )
    assert response.status_code == 201 and response.json()["confidence"] == confidence


def test_unknown_kind_is_a_422(terra_api, session):
    response = terra_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "decision", "content": "x"})
    assert response.status_code == 422 and response.json()["field"] == "kind"


def test_a_ref_to_another_books_turn_is_a_422_naming_it(terra_api, session, author):
    foreign = ScratchpadEntryFactory(session=DiscoverySessionFactory(book=BookFactory(owner=UserFactory())))
    response = terra_api.post(
        f"/sessions/{session.pk}/scratchpad",
        {
            "kind": "observation",
            "content": "x",
            "source_refs": [{"type": "other", "id": "notes"}, {"type": "entry", "id": str(foreign.pk)}],
        },
    )
    assert response.status_code == 422 and response.json()["field"] == "source_refs[1]"
    assert not ScratchpadEntry.objects.filter(session=session).exists()


def test_a_digest_must_cite_an_earlier_entry_of_the_same_session(terra_api, author_api, session, book):
    no_refs = terra_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "digest", "content": "Summary."})
    assert no_refs.status_code == 422 and "digest" in no_refs.json()["detail"]
    earlier = terra_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "hypothesis", "content": "A."}).json()
    other_session = DiscoverySessionFactory(book=book, status="closed")
    elsewhere = ScratchpadEntryFactory(session=other_session)
    wrong_session = terra_api.post(
        f"/sessions/{session.pk}/scratchpad",
        {"kind": "digest", "content": "Summary.", "source_refs": [{"type": "entry", "id": str(elsewhere.pk)}]},
    )
    assert wrong_session.status_code == 422
    ok = terra_api.post(
        f"/sessions/{session.pk}/scratchpad",
        {"kind": "digest", "content": "Summary.", "source_refs": [{"type": "entry", "id": earlier["id"]}]},
    )
    assert ok.status_code == 201
    assert ok.json()["source_refs"] == [{"type": "entry", "id": earlier["id"]}]


def test_repeating_a_hypothesis_changes_no_status_and_creates_no_claim(terra_api, sol_api, author_api, session):
    turn = author_api.post(
        f"/sessions/{session.pk}/turns",
        {
            "role": "author",
            "content": "She lies.",
            "observations": [{"key": "liar", "value": "Mara lies", "provenance": "author-stated"}],
        },
    ).json()
    before_claims = KnowledgeClaim.objects.count()
    for api in (terra_api, sol_api, terra_api, terra_api):
        response = api.post(
            f"/sessions/{session.pk}/scratchpad",
            {
                "kind": "hypothesis",
                "content": "Mara is the killer.",
                "confidence": 0.9,
                "source_refs": [{"type": "turn", "id": turn["id"]}],
            },
        )
        assert response.status_code == 201
    entries = ScratchpadEntry.objects.filter(session=session)
    assert entries.count() == 4  # never deduplicated
    assert set(entries.values_list("kind", flat=True)) == {"hypothesis"}
    assert KnowledgeClaim.objects.count() == before_claims
    assert list(Observation.objects.filter(session=session).values_list("status", flat=True)) == ["working"]
    session.refresh_from_db()
    assert session.status == "active"


def test_no_route_updates_or_deletes_an_entry(terra_api, author_api, session):
    entry = terra_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "question", "content": "Why?"}).json()
    for call in (
        lambda path: author_api.put(path, {"content": "changed"}),
        lambda path: author_api.patch(path, {"content": "changed"}),
        author_api.delete,
    ):
        for path in (f"/sessions/{session.pk}/scratchpad", f"/sessions/{session.pk}/scratchpad/{entry['id']}"):
            assert call(path).status_code in (404, 405)
    assert ScratchpadEntry.objects.get(pk=entry["id"]).content == "Why?"


def test_the_orm_cannot_update_or_delete_an_entry(session):
    entry = ScratchpadEntryFactory(session=session, content="original")
    with pytest.raises((IntegrityError, DatabaseError)), transaction.atomic():
        ScratchpadEntry.objects.filter(pk=entry.pk).update(content="rewritten")
    with pytest.raises((IntegrityError, DatabaseError)), transaction.atomic():
        ScratchpadEntry.objects.filter(pk=entry.pk).delete()
    with pytest.raises((IntegrityError, DatabaseError)), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE discovery_scratchpadentry SET content = 'raw'")
    with pytest.raises(Exception, match="append-only"):
        entry.content = "saved"
        entry.save()
    with pytest.raises(Exception, match="append-only"):
        entry.delete()
    assert ScratchpadEntry.objects.get(pk=entry.pk).content == "original"


def test_the_admin_change_and_delete_views_refuse(session, client):
    entry = ScratchpadEntryFactory(session=session, content="original")
    staff = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(staff)
    change = client.post(f"/admin/discovery/scratchpadentry/{entry.pk}/change/", {"content": "edited"})
    delete = client.post(f"/admin/discovery/scratchpadentry/{entry.pk}/delete/", {"post": "yes"})
    bulk = client.post(
        "/admin/discovery/scratchpadentry/",
        {"action": "delete_selected", "_selected_action": [str(entry.pk)], "post": "yes"},
    )
    assert change.status_code == 403
    assert delete.status_code == 403
    assert bulk.status_code in (200, 302, 403)
    assert ScratchpadEntry.objects.get(pk=entry.pk).content == "original"


def test_people_write_turns_not_scratchpad_entries(author_api, editor_api, session):
    for api, who in ((author_api, "author"), (editor_api, "editor")):
        response = api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "question", "content": "x"})
        assert response.status_code == 403
        assert f"{who} lacks scratchpad:write" in response.json()["detail"]
    assert not ScratchpadEntry.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_get_distinct_sequences():
    author = UserFactory(username="conc")
    book = BookFactory(owner=author)
    session = start(Api(Client(), api_key_create(owner=author, role="author")[1]), book)
    key = api_key_create(owner=author, role="luna")[1]
    statuses: list[int] = []
    barrier = threading.Barrier(6)

    def post(i: int) -> None:
        try:
            api = Api(Client(), key)
            barrier.wait()
            response = api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "observation", "content": f"n{i}"})
            statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [201] * 6
    assert sorted(ScratchpadEntry.objects.filter(session=session).values_list("sequence", flat=True)) == list(
        range(1, 7)
    )


def test_an_unknown_session_is_a_404(terra_api):
    response = terra_api.post(f"/sessions/{uuid.uuid4()}/scratchpad", {"kind": "question", "content": "x"})
    assert response.status_code == 404


def test_nul_characters_are_a_422_not_a_database_error(terra_api, sol_api, session, book):
    response = terra_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "question", "content": "Why\u0000?"})
    assert response.status_code == 422 and response.json()["field"] == "content"
    ref = terra_api.post(
        f"/sessions/{session.pk}/scratchpad",
        {"kind": "question", "content": "Why?", "source_refs": [{"type": "other", "id": "a\u0000b"}]},
    )
    assert ref.status_code == 422 and ref.json()["field"] == "source_refs.0.id"
    claim = sol_api.post(
        "/claims",
        {
            "scope": "book",
            "scope_id": str(book.pk),
            "subject": "Mara",
            "predicate": "says",
            "value": {"quote": "\u0000"},
            "provenance": "agent-proposed",
        },
    )
    assert claim.status_code == 422 and claim.json()["field"] == "value.quote"
    assert not ScratchpadEntry.objects.exists()
