"""Story charters: proposed with a pending approval; only the author resolves them, with a rationale."""

from __future__ import annotations

import pytest

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.models import Chapter, DiscoverySession, StoryCharter

from .discovery_support import assert_forbidden, charter_body, start
from .factories import ApprovalFactory, ResearchItemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(author_api, book):
    return start(author_api, book)


def _propose(api, book, **overrides):
    response = api.post(f"/books/{book.pk}/charters", charter_body(**overrides))
    assert response.status_code == 201, response.content
    return response.json()


def test_proposing_a_charter_opens_a_pending_approval_and_numbers_versions(sol_api, terra_api, book, session):
    first = _propose(sol_api, book)
    second = _propose(terra_api, book, main_thrust="A second reading.")
    assert (first["version"], second["version"]) == (1, 2)
    charter = StoryCharter.objects.get(pk=first["id"])
    assert charter.status == "proposed" and charter.proposed_by == "sol" and charter.session_id == session.pk
    approval = Approval.objects.get(pk=first["approval_id"])
    assert (approval.kind, approval.status, approval.subject_id) == ("story-charter", "pending", str(charter.pk))
    session.refresh_from_db()
    assert session.status == "charter-proposed"


def test_a_charter_needs_a_reader_promise_and_a_protagonist(sol_api, book, session):
    response = sol_api.post(f"/books/{book.pk}/charters", charter_body(reader_promise=[]))
    assert response.status_code == 422 and response.json()["field"] == "reader_promise"
    response = sol_api.post(f"/books/{book.pk}/charters", charter_body(protagonist={}))
    assert response.status_code == 422 and response.json()["field"] == "protagonist"
    assert not StoryCharter.objects.exists() and not Approval.objects.exists()


def test_approving_a_charter_governs_the_book(author_api, sol_api, book, session):
    proposed = _propose(sol_api, book)
    response = author_api.post(
        f"/charters/{proposed['id']}/resolve", {"approved": True, "rationale": "It keeps the fair-play promise."}
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "approved"
    charter = StoryCharter.objects.get(pk=proposed["id"])
    assert charter.status == "approved" and str(charter.approval_id) == proposed["approval_id"]
    approval = Approval.objects.get(pk=proposed["approval_id"])
    assert approval.status == "decided" and approval.verdict == "approve"
    assert approval.rationale == "It keeps the fair-play promise."
    session.refresh_from_db()
    assert session.status == "active"  # the conversation stays open until hand-off
    assert not Chapter.objects.filter(book=book).exists()  # G3 creates Chapter 1, from the decision brief
    entry = DecisionLogEntry.objects.get(book=book)
    assert (entry.decision, entry.subject_type, entry.subject_id) == ("approve", "charter", proposed["id"])
    assert entry.ratified_by == "author:ada" and entry.rationale == "It keeps the fair-play promise."
    assert decision_log_verify(book).ok


def test_a_new_approved_charter_supersedes_the_previous_one_and_keeps_chapters(author_api, sol_api, book, session):
    v1 = _propose(sol_api, book)
    author_api.post(f"/charters/{v1['id']}/resolve", {"approved": True, "rationale": "Good."})
    assert start(author_api, book) == session  # one discovery: the same session carries the revision
    v2 = _propose(sol_api, book, main_thrust="Revised.")
    assert (
        author_api.post(f"/charters/{v2['id']}/resolve", {"approved": True, "rationale": "Better."}).status_code == 200
    )
    assert dict(StoryCharter.objects.filter(book=book).values_list("version", "status")) == {
        1: "superseded",
        2: "approved",
    }
    assert not Chapter.objects.filter(book=book).exists()
    assert DecisionLogEntry.objects.filter(book=book).count() == 2
    assert decision_log_verify(book).ok


def test_rejecting_keeps_the_charter_as_history_and_reopens_the_session(author_api, sol_api, book, session):
    proposed = _propose(sol_api, book)
    response = author_api.post(
        f"/charters/{proposed['id']}/resolve", {"approved": False, "rationale": "The ending is foreclosed."}
    )
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    assert StoryCharter.objects.get(pk=proposed["id"]).status == "rejected"
    session.refresh_from_db()
    assert session.status == "active"
    assert not Chapter.objects.filter(book=book).exists()
    assert DecisionLogEntry.objects.get(book=book).decision == "reject"
    view = author_api.get(f"/books/{book.pk}/discovery").json()
    assert [(c["version"], c["status"]) for c in view["charters"]] == [(1, "rejected")]


def test_re_resolving_is_a_409_and_changes_nothing(author_api, sol_api, book, session):
    proposed = _propose(sol_api, book)
    author_api.post(f"/charters/{proposed['id']}/resolve", {"approved": True, "rationale": "Yes."})
    before = (
        list(StoryCharter.objects.values_list("id", "status", "updated_at")),
        list(Approval.objects.values_list("id", "status", "verdict", "rationale", "updated_at")),
        list(DiscoverySession.objects.values_list("id", "status", "updated_at")),
        DecisionLogEntry.objects.count(),
    )
    for approved in (False, True):
        again = author_api.post(f"/charters/{proposed['id']}/resolve", {"approved": approved, "rationale": "Again."})
        assert again.status_code == 409
    after = (
        list(StoryCharter.objects.values_list("id", "status", "updated_at")),
        list(Approval.objects.values_list("id", "status", "verdict", "rationale", "updated_at")),
        list(DiscoverySession.objects.values_list("id", "status", "updated_at")),
        DecisionLogEntry.objects.count(),
    )
    assert after == before


def test_resolving_needs_a_strict_boolean_and_a_rationale(author_api, sol_api, book, session):
    proposed = _propose(sol_api, book)
    path = f"/charters/{proposed['id']}/resolve"
    as_text = author_api.post(path, {"approved": "false", "rationale": "No."})
    assert as_text.status_code == 422 and as_text.json()["field"] == "approved"
    blank = author_api.post(path, {"approved": True, "rationale": "   "})
    assert blank.status_code == 422 and blank.json()["field"] == "rationale"
    assert StoryCharter.objects.get(pk=proposed["id"]).status == "proposed"
    assert not DecisionLogEntry.objects.exists()


def test_only_the_author_resolves(sol_api, terra_api, editor_api, outsider_api, book, session):
    proposed = _propose(sol_api, book)
    path = f"/charters/{proposed['id']}/resolve"
    body = {"approved": True, "rationale": "I decide."}
    for api, who in ((sol_api, "sol"), (terra_api, "terra"), (editor_api, "editor")):
        assert_forbidden(api.post(path, body), f"{who} lacks decision:make")
    assert outsider_api.post(path, body).status_code == 404
    assert StoryCharter.objects.get(pk=proposed["id"]).status == "proposed"
    assert Approval.objects.get(pk=proposed["approval_id"]).status == "pending"


def test_a_charter_citing_unadmitted_research_is_refused_and_nothing_changes(
    author, author_api, sol_api, book, session
):
    pending = ResearchItemFactory(book=book, status="pending")
    admitted = ResearchItemFactory(book=book, status="admitted", approval=ApprovalFactory(book=book))
    proposed = _propose(
        sol_api,
        book,
        source_refs=[{"type": "research", "id": str(admitted.pk)}, {"type": "research", "id": str(pending.pk)}],
    )
    response = author_api.post(f"/charters/{proposed['id']}/resolve", {"approved": True, "rationale": "Yes."})
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "RESEARCH-ADMISSION-001" and body["research_id"] == str(pending.pk)
    assert [f["research_id"] for f in body["findings"]] == [str(pending.pk)]
    assert StoryCharter.objects.get(pk=proposed["id"]).status == "proposed"
    assert Approval.objects.get(pk=proposed["approval_id"]).status == "pending"
    assert not DecisionLogEntry.objects.exists() and not Chapter.objects.exists()
    # Rejecting needs no admitted research.
    assert (
        author_api.post(f"/charters/{proposed['id']}/resolve", {"approved": False, "rationale": "No."}).status_code
        == 200
    )


def test_an_edited_charter_lapses_its_approval(author_api, sol_api, book, session):
    proposed = _propose(sol_api, book)
    StoryCharter.objects.filter(pk=proposed["id"]).update(content={**charter_body(), "main_thrust": "Swapped."})
    response = author_api.post(f"/charters/{proposed['id']}/resolve", {"approved": True, "rationale": "Yes."})
    assert response.status_code == 409
    assert Approval.objects.get(pk=proposed["approval_id"]).status == "superseded"
    assert StoryCharter.objects.get(pk=proposed["id"]).status == "proposed"
