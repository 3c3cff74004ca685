"""Handoffs: a brief with a dossier snapshot for the target role, and a result that becomes scratchpad entries."""

from __future__ import annotations

import pytest

from discovery.models import ContextDossier, Handoff, KnowledgeBase, ScratchpadEntry

from .discovery_support import assert_forbidden, start
from .factories import KnowledgeClaimFactory, TurnFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(author_api, book):
    return start(author_api, book)


def _brief(**overrides) -> dict:
    return {
        "to_role": "luna",
        "decision": "Which named places recur in the author's turns?",
        "allowed_sources": [],
        "statements": [
            {"text": "The lighthouse is on the north shore.", "status": "fact"},
            {"text": "The harbour may be the crime scene.", "status": "inference"},
        ],
        **overrides,
    }


def test_sol_hands_off_to_luna_with_a_snapshot_of_lunas_dossier(sol_api, book, session):
    turn = TurnFactory(session=session, ordinal=1)
    response = sol_api.post(
        f"/books/{book.pk}/handoffs", _brief(allowed_sources=[{"type": "turn", "id": str(turn.pk)}])
    )
    assert response.status_code == 201, response.content
    handoff = Handoff.objects.get(pk=response.json()["id"])
    assert (handoff.from_role, handoff.to_role, handoff.status) == ("sol", "luna", "open")
    assert handoff.statements[1] == {"text": "The harbour may be the crime scene.", "status": "inference"}
    assert handoff.allowed_sources == [{"type": "turn", "id": str(turn.pk)}]
    assert handoff.dossier.agent_role == "luna" and handoff.dossier.session_id == session.pk


def test_luna_cannot_be_handed_series_canon(sol_api, book, session):
    series_base = KnowledgeBase.objects.get(scope="series", owner_id=str(book.series_id))
    claim = KnowledgeClaimFactory(base=series_base)
    response = sol_api.post(
        f"/books/{book.pk}/handoffs", _brief(allowed_sources=[{"type": "claim", "id": str(claim.pk)}])
    )
    assert response.status_code == 422 and response.json()["field"] == "allowed_sources[0]"
    assert "luna" in response.json()["detail"]
    ok = sol_api.post(
        f"/books/{book.pk}/handoffs",
        _brief(to_role="terra", allowed_sources=[{"type": "claim", "id": str(claim.pk)}]),
    )
    assert ok.status_code == 201


def test_only_sol_or_the_author_hands_off_and_only_to_terra_or_luna(
    author_api, terra_api, luna_api, editor_api, sol_api, book, session
):
    assert author_api.post(f"/books/{book.pk}/handoffs", _brief(to_role="terra")).status_code == 201
    for api, who in ((terra_api, "terra"), (luna_api, "luna"), (editor_api, "editor")):
        assert_forbidden(api.post(f"/books/{book.pk}/handoffs", _brief()), f"{who} lacks discovery:write")
    assert sol_api.post(f"/books/{book.pk}/handoffs", _brief(to_role="sol")).status_code == 422
    bad_status = _brief(statements=[{"text": "x", "status": "rumour"}])
    assert sol_api.post(f"/books/{book.pk}/handoffs", bad_status).status_code == 422
    assert Handoff.objects.count() == 1


def test_the_dossier_snapshot_is_taken_when_the_handoff_is_made(sol_api, terra_api, book, session):
    terra_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "hypothesis", "content": "Before."})
    handoff = sol_api.post(f"/books/{book.pk}/handoffs", _brief()).json()
    terra_api.post(f"/sessions/{session.pk}/scratchpad", {"kind": "hypothesis", "content": "After."})
    dossier = ContextDossier.objects.get(pk=handoff["dossier_id"])
    assert [e["content"] for e in dossier.content["scratchpad"]] == ["Before."]


def test_the_target_role_returns_a_result_once_and_each_item_becomes_an_entry(sol_api, luna_api, book, session):
    turn = TurnFactory(session=session, ordinal=1)
    handoff = sol_api.post(
        f"/books/{book.pk}/handoffs", _brief(allowed_sources=[{"type": "turn", "id": str(turn.pk)}])
    ).json()
    result = {
        "facts": [{"text": "Turn 1 names the north shore.", "source_refs": [{"type": "turn", "id": str(turn.pk)}]}],
        "inferences": [{"text": "The shore matters to her.", "source_refs": [], "confidence": 0.6}],
        "options": [{"text": "Move the crime to the harbour.", "source_refs": []}],
        "questions": [{"text": "Is the lighthouse still lit?", "source_refs": []}],
    }
    response = luna_api.post(f"/handoffs/{handoff['id']}/result", result)
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "returned"
    entries = list(ScratchpadEntry.objects.filter(handoff_id=handoff["id"]).order_by("sequence"))
    assert [(e.kind, e.agent_role) for e in entries] == [
        ("observation", "luna"),
        ("hypothesis", "luna"),
        ("alternative", "luna"),
        ("question", "luna"),
    ]
    assert entries[0].source_refs == [{"type": "turn", "id": str(turn.pk)}]
    assert entries[1].confidence == 0.6
    assert [e["id"] for e in response.json()["result_entries"]] == [str(e.pk) for e in entries]
    again = luna_api.post(f"/handoffs/{handoff['id']}/result", result)
    assert again.status_code == 409
    assert ScratchpadEntry.objects.filter(handoff_id=handoff["id"]).count() == 4
    shown = sol_api.get(f"/handoffs/{handoff['id']}").json()
    assert shown["status"] == "returned" and len(shown["result_entries"]) == 4


def test_only_the_target_role_returns_the_result(sol_api, terra_api, author_api, luna_api, book, session):
    handoff = sol_api.post(f"/books/{book.pk}/handoffs", _brief()).json()
    result = {"facts": [{"text": "x", "source_refs": []}]}
    for api in (terra_api, sol_api, author_api):
        response = api.post(f"/handoffs/{handoff['id']}/result", result)
        assert response.status_code == 403 and "only luna" in response.json()["detail"]
    empty = luna_api.post(f"/handoffs/{handoff['id']}/result", {})
    assert empty.status_code == 422
    bad_ref = luna_api.post(
        f"/handoffs/{handoff['id']}/result",
        {"facts": [{"text": "x", "source_refs": [{"type": "turn", "id": str(session.pk)}]}]},
    )
    assert bad_ref.status_code == 422 and bad_ref.json()["field"] == "facts[0].source_refs[0]"
    assert not ScratchpadEntry.objects.exists()
    assert Handoff.objects.get(pk=handoff["id"]).status == "open"
