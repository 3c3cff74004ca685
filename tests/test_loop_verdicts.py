"""The seven loop verdicts, given by the author through the verdict route: each effect, one log row each."""

from __future__ import annotations

import pytest

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.loop.models import (
    BlackboardArtifact,
    Candidate,
    LensRerun,
    LoopMeta,
    OptionCard,
    PlanNode,
    TraceEdge,
    TraceNode,
)

from .loop_scenes import (
    ask_gate,
    decide,
    started_book,  # noqa: F401 (the book, its discovery started)
    trace,
    url,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(book, sol_api, terra_api, luna_api):
    """At G0: a child node with two candidates (one selected), a proposed slot, a small traceability chain."""
    assert sol_api.get(url(book)).status_code == 200
    root = PlanNode.objects.get(book=book, is_root=True)
    node = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "The lock-keeper's arc"}).json()
    a = terra_api.post(
        url(book, f"/nodes/{node['id']}/candidates"),
        {
            "altitude": "plotline",
            "mechanic": "fair-play mystery",
            "shape": "clues in every lock",
            "riskiest_assumption": "readers track tide tables",
        },
    ).json()
    b = terra_api.post(
        url(book, f"/nodes/{node['id']}/candidates"),
        {
            "altitude": "subplot",
            "mechanic": "romance engine",
            "shape": "two keepers",
            "riskiest_assumption": "the romance does not swamp the case",
        },
    ).json()
    r = sol_api.post(url(book, f"/nodes/{node['id']}/select"), {"candidate_id": a["id"], "rationale": "fits the genre"})
    assert r.status_code == 200, r.json()
    slot = luna_api.post(
        url(book, "/artifacts"),
        {
            "slug": "arc-lock-keeper",
            "type": "scene-card",
            "lens": "reader-trust",
            "content": {"beat": "she finds the letter"},
        },
    )
    assert slot.status_code == 201, slot.json()
    trace(
        sol_api,
        book,
        [
            ("premise", "premise"),
            ("arc", "arc"),
            ("beat", "scene-beat"),
            ("ch1", "chapter"),
            ("sq", "story-question"),
            ("clue", "clue"),
            ("ch2", "chapter"),
            ("motive", "conflict"),
            ("ch3", "chapter"),
        ],
        [
            ("premise", "arc"),
            ("arc", "beat"),
            ("beat", "ch1"),
            ("premise", "sq"),
            ("sq", "clue"),
            ("clue", "ch2"),
            ("premise", "motive"),
            ("motive", "ch3"),
        ],
    )
    TraceNode.objects.filter(book=book, node_id="beat").update(
        artifact=BlackboardArtifact.objects.get(book=book, slug="arc-lock-keeper")
    )
    return {"node": PlanNode.objects.get(pk=node["id"]), "a": a, "b": b}


def _card(sol_api, book, scene, **extra):
    body = {"artifacts": ["arc-lock-keeper"], "node_id": str(scene["node"].pk)}
    body.update(extra)
    r = ask_gate(sol_api, book, "G0", **body)
    assert r.status_code == 201, r.json()
    return r.json()["approval_id"]


def _rows(book):
    return DecisionLogEntry.objects.filter(book=book).count()


def test_approve_ratifies_the_slots_and_the_node_and_advances_the_gate(book, sol_api, author_api, scene):
    approval = _card(sol_api, book, scene)
    before = _rows(book)
    r = decide(author_api, book, approval, "approve")
    assert r.status_code == 200, r.json()
    assert r.json()["detail"]["effect"]["ratified"] == ["arc-lock-keeper"]
    assert BlackboardArtifact.objects.get(book=book, slug="arc-lock-keeper").status == "ratified"
    scene["node"].refresh_from_db()
    assert scene["node"].lifecycle == "ratified"
    assert LoopMeta.objects.get(book=book).gate == "G1"
    assert _rows(book) == before + 1
    row = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    assert row.ratified_by == "author:ada" and row.gate == "G0" and row.decision == "approve"
    assert decision_log_verify(book).ok


def test_approve_with_constraint_records_it_reruns_the_touched_slots_and_does_not_advance(
    book, sol_api, author_api, scene
):
    approval = _card(sol_api, book, scene)
    r = decide(author_api, book, approval, "approve-with-constraint", constraint="No second murder before chapter 10")
    assert r.status_code == 200, r.json()
    meta = LoopMeta.objects.get(book=book)
    assert meta.gate == "G0"
    assert meta.constraints[0]["text"] == "No second murder before chapter 10"
    boundary = BlackboardArtifact.objects.get(book=book, slug="scope-boundary")
    assert boundary.content["constraints"][0]["text"] == "No second murder before chapter 10"
    rerun = LensRerun.objects.get(book=book)
    assert (rerun.lens, rerun.artifacts, rerun.status) == ("reader-trust", ["arc-lock-keeper"], "queued")
    assert r.json()["detail"]["constraint"] == "No second murder before chapter 10"
    # The constraint is honoured before moving on: the gate waits for the re-run.
    blocked = ask_gate(sol_api, book, "G0")
    assert blocked.status_code == 409 and blocked.json()["code"] == "reruns_pending"


def test_approve_with_constraint_without_the_constraint_is_422(book, sol_api, author_api, scene):
    approval = _card(sol_api, book, scene)
    r = decide(author_api, book, approval, "approve-with-constraint")
    assert r.status_code == 422 and r.json()["field"] == "constraint"
    assert Approval.objects.get(pk=approval).status == "pending"


def test_redirect_stales_the_obsoleted_slots_and_the_node_reenters_converging(book, sol_api, author_api, scene):
    approval = _card(sol_api, book, scene, trace_seed="arc")
    before = _rows(book)
    r = decide(author_api, book, approval, "redirect", constraint="Make it the sister's arc instead")
    assert r.status_code == 200, r.json()
    cascade = r.json()["detail"]["effect"]["cascade"]
    assert cascade["applied"] is True and cascade["stale"] == ["beat", "ch1"]
    assert TraceNode.objects.get(book=book, node_id="arc").status == "rejected"
    slot = BlackboardArtifact.objects.get(book=book, slug="arc-lock-keeper")
    assert slot.status == "stale" and slot.version == 2 and "arc" in slot.stale_reason
    scene["node"].refresh_from_db()
    assert scene["node"].lifecycle == "converging"
    assert LoopMeta.objects.get(book=book).constraints[-1] == {
        "kind": "steer",
        "text": "Make it the sister's arc instead",
        "gate": "G0",
        "card": str(OptionCard.objects.get(approval_id=approval).pk),
    }
    assert _rows(book) == before + 1


def test_explore_alternatives_returns_the_node_to_diverging_and_keeps_the_rejected(book, sol_api, author_api, scene):
    approval = _card(sol_api, book, scene)
    r = decide(author_api, book, approval, "explore-alternatives", rationale="Too safe; look wider.")
    assert r.status_code == 200, r.json()
    node = PlanNode.objects.get(pk=scene["node"].pk)
    assert node.lifecycle == "diverging" and node.selection_id is None
    assert Candidate.objects.get(pk=scene["b"]["id"]).status == "rejected"
    assert Candidate.objects.get(pk=scene["a"]["id"]).status == "parked"
    assert Candidate.objects.filter(node=node).count() == 2
    assert LensRerun.objects.get(book=book).lens == "explore-options"


def test_abandon_stales_the_subtree_and_keeps_history(book, sol_api, author_api, scene):
    child = sol_api.post(url(book, "/nodes"), {"parent_id": str(scene["node"].pk), "intent": "the flood chapter"})
    assert child.status_code == 201, child.json()
    approval = _card(sol_api, book, scene, trace_seed="arc")
    r = decide(author_api, book, approval, "abandon", rationale="Not this book.")
    assert r.status_code == 200, r.json()
    node = PlanNode.objects.get(pk=scene["node"].pk)
    assert node.lifecycle == "abandoned"
    assert PlanNode.objects.get(pk=child.json()["id"]).lifecycle == "stale"
    assert TraceNode.objects.get(book=book, node_id="arc").status == "abandoned"
    # History stays: nothing deleted, the edges kept but out of the active graph.
    assert TraceEdge.objects.filter(book=book).count() == 8
    assert not TraceEdge.objects.filter(book=book, active=True, from_id="arc").exists()


def test_park_moves_the_node_to_the_parked_sub_ideas_and_its_siblings_go_on(book, sol_api, author_api, scene):
    root = PlanNode.objects.get(book=book, is_root=True)
    sibling = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "the sister"}).json()
    approval = _card(sol_api, book, scene)
    r = decide(author_api, book, approval, "park", rationale="Later, maybe book two.")
    assert r.status_code == 200, r.json()
    node = PlanNode.objects.get(pk=scene["node"].pk)
    assert (node.lifecycle, node.sub_idea) == ("parked", "parked")
    assert PlanNode.objects.get(pk=sibling["id"]).lifecycle == "draft"
    assert sol_api.post(url(book, "/nodes"), {"parent_id": sibling["id"], "intent": "goes on"}).status_code == 201
    plan = author_api.get(url(book, "/nodes")).json()
    assert plan["count"] == 4


def test_extend_grants_and_logs_the_new_bound(book, sol_api, author_api, scene):
    approval = _card(sol_api, book, scene)
    r = decide(author_api, book, approval, "extend", constraint="round_cap=10 cost_budget=250")
    assert r.status_code == 200, r.json()
    meta = LoopMeta.objects.get(book=book)
    assert (meta.round_cap, meta.cost_budget) == (10, 250.0)
    row = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    assert row.detail["effect"]["granted"] == {"round_cap": 10, "cost_budget": 250.0}
    assert row.detail["effect"]["previous"] == {"round_cap": 6, "cost_budget": 100.0}


def test_free_text_verdicts_are_refused(book, sol_api, author_api, scene):
    approval = _card(sol_api, book, scene)
    for bad in ("approve it all", "reject", ""):
        r = decide(author_api, book, approval, bad)
        assert r.status_code == 422, bad
        assert r.json()["field"] == "verdict"
    assert Approval.objects.get(pk=approval).status == "pending"
    assert not DecisionLogEntry.objects.filter(book=book).exists()


@pytest.mark.parametrize("who", ["sol_api", "terra_api", "luna_api", "editor_api"])
def test_agents_and_editors_are_refused_at_the_verdict_route(book, sol_api, scene, request, who):
    approval = _card(sol_api, book, scene)
    api = request.getfixturevalue(who)
    r = decide(api, book, approval, "approve")
    assert r.status_code == 403
    assert Approval.objects.get(pk=approval).status == "pending"
    assert LoopMeta.objects.get(book=book).gate == "G0"
    assert not DecisionLogEntry.objects.filter(book=book).exists()


def test_an_outsider_cannot_see_the_approval(book, sol_api, scene, outsider_api):
    approval = _card(sol_api, book, scene)
    assert decide(outsider_api, book, approval, "approve").status_code == 404


def test_a_decided_card_is_409_and_one_row_per_verdict_keeps_the_chain(book, sol_api, author_api, scene):
    approval = _card(sol_api, book, scene)
    assert decide(author_api, book, approval, "approve").status_code == 200
    assert decide(author_api, book, approval, "approve").status_code == 409
    r = ask_gate(sol_api, book, "G1", reversibility_class="one-way-door")
    assert decide(author_api, book, r.json()["approval_id"], "park", rationale="Not yet.").status_code == 200
    assert DecisionLogEntry.objects.filter(book=book).count() == 2
    assert decision_log_verify(book).ok


def test_a_card_whose_slots_changed_lapses(book, sol_api, luna_api, author_api, scene):
    approval = _card(sol_api, book, scene)
    luna_api.post(
        url(book, "/artifacts"),
        {"slug": "arc-lock-keeper", "type": "scene-card", "lens": "reader-trust", "content": {"beat": "changed"}},
    )
    r = decide(author_api, book, approval, "approve")
    assert r.status_code == 409 and r.json()["code"] == "superseded"
    assert BlackboardArtifact.objects.get(book=book, slug="arc-lock-keeper").status == "proposed"
    # The lapsed card is superseded and put before the author again, as the slot is now.
    renewed = r.json()["approval_id"]
    assert renewed and renewed != approval
    view = author_api.get(url(book)).json()
    assert view["meta"]["status"] == "awaiting-human" and view["pending_card"]["approval_id"] == renewed
    assert ask_gate(sol_api, book, "G0").status_code == 409  # the renewed card already waits
    assert decide(author_api, book, renewed, "approve").status_code == 200
    assert BlackboardArtifact.objects.get(book=book, slug="arc-lock-keeper").status == "ratified"


def test_the_approvals_verdict_route_and_review_page_serve_loop_cards(book, sol_api, author_api, author_browser, scene):
    approval = _card(sol_api, book, scene, trace_seed="arc")
    page = author_browser.get(f"/review/{approval}/")
    assert page.status_code == 200
    assert "Impact preview" in page.content.decode() and "beat" in page.content.decode()
    detail = author_api.get(f"/approvals/{approval}").json()
    assert [a["node_id"] for a in detail["impact"]["affected"]] == ["beat", "ch1"]
    assert sol_api.post(f"/approvals/{approval}/verdict", {"verdict": "abandon", "rationale": "no"}).status_code == 403
    r = author_api.post(f"/approvals/{approval}/verdict", {"verdict": "abandon", "rationale": "Not this book."})
    assert r.status_code == 200, r.json()
    assert PlanNode.objects.get(pk=scene["node"].pk).lifecycle == "abandoned"
    assert DecisionLogEntry.objects.filter(book=book).count() == 1
    assert decision_log_verify(book).ok
