"""Bounds: rounds, cost, concentration, depth, breadth pause or stall the loop and raise a card; extend resumes."""

from __future__ import annotations

import pytest

from approvals.models import DecisionLogEntry
from discovery.loop.models import LoopMeta, OptionCard, PlanNode

from .loop_scenes import (
    decide,
    started_book,  # noqa: F401 (the book, its discovery started)
    url,
)

pytestmark = pytest.mark.django_db


def _meta(book, **fields):
    sol_meta = LoopMeta.objects.filter(book=book)
    sol_meta.update(**fields)
    return sol_meta.get()


def _root(book, api):
    api.get(url(book))
    return PlanNode.objects.get(book=book, is_root=True)


def _bound_card(book):
    return OptionCard.objects.get(book=book, kind="bound", status="pending")


def test_reaching_the_round_cap_unconverged_stalls_at_cap_with_an_option_card(book, sol_api, author_api):
    _root(book, sol_api)
    _meta(book, round_cap=2)
    assert sol_api.post(url(book, "/rounds"), {}).json()["status"] == "working"
    r = sol_api.post(url(book, "/rounds"), {})
    assert r.status_code == 200
    assert (r.json()["status"], r.json()["bound"]) == ("stalled-at-cap", "rounds")
    card = _bound_card(book)
    assert card.decisions_requested == ["extend", "approve-with-constraint (narrow)", "park", "abandon"]
    # Never the end of the run: the loop waits; spending is refused until the author decides.
    assert sol_api.post(url(book, "/rounds"), {}).status_code == 409
    d = decide(author_api, book, str(card.approval_id), "extend", constraint="round_cap=5")
    assert d.status_code == 200, d.json()
    meta = LoopMeta.objects.get(book=book)
    assert (meta.round_cap, meta.status) == (5, "working")
    assert d.json()["detail"]["effect"] == {
        "bound": "rounds",
        "previous": {"round_cap": 2},
        "granted": {"round_cap": 5},
        "resumed_node": None,
    }
    assert sol_api.post(url(book, "/rounds"), {}).status_code == 200


def test_a_node_reaching_its_round_cap_pauses_at_bound(book, sol_api, author_api):
    root = _root(book, sol_api)
    node = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "sister", "round_cap": 1}).json()
    r = sol_api.post(url(book, "/rounds"), {"node_id": node["id"]})
    assert (r.json()["status"], r.json()["bound"]) == ("paused-at-bound", "node-rounds")
    card = _bound_card(book)
    d = decide(author_api, book, str(card.approval_id), "extend", constraint="granted two more rounds")
    assert d.status_code == 200, d.json()
    assert PlanNode.objects.get(pk=node["id"]).round_cap == 3
    assert LoopMeta.objects.get(book=book).status == "working"


def test_spending_the_budget_stalls_at_cap(book, sol_api, author_api):
    _root(book, sol_api)
    r = sol_api.post(url(book, "/cost"), {"amount": 100})
    assert (r.json()["status"], r.json()["bound"]) == ("stalled-at-cap", "cost")
    assert sol_api.post(url(book, "/cost"), {"amount": 1}).status_code == 409
    card = _bound_card(book)
    assert card.proposed_extension == {"cost_budget": 150.0}
    d = decide(author_api, book, str(card.approval_id), "extend", constraint="grant the proposed budget")
    assert d.status_code == 200
    assert LoopMeta.objects.get(book=book).cost_budget == 150.0


def test_an_extend_that_names_a_number_but_no_bound_grants_nothing_and_says_how(book, sol_api, author_api):
    _root(book, sol_api)
    sol_api.post(url(book, "/cost"), {"amount": 100})
    card = _bound_card(book)

    refused = decide(author_api, book, str(card.approval_id), "extend", constraint="raise the budget to 200")

    assert refused.status_code == 422 and refused.json()["field"] == "constraint", refused.json()
    assert "cost_budget=<number>" in refused.json()["detail"]
    assert LoopMeta.objects.get(book=book).cost_budget == 100.0, "nothing granted"
    granted = decide(author_api, book, str(card.approval_id), "extend", constraint="cost_budget=200")
    assert granted.status_code == 200, granted.json()
    assert LoopMeta.objects.get(book=book).cost_budget == 200.0


def test_cost_is_never_negative(book, sol_api):
    _root(book, sol_api)
    for amount in (0, -5):
        r = sol_api.post(url(book, "/cost"), {"amount": amount})
        assert r.status_code == 422 and r.json()["field"] == "amount"
    assert LoopMeta.objects.get(book=book).cost_spent == 0


def test_one_subtree_spending_over_forty_percent_pauses_on_concentration(book, sol_api, author_api):
    root = _root(book, sol_api)
    a = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "the lock"}).json()
    deep = sol_api.post(url(book, "/nodes"), {"parent_id": a["id"], "intent": "tide tables"}).json()
    assert sol_api.post(url(book, "/cost"), {"amount": 30, "node_id": deep["id"]}).json()["status"] == "working"
    r = sol_api.post(url(book, "/cost"), {"amount": 15, "node_id": a["id"]})
    assert (r.json()["status"], r.json()["bound"]) == ("paused-at-bound", "concentration")
    card = _bound_card(book)
    assert str(card.node_id) == a["id"]
    d = decide(
        author_api,
        book,
        str(card.approval_id),
        "approve-with-constraint",
        constraint="Narrow: the lock subplot stays under two chapters",
    )
    assert d.status_code == 200, d.json()
    meta = LoopMeta.objects.get(book=book)
    assert meta.status == "working" and meta.constraints[-1]["text"].startswith("Narrow")


def test_a_node_beyond_max_depth_pauses_and_is_not_created(book, sol_api, author_api):
    root = _root(book, sol_api)
    _meta(book, max_depth=1)
    child = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "one"}).json()
    r = sol_api.post(url(book, "/nodes"), {"parent_id": child["id"], "intent": "two"})
    assert r.status_code == 409
    assert (r.json()["code"], r.json()["bound"]) == ("paused_at_bound", "depth")
    assert PlanNode.objects.filter(book=book).count() == 2
    meta = LoopMeta.objects.get(book=book)
    assert (meta.status, meta.bound) == ("paused-at-bound", "depth")
    d = decide(author_api, book, r.json()["approval_id"], "extend", constraint="max_depth=3")
    assert d.status_code == 200
    assert sol_api.post(url(book, "/nodes"), {"parent_id": child["id"], "intent": "two"}).status_code == 201


def test_a_node_beyond_max_breadth_pauses_and_park_or_abandon_resolve_it(book, sol_api, author_api):
    root = _root(book, sol_api)
    _meta(book, max_breadth=2)
    for i in range(2):
        assert sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": f"n{i}"}).status_code == 201
    r = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "one too many"})
    assert r.status_code == 409 and r.json()["bound"] == "breadth"
    d = decide(author_api, book, r.json()["approval_id"], "park", rationale="Keep the book narrow.")
    assert d.status_code == 200, d.json()
    assert LoopMeta.objects.get(book=book).status == "working"
    assert DecisionLogEntry.objects.filter(book=book).count() == 1


def test_a_bound_card_refuses_the_gate_verdicts_it_does_not_offer(book, sol_api, author_api):
    _root(book, sol_api)
    sol_api.post(url(book, "/cost"), {"amount": 100})
    card = _bound_card(book)
    r = decide(author_api, book, str(card.approval_id), "approve")
    assert r.status_code == 422 and r.json()["field"] == "verdict"
    assert LoopMeta.objects.get(book=book).status == "stalled-at-cap"
    assert not DecisionLogEntry.objects.filter(book=book).exists()
