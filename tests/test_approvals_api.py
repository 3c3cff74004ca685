"""Approvals through the API: listing, the detail view, and the one verdict route (invariant 3).

Subjects are real: charters proposed through the discovery service, research through
the library service; every verdict goes through ``approvals.services.approval_decide``.
"""

from __future__ import annotations

import uuid

import pytest

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from approvals.services import approval_decide
from approvals.subjects import HANDLERS
from discovery.models import StoryCharter
from library.models import ResearchItem
from novelgraph.core.auth import principal_for_user
from novelgraph.core.errors import Conflict, Forbidden, Invalid

from .approval_subjects import propose_charter, refs_to, sources_of
from .factories import BookFactory

RATIONALE = "The murder plot gives the keeper's lies a cost."


@pytest.fixture
def charter(book):
    return propose_charter(book)


@pytest.fixture
def approval(charter):
    return Approval.objects.get(pk=charter.approval_id)


def verdict(api, approval, **body):
    return api.post(f"/approvals/{approval.pk}/verdict", body)


def nothing_written(approval, charter=None):
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING and approval.verdict is None and approval.rationale == ""
    assert not DecisionLogEntry.objects.filter(book=approval.book).exists()
    if charter is not None:
        charter.refresh_from_db()
        assert charter.status == StoryCharter.Status.PROPOSED


# --- Listing ---------------------------------------------------------------


def test_the_author_lists_her_books_approvals_newest_first(book, author_api, charter, approval):
    later = propose_charter(book, thrust="A keeper hides a murder she committed.")
    response = author_api.get("/approvals")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert [item["id"] for item in body["items"]] == [str(later.approval_id), str(approval.pk)]
    item = body["items"][1]
    assert item["kind"] == "story-charter" and item["status"] == "pending"
    assert item["requested_by_role"] == "sol" and item["book_id"] == str(book.pk)
    assert item["summary"].startswith("Story charter v1")


def test_the_list_filters_by_book_and_status(book, author, author_api, approval):
    second_book = BookFactory(owner=author)
    propose_charter(second_book)
    assert author_api.get("/approvals").json()["count"] == 2
    only = author_api.get("/approvals", book_id=str(book.pk)).json()
    assert [item["id"] for item in only["items"]] == [str(approval.pk)]
    assert author_api.get("/approvals", status="decided").json()["count"] == 0
    assert author_api.get("/approvals", status="pending", book_id=str(second_book.pk)).json()["count"] == 1
    bad = author_api.get("/approvals", status="maybe")
    assert bad.status_code == 422 and bad.json()["field"] == "status"


def test_agents_read_their_books_approvals_and_strangers_see_none(
    book, approval, luna_api, outsider_api, editor_api, anonymous_api
):
    assert luna_api.get("/approvals").json()["count"] == 1
    assert editor_api.get("/approvals").json()["count"] == 1
    assert outsider_api.get("/approvals").json()["count"] == 0
    assert outsider_api.get("/approvals", book_id=str(book.pk)).status_code == 404
    assert anonymous_api.get("/approvals").status_code == 401


# --- Detail -------------------------------------------------------------------


def test_the_detail_shows_the_proposal_its_sources_resolved_and_that_it_is_current(book, author_api):
    sources = sources_of(book)
    charter = propose_charter(book, source_refs=refs_to(sources))
    response = author_api.get(f"/approvals/{charter.approval_id}")
    assert response.status_code == 200
    body = response.json()
    assert body["kind"] == "story-charter" and body["requested_by_role"] == "sol"
    assert body["current"] is True and body["status"] == "pending"
    assert body["verdicts"] == ["approve", "reject"]
    assert body["proposal"]["title"] == "Story charter v1"
    assert body["proposal"]["content"]["main_thrust"] == "A keeper must prove a drowning was murder."
    assert body["log_entry"] is None
    resolved = {ref["type"]: ref for ref in body["source_refs"]}
    assert set(resolved) == {"turn", "entry", "chunk", "research"}
    assert all(ref["exists"] for ref in resolved.values())
    assert resolved["entry"]["detail"]["content"] == "The tide tables disagree."
    assert resolved["turn"]["detail"]["content"] == "Mara lies to everyone, even to herself."
    assert resolved["chunk"]["detail"]["citation"] == "Craft notes, fair play"
    assert resolved["research"]["detail"]["status"] == "pending"


def test_the_detail_of_a_foreign_or_unknown_approval_is_not_found(approval, outsider_api, author_api):
    assert outsider_api.get(f"/approvals/{approval.pk}").status_code == 404
    assert author_api.get(f"/approvals/{uuid.uuid4()}").status_code == 404
    malformed = author_api.get("/approvals/not-an-id")
    assert malformed.status_code == 422 and malformed.json()["field"] == "approval_id"


# --- The verdict route: who may decide -------------------------------------------


@pytest.mark.parametrize("agent", ["sol_api", "terra_api", "luna_api"])
def test_an_agent_key_never_decides_and_nothing_is_written(agent, request, charter, approval):
    api = request.getfixturevalue(agent)
    response = verdict(api, approval, verdict="approve", rationale=RATIONALE)
    assert response.status_code == 403
    assert "decision:make" in response.json()["detail"]
    nothing_written(approval, charter)


def test_an_editor_may_not_decide_and_a_stranger_does_not_see_it(charter, approval, editor_api, outsider_api):
    refused = verdict(editor_api, approval, verdict="approve", rationale=RATIONALE)
    assert refused.status_code == 403 and "decision:make" in refused.json()["detail"]
    assert verdict(outsider_api, approval, verdict="approve", rationale=RATIONALE).status_code == 404
    nothing_written(approval, charter)


# --- The verdict route: what a verdict needs -------------------------------------


@pytest.mark.parametrize("rationale", ["", "   \n\t "])
def test_a_blank_rationale_is_refused_and_nothing_changes(rationale, charter, approval, author_api):
    response = verdict(author_api, approval, verdict="approve", rationale=rationale)
    assert response.status_code == 422 and response.json()["field"] == "rationale"
    nothing_written(approval, charter)


def test_a_missing_rationale_or_verdict_is_a_422_naming_the_field(charter, approval, author_api):
    assert verdict(author_api, approval, verdict="approve").json()["field"] == "rationale"
    assert verdict(author_api, approval, rationale=RATIONALE).json()["field"] == "verdict"
    too_long = verdict(author_api, approval, verdict="approve", rationale="x" * 10_001)
    assert too_long.status_code == 422 and too_long.json()["field"] == "rationale"
    nothing_written(approval, charter)


@pytest.mark.parametrize("word", ["yes", "APPROVE", "approved", ""])
def test_an_unknown_verdict_is_a_422(word, charter, approval, author_api):
    response = verdict(author_api, approval, verdict=word, rationale=RATIONALE)
    assert response.status_code == 422 and response.json()["field"] == "verdict"
    nothing_written(approval, charter)


@pytest.mark.parametrize(
    "word", ["approve-with-constraint", "redirect", "explore-alternatives", "abandon", "park", "extend"]
)
def test_a_charter_takes_only_approve_or_reject(word, charter, approval, author_api):
    response = verdict(author_api, approval, verdict=word, rationale=RATIONALE, constraint="Only in act one.")
    assert response.status_code == 422
    body = response.json()
    assert body["field"] == "verdict" and "approve, reject" in body["detail"]
    nothing_written(approval, charter)


def test_the_handlers_declare_which_verdicts_each_kind_accepts(db):
    assert HANDLERS["story-charter"].verdicts == {"approve", "reject"}
    assert HANDLERS["canon-promotion"].verdicts == {"approve", "reject"}
    assert HANDLERS["research-admission"].verdicts == {"approve", "reject"}


# --- The verdict route: deciding -----------------------------------------------


def test_the_author_approves_a_charter_and_one_log_row_records_it(book, charter, approval, author_api):
    response = verdict(author_api, approval, verdict="approve", rationale=f"  {RATIONALE}  ")
    assert response.status_code == 200
    body = response.json()
    assert body["approval"]["status"] == "decided" and body["approval"]["verdict"] == "approve"
    assert body["approval"]["decided_by"] == "ada" and body["approval"]["rationale"] == RATIONALE
    entry = body["entry"]
    assert entry["sequence"] == 1 and entry["decision"] == "approve" and entry["rationale"] == RATIONALE
    assert entry["ratified_by"] == "author:ada" and entry["approval_id"] == str(approval.pk)
    assert entry["subject_type"] == "charter" and entry["subject_id"] == str(charter.pk)
    assert entry["detail"]["charter_version"] == 1

    charter.refresh_from_db()
    approval.refresh_from_db()
    assert charter.status == StoryCharter.Status.APPROVED
    assert approval.status == Approval.Status.DECIDED and approval.decided_at is not None
    assert DecisionLogEntry.objects.filter(book=book).count() == 1
    assert decision_log_verify(book).ok

    detail = author_api.get(f"/approvals/{approval.pk}").json()
    assert detail["log_entry"]["hash"] == entry["hash"]


def test_deciding_twice_is_a_409_and_changes_nothing(book, charter, approval, author_api):
    assert verdict(author_api, approval, verdict="approve", rationale=RATIONALE).status_code == 200
    again = verdict(author_api, approval, verdict="reject", rationale="Second thoughts.")
    assert again.status_code == 409 and again.json()["code"] == "not_pending"
    approval.refresh_from_db()
    charter.refresh_from_db()
    assert approval.verdict == "approve" and charter.status == StoryCharter.Status.APPROVED
    assert DecisionLogEntry.objects.filter(book=book).count() == 1


def test_a_rejected_charter_stays_in_history_and_in_the_log(book, charter, approval, author_api):
    response = verdict(author_api, approval, verdict="reject", rationale="The thrust is too quiet for a mystery.")
    assert response.status_code == 200
    charter.refresh_from_db()
    assert charter.status == StoryCharter.Status.REJECTED
    assert StoryCharter.objects.filter(pk=charter.pk).exists()
    log = author_api.get(f"/books/{book.pk}/decision-log").json()
    assert [(e["decision"], e["subject_id"]) for e in log["items"]] == [("reject", str(charter.pk))]
    assert author_api.get("/approvals", status="decided").json()["items"][0]["verdict"] == "reject"


def test_research_is_admitted_through_the_generic_route(book, author_api):
    sources = sources_of(book)
    research = sources["research"]
    response = verdict(author_api, research.approval, verdict="approve", rationale="The almanac is primary.")
    assert response.status_code == 200 and response.json()["entry"]["decision"] == "approve"
    research.refresh_from_db()
    assert research.status == ResearchItem.Status.ADMITTED


# --- Lapse: a changed subject supersedes its approval ---------------------------


def test_a_changed_charter_lapses_its_approval_409_superseded(book, charter, approval, author_api):
    StoryCharter.objects.filter(pk=charter.pk).update(content=dict(charter.content, main_thrust="Edited later."))
    detail = author_api.get(f"/approvals/{approval.pk}").json()
    assert detail["current"] is False and detail["status"] == "pending"

    response = verdict(author_api, approval, verdict="approve", rationale=RATIONALE)
    assert response.status_code == 409 and response.json()["code"] == "superseded"
    approval.refresh_from_db()
    charter.refresh_from_db()
    assert approval.status == Approval.Status.SUPERSEDED and approval.verdict is None
    assert charter.status == StoryCharter.Status.PROPOSED
    assert not DecisionLogEntry.objects.filter(book=book).exists()
    listed = author_api.get("/approvals", status="superseded").json()
    assert [item["id"] for item in listed["items"]] == [str(approval.pk)]
    again = verdict(author_api, approval, verdict="approve", rationale=RATIONALE)
    assert again.status_code == 409 and again.json()["code"] == "not_pending"


# --- The service is the same for every caller ------------------------------------


def test_the_service_refuses_agents_blank_rationales_and_stale_decisions(book, author, charter, approval):
    from discovery.access import book_access
    from novelgraph.core.auth import Principal

    with pytest.raises(Forbidden):
        approval_decide(
            access=book_access(Principal(user=author, key_role="sol"), book),
            approval_id=approval.pk,
            verdict="approve",
            rationale=RATIONALE,
        )
    me = book_access(principal_for_user(author), book)
    with pytest.raises(Invalid):
        approval_decide(access=me, approval_id=approval.pk, verdict="approve", rationale="")
    StoryCharter.objects.filter(pk=charter.pk).update(version=9)
    with pytest.raises(Conflict) as lapsed:
        approval_decide(access=me, approval_id=approval.pk, verdict="approve", rationale=RATIONALE)
    assert lapsed.value.code == "superseded"
    assert Approval.objects.get(pk=approval.pk).status == Approval.Status.SUPERSEDED


# --- Gate approvals: the seven loop verdicts through the same route --------------

LOOP_VERDICTS = [
    ("approve", ""),
    ("approve-with-constraint", "Keep the case inside one tide cycle."),
    ("redirect", "Steer towards the harbour master's motive."),
    ("explore-alternatives", ""),
    ("abandon", ""),
    ("park", ""),
    ("extend", "round_cap=10"),
]


@pytest.fixture
def gate_approval(book, sol_api):
    from .loop_scenes import ask_gate, start_discovery, url

    start_discovery(book)  # the loop begins with the discovery
    assert sol_api.get(url(book)).status_code == 200
    response = ask_gate(sol_api, book, "G0")
    assert response.status_code == 201, response.json()
    return Approval.objects.get(pk=response.json()["approval_id"])


@pytest.mark.parametrize(("word", "text"), LOOP_VERDICTS, ids=[v for v, _ in LOOP_VERDICTS])
def test_each_loop_verdict_on_a_gate_appends_exactly_one_log_row(word, text, book, gate_approval, author_api):
    before = DecisionLogEntry.objects.filter(book=book).count()
    response = verdict(author_api, gate_approval, verdict=word, rationale="Seen, weighed, decided.", constraint=text)
    assert response.status_code == 200, response.json()
    rows = DecisionLogEntry.objects.filter(book=book).order_by("sequence")
    assert rows.count() == before + 1
    row = rows.last()
    assert row.decision == word and row.gate == "G0" and row.approval_id == gate_approval.pk
    assert row.ratified_by == "author:ada" and row.rationale == "Seen, weighed, decided."
    if text:
        assert row.detail["constraint"] == text
    gate_approval.refresh_from_db()
    assert gate_approval.status == Approval.Status.DECIDED and gate_approval.verdict == word
    assert decision_log_verify(book).ok


@pytest.mark.parametrize("word", ["approve-with-constraint", "redirect", "extend"])
def test_a_verdict_that_needs_its_text_is_a_422_without_it(word, book, gate_approval, author_api):
    response = verdict(author_api, gate_approval, verdict=word, rationale="Needs a bound.", constraint="  ")
    assert response.status_code == 422 and response.json()["field"] == "constraint"
    nothing_written(gate_approval)


def test_reject_is_not_a_gate_verdict(book, gate_approval, author_api):
    response = verdict(author_api, gate_approval, verdict="reject", rationale="No.")
    assert response.status_code == 422 and response.json()["field"] == "verdict"
    nothing_written(gate_approval)


def test_a_gate_approval_lists_the_seven_loop_verdicts(book, gate_approval, author_api, sol_api):
    detail = author_api.get(f"/approvals/{gate_approval.pk}").json()
    assert detail["verdicts"] == [v for v, _ in LOOP_VERDICTS]
    assert detail["gate"] == "G0" and detail["kind"] == "gate" and detail["current"] is True
    assert detail["proposal"]["card"]["gate"] == "G0"
    refused = verdict(sol_api, gate_approval, verdict="approve", rationale="I say so.")
    assert refused.status_code == 403 and "decision:make" in refused.json()["detail"]
    nothing_written(gate_approval)


@pytest.mark.parametrize("field", ["rationale", "constraint"])
def test_a_nul_character_is_a_422_not_a_server_error(field, charter, approval, author_api):
    body = {"verdict": "approve", "rationale": "Fine.", "constraint": ""}
    body[field] = "Fine.\x00"
    response = verdict(author_api, approval, **body)
    assert response.status_code == 422 and response.json()["field"] == field
    nothing_written(approval, charter)
