"""Research is admitted, not assumed (seed 001): proposal, the author's verdict, the decision
log, and the evidence check that refuses unadmitted research."""

from __future__ import annotations

import uuid

import pytest

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from library.evidence import evidence_findings, normalise_id
from library.models import ResearchItem

from .factories import ResearchItemFactory

RESEARCH = {
    "url": "https://tides.example.org/2025/north",
    "title": "Tide tables of the northern coast",
    "excerpt": "High water 06:12.",
    "source_snapshot": "<table>…</table>",
    "claim": "High tide that morning was at 06:12.",
    "citation": "Coastal Almanac 2025, p. 14",
}


def propose(api, book, **overrides):
    return api.post(f"/books/{book.pk}/research", {**RESEARCH, **overrides})


# --- Proposing -------------------------------------------------------------------


@pytest.mark.parametrize("who", ["sol_api", "terra_api", "luna_api", "author_api"])
def test_the_author_and_the_agents_propose_pending_research(who, request, book):
    api = request.getfixturevalue(who)

    response = propose(api, book)

    assert response.status_code == 201, response.content
    body = response.json()
    item = ResearchItem.objects.get(pk=body["id"])
    assert body["status"] == item.status == "pending"
    assert item.proposed_by == ("author" if who == "author_api" else who.removesuffix("_api"))
    approval = Approval.objects.get(pk=body["approval_id"])
    assert approval.kind == "research-admission"
    assert approval.status == "pending"
    assert approval.subject_id == str(item.pk)
    assert approval.book_id == book.pk


def test_an_editor_may_not_propose_research(editor_api, book):
    response = propose(editor_api, book)
    assert response.status_code == 403
    assert "editor lacks discovery:write" in response.json()["detail"]
    assert not ResearchItem.objects.exists()


@pytest.mark.parametrize(
    "url", ["ftp://tides.example.org/x", "javascript:alert(1)", "file:///etc/passwd", "tides.example.org", "https://"]
)
def test_only_http_and_https_urls(sol_api, book, url):
    response = propose(sol_api, book, url=url)
    assert response.status_code == 422
    assert response.json()["field"] == "url"
    assert not ResearchItem.objects.exists()


def test_required_research_fields_are_named(sol_api, book):
    response = propose(sol_api, book, claim="   ")
    assert response.status_code == 422
    assert response.json()["field"] == "claim"
    response = sol_api.post(f"/books/{book.pk}/research", {"url": RESEARCH["url"]})
    assert response.status_code == 422


def test_research_of_a_book_that_is_not_yours_is_not_found(outsider_api, book):
    assert propose(outsider_api, book).status_code == 404
    assert outsider_api.get(f"/books/{book.pk}/research").status_code == 404


def test_a_books_research_is_listed_with_pagination(sol_api, editor_api, book):
    for n in range(3):
        propose(sol_api, book, title=f"Almanac {n}")
    body = editor_api.get(f"/books/{book.pk}/research", limit=2).json()
    assert body["count"] == 3
    assert [i["title"] for i in body["items"]] == ["Almanac 2", "Almanac 1"]


# --- Deciding --------------------------------------------------------------------


@pytest.fixture
def pending(sol_api, book):
    return ResearchItem.objects.get(pk=propose(sol_api, book).json()["id"])


def test_the_author_admits_research_and_the_decision_is_logged(author_api, book, pending):
    response = author_api.post(f"/research/{pending.pk}/admit", {"rationale": "The almanac is authoritative."})

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "admitted"
    pending.refresh_from_db()
    assert pending.status == "admitted"
    assert pending.approval.status == "decided"
    assert pending.approval.verdict == "approve"
    entry = DecisionLogEntry.objects.get(book=book)
    assert entry.decision == "approve"
    assert entry.subject_type == "research"
    assert entry.subject_id == str(pending.pk)
    assert entry.rationale == "The almanac is authoritative."
    assert entry.ratified_by == "author:ada"
    assert entry.detail["research_id"] == str(pending.pk)
    assert decision_log_verify(book).ok


def test_the_author_rejects_research_and_the_decision_is_logged(author_api, book, pending):
    response = author_api.post(f"/research/{pending.pk}/reject", {"rationale": "A blog post, not a source."})

    assert response.status_code == 200
    pending.refresh_from_db()
    assert pending.status == "rejected"
    assert pending.approval.verdict == "reject"
    assert list(DecisionLogEntry.objects.filter(book=book).values_list("decision", flat=True)) == ["reject"]


def test_a_decided_item_is_a_conflict(author_api, book, pending):
    author_api.post(f"/research/{pending.pk}/admit", {"rationale": "Good source."})

    for action in ("admit", "reject"):
        response = author_api.post(f"/research/{pending.pk}/{action}", {"rationale": "Again."})
        assert response.status_code == 409
        assert response.json()["code"] == "not_pending"
    pending.refresh_from_db()
    assert pending.status == "admitted"
    assert DecisionLogEntry.objects.filter(book=book).count() == 1


def test_a_blank_rationale_is_refused(author_api, book, pending):
    response = author_api.post(f"/research/{pending.pk}/admit", {"rationale": "   "})
    assert response.status_code == 422
    assert response.json()["field"] == "rationale"
    pending.refresh_from_db()
    assert pending.status == "pending"
    assert not DecisionLogEntry.objects.filter(book=book).exists()


@pytest.mark.parametrize("who", ["sol_api", "terra_api", "luna_api", "editor_api"])
def test_only_the_author_decides(who, request, book, pending):
    api = request.getfixturevalue(who)
    response = api.post(f"/research/{pending.pk}/admit", {"rationale": "Looks right to me."})
    assert response.status_code == 403
    assert "decision:make" in response.json()["detail"]
    pending.refresh_from_db()
    assert pending.status == "pending"
    assert not DecisionLogEntry.objects.filter(book=book).exists()


def test_research_of_another_book_is_not_found(outsider_api, pending):
    response = outsider_api.post(f"/research/{pending.pk}/admit", {"rationale": "Mine now."})
    assert response.status_code == 404
    assert outsider_api.post(f"/research/{uuid.uuid4()}/admit", {"rationale": "x"}).status_code == 404
    assert outsider_api.post("/research/not-an-id/admit", {"rationale": "x"}).status_code == 422
    pending.refresh_from_db()
    assert pending.status == "pending"


def test_research_written_without_an_approval_is_still_decided_through_one(author_api, book):
    item = ResearchItemFactory(book=book)
    assert item.approval is None

    response = author_api.post(f"/research/{item.pk}/admit", {"rationale": "Checked against the almanac."})

    assert response.status_code == 200
    item.refresh_from_db()
    assert item.status == "admitted"
    assert item.approval.kind == "research-admission"
    assert DecisionLogEntry.objects.get(book=book).approval_id == item.approval_id


def test_the_generic_approval_route_admits_research_too(author_api, book, pending):
    response = author_api.post(
        f"/approvals/{pending.approval_id}/verdict", {"verdict": "approve", "rationale": "Authoritative."}
    )
    assert response.status_code == 200, response.content
    pending.refresh_from_db()
    assert pending.status == "admitted"


# --- The evidence check -------------------------------------------------------------


def codes(findings) -> list[tuple[str, str | None]]:
    return [(f.code, f.research_id) for f in findings]


@pytest.mark.parametrize(("kind", "code"), [("digital", "DIGITAL-RESEARCH-001"), ("forensic", "FORENSIC-RESEARCH-001")])
def test_decisive_digital_or_forensic_evidence_needs_research(book, kind, code):
    findings = evidence_findings(book_id=book.pk, evidence={"kind": kind, "decisive": True, "research_ids": []})
    assert codes(findings) == [(code, None)]
    assert "needs admitted research" in findings[0].message


@pytest.mark.parametrize("kind", ["physical", "testimonial", "documentary"])
def test_other_kinds_of_decisive_evidence_need_no_research(book, kind):
    assert evidence_findings(book_id=book.pk, evidence={"kind": kind, "decisive": True}) == []


def test_non_decisive_digital_evidence_needs_no_research(book):
    assert evidence_findings(book_id=book.pk, evidence={"kind": "digital", "decisive": False}) == []
    assert evidence_findings(book_id=book.pk, evidence=None) == []


@pytest.mark.parametrize("status", ["pending", "rejected"])
def test_citing_research_that_is_not_admitted_names_it(book, status):
    item = ResearchItemFactory(book=book, status="pending")
    if status == "rejected":
        from .factories import ApprovalFactory

        ResearchItem.objects.filter(pk=item.pk).update(
            status="rejected", approval=ApprovalFactory(book=book, kind="research-admission")
        )

    findings = evidence_findings(
        book_id=book.pk, evidence={"kind": "forensic", "decisive": True, "research_ids": [str(item.pk)]}
    )

    assert codes(findings) == [("FORENSIC-RESEARCH-001", str(item.pk))]
    assert str(item.pk) in findings[0].message


def _admitted(book):
    from .factories import ApprovalFactory

    item = ResearchItemFactory(book=book)
    ResearchItem.objects.filter(pk=item.pk).update(
        status="admitted", approval=ApprovalFactory(book=book, kind="research-admission")
    )
    return item


def test_research_admitted_for_another_book_does_not_count(book, other_book):
    elsewhere = _admitted(other_book)
    findings = evidence_findings(
        book_id=book.pk, evidence={"kind": "digital", "decisive": True, "research_ids": [str(elsewhere.pk)]}
    )
    assert codes(findings) == [("DIGITAL-RESEARCH-001", str(elsewhere.pk))]


def test_admitted_research_passes_in_any_id_spelling(book):
    item = _admitted(book)
    for spelling in [str(item.pk), item.pk.hex, str(item.pk).upper(), item.pk.hex.upper(), f" {item.pk} ", item.pk]:
        evidence = {"kind": "digital", "decisive": True, "research_ids": [spelling]}
        refs = [{"type": "research", "id": spelling}]
        assert evidence_findings(book_id=book.pk, evidence=evidence, source_refs=refs) == [], spelling


def test_one_admitted_and_one_pending_names_only_the_pending_one(book):
    admitted, pending = _admitted(book), ResearchItemFactory(book=book)
    findings = evidence_findings(
        book_id=book.pk,
        evidence={"kind": "digital", "decisive": True, "research_ids": [admitted.pk.hex, str(pending.pk)]},
    )
    assert codes(findings) == [("DIGITAL-RESEARCH-001", str(pending.pk))]


def test_research_cited_in_source_refs_must_be_admitted(book):
    pending = ResearchItemFactory(book=book)
    findings = evidence_findings(
        book_id=book.pk, source_refs=[{"type": "research", "id": pending.pk.hex}, {"type": "turn", "id": "x"}]
    )
    assert codes(findings) == [("RESEARCH-ADMISSION-001", str(pending.pk))]


def test_the_same_research_cited_twice_is_named_once(book):
    pending = ResearchItemFactory(book=book)
    findings = evidence_findings(
        book_id=book.pk,
        evidence={"kind": "digital", "decisive": True, "research_ids": [str(pending.pk)]},
        source_refs=[{"type": "research", "id": pending.pk.hex}],
    )
    assert codes(findings) == [("DIGITAL-RESEARCH-001", str(pending.pk))]


def test_unknown_or_malformed_ids_are_named_not_crashed_on(book):
    findings = evidence_findings(
        book_id=book.pk,
        evidence={"kind": "digital", "decisive": True, "research_ids": ["not-a-uuid", str(uuid.uuid4())]},
    )
    assert [f.code for f in findings] == ["DIGITAL-RESEARCH-001", "DIGITAL-RESEARCH-001"]
    assert findings[0].research_id == "not-a-uuid"
    assert evidence_findings(book_id=book.pk, evidence={"kind": ["digital"], "research_ids": 7}) == []
    assert evidence_findings(book_id=book.pk, source_refs="research") == []


def test_normalise_id_makes_hex_and_hyphenated_equal():
    value = uuid.uuid4()
    assert normalise_id(value.hex) == normalise_id(str(value).upper()) == normalise_id(value) == str(value)
    assert normalise_id("  free text ") == "free text"


# --- End to end: promoting a claim ---------------------------------------------------


def _claim(api, book, research_ids):
    response = api.post(
        "/claims",
        {
            "scope": "book",
            "scope_id": str(book.pk),
            "subject": "The tide clock",
            "predicate": "was stopped at",
            "value": "06:12",
            "provenance": "agent-proposed",
            "evidence": {"kind": "digital", "decisive": True, "research_ids": research_ids},
        },
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_promoting_a_claim_on_unadmitted_research_is_refused_until_the_author_admits_it(
    author_api, sol_api, book, pending
):
    claim_id = _claim(sol_api, book, [str(pending.pk)])

    refused = author_api.post(f"/claims/{claim_id}/promote", {"book_id": str(book.pk), "rationale": "Solid."})

    assert refused.status_code == 409, refused.content
    assert refused.json()["code"] == "DIGITAL-RESEARCH-001"
    assert refused.json()["research_id"] == str(pending.pk)
    from discovery.models import KnowledgeClaim

    assert KnowledgeClaim.objects.get(pk=claim_id).status == "proposed"

    author_api.post(f"/research/{pending.pk}/admit", {"rationale": "The almanac is authoritative."})
    promoted = author_api.post(f"/claims/{claim_id}/promote", {"book_id": str(book.pk), "rationale": "Solid."})

    assert promoted.status_code == 200, promoted.content
    assert KnowledgeClaim.objects.get(pk=claim_id).status == "approved"


def test_promoting_decisive_digital_evidence_without_research_is_refused(author_api, sol_api, book):
    claim_id = _claim(sol_api, book, [])
    refused = author_api.post(f"/claims/{claim_id}/promote", {"book_id": str(book.pk), "rationale": "Solid."})
    assert refused.status_code == 409
    assert refused.json()["code"] == "DIGITAL-RESEARCH-001"
