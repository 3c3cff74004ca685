"""Gates G0 to G3: who passes them, what refuses them, and no jumping ahead."""

from __future__ import annotations

import pytest

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.loop.models import BlackboardArtifact, LoopMeta, OpenQuestion, OptionCard, PlanNode
from discovery.loop.services import loop_ensure
from discovery.models import Chapter

from .loop_scenes import (
    ask_gate,
    at_g3,
    decide,
    pass_gate,
    reach_g2,
    saturate,
    started_book,  # noqa: F401 (the book, its discovery started)
    url,
)

pytestmark = pytest.mark.django_db


def test_a_new_loop_starts_at_g0_with_a_draft_hypothesis_root_and_empty_queues(book, author_api):
    r = author_api.get(url(book))
    assert r.status_code == 200
    body = r.json()
    assert body["meta"]["gate"] == "G0"
    assert body["meta"]["status"] == "working"
    assert body["meta"]["schema_version"] == "0.1"
    assert body["pending_card"] is None
    root = PlanNode.objects.get(book=book, is_root=True)
    assert (root.lifecycle, root.validation_status, root.schema_version) == ("draft", "hypothesis", "0.1")
    assert not OpenQuestion.objects.filter(book=book).exists()
    assert not BlackboardArtifact.objects.filter(book=book).exists()


def test_loop_ensure_is_idempotent(book):
    first = loop_ensure(book=book)
    second = loop_ensure(book=book)
    assert first.pk == second.pk
    assert PlanNode.objects.filter(book=book, is_root=True).count() == 1


def test_g0_raises_an_option_card_and_waits_for_the_author(book, sol_api, author_api):
    r = ask_gate(sol_api, book, "G0", summary="the value seed: why this book exists")
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body["outcome"] == "awaiting-human"
    approval = Approval.objects.get(pk=body["approval_id"])
    assert (approval.kind, approval.status, approval.gate) == ("gate", "pending", "G0")
    meta = LoopMeta.objects.get(book=book)
    assert (meta.gate, meta.status) == ("G0", "awaiting-human")
    assert author_api.get(url(book)).json()["pending_card"]["approval_id"] == body["approval_id"]
    # Nothing advances until the verdict arrives.
    assert ask_gate(sol_api, book, "G0").status_code == 409
    d = decide(author_api, book, body["approval_id"], "approve")
    assert d.status_code == 200, d.json()
    meta.refresh_from_db()
    assert (meta.gate, meta.status) == ("G1", "working")


def test_no_jumping_ahead_any_gate_but_the_current_one_is_409(book, sol_api):
    for gate in ("G1", "G1.5", "G2", "G3"):
        r = ask_gate(sol_api, book, gate)
        assert r.status_code == 409
        assert r.json()["code"] == "not_current_gate"
    assert not OptionCard.objects.filter(book=book).exists()
    assert ask_gate(sol_api, book, "G9").status_code == 422


def test_g1_passes_automatically_with_a_controller_row(book, sol_api, author_api):
    pass_gate(sol_api, author_api, book, "G0")
    r = ask_gate(sol_api, book, "G1", summary="genre and series fit")
    assert r.status_code == 200, r.json()
    assert r.json()["outcome"] == "passed"
    assert LoopMeta.objects.get(book=book).gate == "G1.5"
    row = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    assert (row.gate, row.decision, row.ratified_by, row.ratified_by_user) == ("G1", "approve", "controller:sol", None)
    assert decision_log_verify(book).ok


@pytest.mark.parametrize("trigger", ["one-way-door", "value-conflict", "canon-conflict"])
def test_g1_waits_for_the_author_when_a_risk_trigger_fires(book, sol_api, luna_api, author_api, trigger):
    pass_gate(sol_api, author_api, book, "G0")
    extra = {}
    if trigger == "one-way-door":
        extra["reversibility_class"] = "one-way-door"
    else:
        r = luna_api.post(
            url(book, "/questions"),
            {
                "question": "The heroine's mercy clashes with the genre's punishment.",
                "target_discipline": "sol",
                "kind": trigger,
            },
        )
        assert r.status_code == 201, r.json()
    r = ask_gate(sol_api, book, "G1", **extra)
    assert r.status_code == 201, r.json()
    assert r.json()["outcome"] == "awaiting-human"
    assert r.json()["card"]["risk_triggers"]
    meta = LoopMeta.objects.get(book=book)
    assert (meta.gate, meta.status) == ("G1", "awaiting-human")
    assert not DecisionLogEntry.objects.filter(book=book, gate="G1").exists()


def test_g1_risk_trigger_from_approved_series_canon(book, sol_api, author_api):
    from discovery.models import KnowledgeBase
    from tests.factories import KnowledgeBaseFactory, KnowledgeClaimFactory

    def base(scope, owner):  # starting the discovery made the book's own bases
        return KnowledgeBase.objects.filter(scope=scope, owner_id=owner).first() or KnowledgeBaseFactory(
            scope=scope, owner_id=owner, name=scope
        )

    series_base = base("series", str(book.series_id))
    book_base = base("book", str(book.pk))
    approval = Approval.objects.create(
        book=book,
        kind="canon-promotion",
        subject_type="claim",
        subject_id="x",
        subject_digest="d",
        summary="s",
        requested_by_role="sol",
    )
    KnowledgeClaimFactory(
        base=series_base, subject="Mara", predicate="eye colour", value="grey", status="approved", approval=approval
    )
    KnowledgeClaimFactory(base=book_base, subject="Mara", predicate="eye colour", value="green", status="proposed")
    pass_gate(sol_api, author_api, book, "G0")
    r = ask_gate(sol_api, book, "G1")
    assert r.status_code == 201
    assert any("series canon" in t for t in r.json()["card"]["risk_triggers"])


def test_g15_waits_for_the_author(book, sol_api, author_api):
    pass_gate(sol_api, author_api, book, "G0")
    pass_gate(sol_api, author_api, book, "G1")
    r = ask_gate(sol_api, book, "G1.5", summary="which storylines this book carries")
    assert r.status_code == 201
    assert LoopMeta.objects.get(book=book).status == "awaiting-human"


def test_g2_is_refused_with_every_reason_listed(book, sol_api, author_api):
    reach_g2(sol_api, author_api, book)
    r = ask_gate(sol_api, book, "G2")
    assert r.status_code == 409
    body = r.json()
    assert body["code"] == "gate_refused"
    reasons = " | ".join(body["reasons"])
    assert "canon-integrity has not reviewed" in reasons
    assert "reader-trust has not reviewed" in reasons
    assert "strict lint fails" in reasons
    assert "saturation does not hold" in reasons
    assert not OptionCard.objects.filter(book=book, gate="G2").exists()


def test_g2_is_refused_while_one_required_lens_has_not_reviewed(book, sol_api, author_api, luna_api, terra_api):
    reach_g2(sol_api, author_api, book)
    saturate(sol_api, luna_api, terra_api, book)
    from discovery.loop.models import LensReview

    LensReview.objects.filter(book=book, lens_id="reader-trust").delete()
    r = ask_gate(sol_api, book, "G2")
    assert r.status_code == 409
    assert r.json()["reasons"] == ["the required lens reader-trust has not reviewed at G2 (filed by luna)"]


def test_g2_passes_to_the_author_once_lenses_lint_and_saturation_hold(book, sol_api, author_api, luna_api, terra_api):
    reach_g2(sol_api, author_api, book)
    saturate(sol_api, luna_api, terra_api, book)
    assert author_api.get(url(book)).json()["saturation"]["holds"] is True
    r = ask_gate(sol_api, book, "G2", summary="the Story Charter and its proposed canon")
    assert r.status_code == 201, r.json()
    d = decide(author_api, book, r.json()["approval_id"], "approve")
    assert d.status_code == 200
    assert LoopMeta.objects.get(book=book).gate == "G3"


def test_g3_is_refused_while_the_brief_has_no_success_metrics(book, sol_api, author_api, luna_api, terra_api):
    at_g3(book, sol_api, author_api, luna_api, terra_api)
    r = ask_gate(sol_api, book, "G3")
    assert r.status_code == 409
    assert "no decision brief" in r.json()["reasons"][0]
    sol_api.post(
        url(book, "/artifacts"),
        {"slug": "decision-brief", "type": "decision-brief", "content": {"charter": {"main_thrust": "x"}}},
    )
    r = ask_gate(sol_api, book, "G3")
    assert r.status_code == 409
    assert r.json()["reasons"] == ["the decision brief has no success_metrics"]
    assert not Chapter.objects.filter(book=book).exists()


def test_g3_hands_off_to_drafting_chapter_one_and_the_backlog(book, sol_api, author_api, luna_api, terra_api):
    brief = {
        "charter": {"main_thrust": "x"},
        "success_metrics": ["the culprit is deducible from on-page clues by chapter 20"],
    }
    at_g3(book, sol_api, author_api, luna_api, terra_api, brief=brief)
    root = PlanNode.objects.get(book=book, is_root=True)
    parked = PlanNode.objects.create(
        book=book, parent=root, depth=1, intent="A second murder at the lock", lifecycle="parked", sub_idea="parked"
    )
    r = ask_gate(sol_api, book, "G3", summary="hand off to drafting")
    assert r.status_code == 200, r.json()
    assert r.json()["outcome"] == "handed-off"
    assert Chapter.objects.filter(book=book, number=1).exists()
    backlog = BlackboardArtifact.objects.get(book=book, slug="backlog")
    assert [e["id"] for e in backlog.content["entries"]] == [str(parked.pk)]
    assert LoopMeta.objects.get(book=book).status == "handed-off"
    row = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    assert (row.gate, row.ratified_by) == ("G3", "controller:sol")
    assert decision_log_verify(book).ok


def test_g3_never_hands_off_a_brief_only_proposed(book, sol_api, author_api, luna_api, terra_api):
    """Sol passes G3 automatically, so the brief it hands off must be the author's: a proposed one is refused."""
    at_g3(book, sol_api, author_api, luna_api, terra_api)
    r = sol_api.post(
        url(book, "/artifacts"),
        {"slug": "decision-brief", "type": "decision-brief", "content": {"success_metrics": ["fair play by ch. 20"]}},
    )
    assert r.status_code == 201
    r = ask_gate(sol_api, book, "G3", summary="hand off to drafting")
    assert r.status_code == 409
    assert r.json()["reasons"][0].startswith("the decision brief decision-brief is proposed, not ratified")
    assert not Chapter.objects.filter(book=book).exists()
    assert LoopMeta.objects.get(book=book).status != "handed-off"


def test_a_one_way_door_at_g3_forces_a_consent_card(book, sol_api, author_api, luna_api, terra_api):
    at_g3(book, sol_api, author_api, luna_api, terra_api, brief={"success_metrics": ["fair play by chapter 20"]})
    r = ask_gate(sol_api, book, "G3", reversibility_class="one-way-door")
    assert r.status_code == 201
    assert not Chapter.objects.filter(book=book).exists()
    d = decide(author_api, book, r.json()["approval_id"], "approve")
    assert d.status_code == 200, d.json()
    assert Chapter.objects.filter(book=book, number=1).exists()
    assert LoopMeta.objects.get(book=book).status == "handed-off"


def test_a_one_way_door_selection_anywhere_forces_a_consent_gate(book, sol_api, terra_api, author_api):
    loop_ensure(book=book)
    root = PlanNode.objects.get(book=book, is_root=True)
    c = terra_api.post(
        url(book, f"/nodes/{root.pk}/candidates"),
        {
            "altitude": "series-arc",
            "mechanic": "fair-play mystery",
            "shape": "a case per book",
            "riskiest_assumption": "readers follow a long arc",
        },
    ).json()
    r = sol_api.post(
        url(book, f"/nodes/{root.pk}/select"),
        {"candidate_id": c["id"], "rationale": "commits the series", "reversibility_class": "one-way-door"},
    )
    assert r.status_code == 200
    assert r.json()["consent_required"] is True
    root.refresh_from_db()
    assert root.selection_id is None
    assert LoopMeta.objects.get(book=book).status == "awaiting-human"
    d = decide(author_api, book, r.json()["approval_id"], "approve")
    assert d.status_code == 200, d.json()
    root.refresh_from_db()
    assert str(root.selection_id) == c["id"]


def test_lenses_cannot_ask_for_gates(book, terra_api, luna_api, editor_api):
    for api in (terra_api, luna_api):
        r = ask_gate(api, book, "G0")
        assert r.status_code == 403
        assert "lacks" in r.json()["detail"]
    assert editor_api.post(url(book, "/gates/G0/request"), {}).status_code in (403, 422)
    assert not OptionCard.objects.filter(book=book).exists()


def test_starting_discovery_creates_the_loop_at_g0(author, author_api):
    from discovery.loop.models import LoopMeta as Meta
    from tests.factories import BookFactory

    book = BookFactory(owner=author, title="Not yet started")
    assert not Meta.objects.filter(book=book).exists()
    r = author_api.post(f"/books/{book.pk}/discovery")
    assert r.status_code in (200, 201), r.json()
    meta = Meta.objects.get(book=book)
    assert (meta.gate, meta.status, meta.round) == ("G0", "working", 0)
    assert PlanNode.objects.filter(book=book, is_root=True, lifecycle="draft").count() == 1
