"""Knowledge claims enter as proposals; promotion and rejection are the author's, logged decisions."""

from __future__ import annotations

import pytest

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from approvals.subjects import approval_is_current
from discovery.models import KnowledgeBase, KnowledgeClaim

from .discovery_support import assert_forbidden, start
from .factories import ApprovalFactory, BookFactory, KnowledgeClaimFactory, ResearchItemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(author_api, book):
    return start(author_api, book)


def claim_body(book, **overrides) -> dict:
    return {
        "scope": "book",
        "scope_id": str(book.pk),
        "subject": "Mara",
        "predicate": "fears",
        "value": {"what": "deep water", "since": 1998},
        "provenance": "agent-proposed",
        "source_refs": [],
        **overrides,
    }


def _propose(api, body) -> dict:
    response = api.post("/claims", body)
    assert response.status_code == 201, response.content
    return response.json()


def test_a_claim_enters_as_proposed_in_the_books_base(sol_api, book, session):
    claim = _propose(sol_api, claim_body(book))
    assert claim["status"] == "proposed" and claim["value"] == {"what": "deep water", "since": 1998}
    stored = KnowledgeClaim.objects.get(pk=claim["id"])
    assert (stored.base.scope, stored.base.owner_id, stored.proposed_by) == ("book", str(book.pk), "sol")


def test_asking_for_an_approved_claim_is_a_422_saying_so(sol_api, book, session):
    response = sol_api.post("/claims", claim_body(book, status="approved"))
    assert response.status_code == 422
    assert response.json()["field"] == "status" and "proposed" in response.json()["detail"]
    assert not KnowledgeClaim.objects.exists()


def test_literary_guidance_is_curated_by_staff_so_no_book_proposes_claims_to_it(sol_api, author_api, book, session):
    literary = claim_body(book, scope="literary", scope_id="global", provenance="agent-proposed")
    for api in (sol_api, author_api):
        refused = api.post("/claims", literary)
        assert refused.status_code == 403 and refused.json()["code"] == "curated_by_staff"
    assert not KnowledgeClaim.objects.filter(base__scope="literary").exists()
    series = _propose(sol_api, claim_body(book, scope="series", scope_id=str(book.series_id)))
    assert KnowledgeClaim.objects.get(pk=series["id"]).base.scope == "series"


def test_proposing_to_a_base_none_of_your_books_reaches_is_a_404(sol_api, other_book, session):
    response = sol_api.post("/claims", claim_body(other_book))
    assert response.status_code == 404
    assert not KnowledgeClaim.objects.exists()


def test_terra_luna_and_editors_do_not_propose_canon(terra_api, luna_api, editor_api, book, session):
    for api, who in ((terra_api, "terra"), (luna_api, "luna"), (editor_api, "editor")):
        assert_forbidden(api.post("/claims", claim_body(book)), f"{who} lacks canon:propose")
    assert not KnowledgeClaim.objects.exists()


def test_sol_requests_approval_and_the_author_promotes_through_it(author_api, sol_api, book, session):
    claim = _propose(sol_api, claim_body(book))
    request = sol_api.post(f"/claims/{claim['id']}/request-approval", {"book_id": str(book.pk), "note": "Canon?"})
    assert request.status_code == 201
    again = sol_api.post(f"/claims/{claim['id']}/request-approval", {"book_id": str(book.pk), "note": "Again"})
    assert again.status_code == 409
    promoted = author_api.post(
        f"/claims/{claim['id']}/promote", {"book_id": str(book.pk), "rationale": "Established in chapter one."}
    )
    assert promoted.status_code == 200, promoted.content
    assert promoted.json()["approval_id"] == request.json()["approval_id"]
    stored = KnowledgeClaim.objects.get(pk=claim["id"])
    assert stored.status == "approved" and str(stored.approval_id) == request.json()["approval_id"]
    approval = Approval.objects.get(pk=stored.approval_id)
    assert (approval.status, approval.verdict, approval.rationale) == (
        "decided",
        "approve",
        "Established in chapter one.",
    )
    entry = DecisionLogEntry.objects.get(book=book)
    assert (entry.subject_type, entry.subject_id, entry.decision) == ("claim", claim["id"], "approve")
    assert decision_log_verify(book).ok


def test_promoting_without_a_request_records_an_approval_and_twice_is_a_409(author_api, sol_api, book, session):
    claim = _propose(sol_api, claim_body(book))
    first = author_api.post(f"/claims/{claim['id']}/promote", {"book_id": str(book.pk), "rationale": "True."})
    assert first.status_code == 200
    approval = Approval.objects.get(pk=first.json()["approval_id"])
    assert approval.kind == "canon-promotion" and approval.requested_by_role == "author"
    second = author_api.post(f"/claims/{claim['id']}/promote", {"book_id": str(book.pk), "rationale": "True."})
    assert second.status_code == 409
    rejected_late = author_api.post(f"/claims/{claim['id']}/reject", {"book_id": str(book.pk), "rationale": "No."})
    assert rejected_late.status_code == 409
    assert KnowledgeClaim.objects.get(pk=claim["id"]).status == "approved"
    assert Approval.objects.count() == 1 and DecisionLogEntry.objects.count() == 1


def test_rejecting_a_claim_keeps_it_as_history(author_api, sol_api, book, session):
    claim = _propose(sol_api, claim_body(book))
    response = author_api.post(f"/claims/{claim['id']}/reject", {"book_id": str(book.pk), "rationale": "Off-canon."})
    assert response.status_code == 200 and response.json()["claim_status"] == "rejected"
    stored = KnowledgeClaim.objects.get(pk=claim["id"])
    assert stored.status == "rejected" and stored.approval_id is not None
    assert DecisionLogEntry.objects.get(book=book).decision == "reject"


def test_only_the_author_decides_and_needs_a_rationale(sol_api, terra_api, editor_api, author_api, book, session):
    claim = _propose(sol_api, claim_body(book))
    body = {"book_id": str(book.pk), "rationale": "Because."}
    for api, who in ((sol_api, "sol"), (terra_api, "terra"), (editor_api, "editor")):
        assert_forbidden(api.post(f"/claims/{claim['id']}/promote", body), f"{who} lacks decision:make")
    blank = author_api.post(f"/claims/{claim['id']}/promote", {"book_id": str(book.pk), "rationale": ""})
    assert blank.status_code == 422 and blank.json()["field"] == "rationale"
    assert KnowledgeClaim.objects.get(pk=claim["id"]).status == "proposed"
    assert not Approval.objects.exists()


def test_only_sol_requests_approval(author_api, terra_api, sol_api, book, session):
    claim = _propose(sol_api, claim_body(book))
    body = {"book_id": str(book.pk), "note": ""}
    assert_forbidden(terra_api.post(f"/claims/{claim['id']}/request-approval", body), "terra lacks approval:request")
    assert_forbidden(author_api.post(f"/claims/{claim['id']}/request-approval", body), "author lacks approval:request")
    assert not Approval.objects.exists()


def test_a_claim_outside_the_books_bases_is_409_or_404(author, author_api, sol_api, book, session):
    second_book = BookFactory(owner=author, series=None)
    start(author_api, second_book)
    other_claim = _propose(sol_api, claim_body(second_book))
    response = author_api.post(f"/claims/{other_claim['id']}/promote", {"book_id": str(book.pk), "rationale": "x"})
    assert response.status_code == 409
    stranger = KnowledgeClaimFactory(base=KnowledgeBase.objects.create(scope="book", owner_id="nobody", name="x"))
    response = author_api.post(f"/claims/{stranger.pk}/promote", {"book_id": str(book.pk), "rationale": "x"})
    assert response.status_code == 404
    assert set(KnowledgeClaim.objects.values_list("status", flat=True)) == {"proposed"}


def test_promotion_with_unadmitted_research_is_refused_with_its_id(author_api, sol_api, book, session):
    pending = ResearchItemFactory(book=book, status="pending")
    admitted = ResearchItemFactory(book=book, status="admitted", approval=ApprovalFactory(book=book))
    claim = _propose(
        sol_api,
        claim_body(
            book,
            evidence={"kind": "digital", "decisive": True, "research_ids": [str(admitted.pk), str(pending.pk)]},
        ),
    )
    response = author_api.post(f"/claims/{claim['id']}/promote", {"book_id": str(book.pk), "rationale": "Proven."})
    assert response.status_code == 409
    assert response.json()["code"] == "DIGITAL-RESEARCH-001"
    assert response.json()["research_id"] == str(pending.pk)
    assert KnowledgeClaim.objects.get(pk=claim["id"]).status == "proposed"
    assert not Approval.objects.filter(kind="canon-promotion").exists()
    assert not DecisionLogEntry.objects.exists()


def test_a_claim_with_only_admitted_research_is_promoted(author_api, sol_api, book, session):
    admitted = ResearchItemFactory(book=book, status="admitted", approval=ApprovalFactory(book=book))
    claim = _propose(
        sol_api,
        claim_body(
            book,
            evidence={"kind": "forensic", "decisive": True, "research_ids": [str(admitted.pk)]},
            source_refs=[{"type": "research", "id": str(admitted.pk)}],
        ),
    )
    response = author_api.post(f"/claims/{claim['id']}/promote", {"book_id": str(book.pk), "rationale": "Proven."})
    assert response.status_code == 200
    assert KnowledgeClaim.objects.get(pk=claim["id"]).status == "approved"


def test_promoting_a_series_claim_in_one_book_lapses_the_other_books_request(author, author_api, sol_api, book):
    sibling = BookFactory(owner=author, series=book.series)
    start(author_api, book)
    start(author_api, sibling)
    claim = _propose(sol_api, claim_body(book, scope="series", scope_id=str(book.series_id)))
    sol_api.post(f"/claims/{claim['id']}/request-approval", {"book_id": str(sibling.pk), "note": ""})
    assert (
        author_api.post(f"/claims/{claim['id']}/promote", {"book_id": str(book.pk), "rationale": "Yes."}).status_code
        == 200
    )
    pending = Approval.objects.get(book=sibling)
    assert not approval_is_current(pending)
