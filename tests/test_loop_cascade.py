"""The cascade: impact before blast, the circuit breaker, stale marks, edges kept, lenses queued, idempotence."""

from __future__ import annotations

import pytest

from approvals.models import DecisionLogEntry
from discovery.loop.models import BlackboardArtifact, LensRerun, LoopMeta, OptionCard, TraceEdge, TraceNode
from discovery.loop.services.base import lock_meta
from discovery.loop.services.cascade import cascade_apply

from .loop_scenes import (
    ask_gate,
    decide,
    started_book,  # noqa: F401 (the book, its discovery started)
    trace,
    url,
)

pytestmark = pytest.mark.django_db

# premise -> arc -> beat -> ch1 ; premise -> sq -> clue -> ch2 ; premise -> motive -> ch3 ; premise -> x -> ch4
NODES = [
    ("premise", "premise"),
    ("arc", "arc"),
    ("beat", "scene-beat"),
    ("ch1", "chapter"),
    ("sq", "story-question"),
    ("clue", "clue"),
    ("ch2", "chapter"),
    ("motive", "conflict"),
    ("ch3", "chapter"),
    ("x", "subplot"),
    ("ch4", "chapter"),
]
EDGES = [
    ("premise", "arc"),
    ("arc", "beat"),
    ("beat", "ch1"),
    ("premise", "sq"),
    ("sq", "clue"),
    ("clue", "ch2"),
    ("premise", "motive"),
    ("motive", "ch3"),
    ("premise", "x"),
    ("x", "ch4"),
]


@pytest.fixture
def graph(book, sol_api, luna_api):
    for slug, lens in (("beat-card", "reader-trust"), ("clue-plan", "canon-integrity")):
        r = luna_api.post(url(book, "/artifacts"), {"slug": slug, "type": "scene-card", "lens": lens, "content": {}})
        assert r.status_code == 201
    trace(sol_api, book, NODES, EDGES, lens="")
    TraceNode.objects.filter(book=book, node_id="beat").update(
        artifact=BlackboardArtifact.objects.get(book=book, slug="beat-card"), produced_by="reader-trust"
    )
    TraceNode.objects.filter(book=book, node_id="ch1").update(produced_by="reader-trust")
    TraceNode.objects.filter(book=book, node_id="clue").update(
        artifact=BlackboardArtifact.objects.get(book=book, slug="clue-plan"), produced_by="canon-integrity"
    )
    return book


def _snapshot(book):
    return (
        sorted(TraceNode.objects.filter(book=book).values_list("node_id", "status")),
        sorted(TraceEdge.objects.filter(book=book).values_list("from_id", "to_id", "active")),
        sorted(BlackboardArtifact.objects.filter(book=book).values_list("slug", "status", "version")),
        LensRerun.objects.filter(book=book).count(),
        LoopMeta.objects.get(book=book).cost_spent,
    )


def test_the_preview_shows_the_impact_and_changes_nothing(graph, author_api, luna_api):
    before = _snapshot(graph)
    r = author_api.get(url(graph, "/cascade-preview"), node="arc")
    assert r.status_code == 200, r.json()
    body = r.json()
    assert [a["node_id"] for a in body["affected"]] == ["beat", "ch1"]
    assert body["lenses"] == ["reader-trust"]
    assert body["active_count"] == 11 and body["breaker"] is False
    assert luna_api.get(url(graph, "/cascade-preview"), node="arc").status_code == 200
    assert _snapshot(graph) == before
    assert author_api.get(url(graph, "/cascade-preview"), node="nope").status_code == 404


def test_confirmed_cascade_stales_downstream_keeps_edges_queues_only_producing_lenses(graph, sol_api, author_api):
    r = ask_gate(sol_api, graph, "G0", trace_seed="arc")
    d = decide(author_api, graph, r.json()["approval_id"], "redirect", constraint="the sister's arc")
    assert d.status_code == 200, d.json()
    assert TraceNode.objects.get(book=graph, node_id="arc").status == "rejected"
    assert TraceNode.objects.get(book=graph, node_id="beat").status == "stale"
    assert "upstream arc" in TraceNode.objects.get(book=graph, node_id="ch1").status_reason
    beat = BlackboardArtifact.objects.get(book=graph, slug="beat-card")
    assert (beat.status, beat.version) == ("stale", 2) and beat.stale_reason
    assert BlackboardArtifact.objects.get(book=graph, slug="clue-plan").status == "proposed"
    assert TraceEdge.objects.filter(book=graph).count() == 10
    assert set(TraceEdge.objects.filter(book=graph, active=False).values_list("from_id", "to_id")) == {
        ("premise", "arc"),
        ("arc", "beat"),
        ("beat", "ch1"),
    }
    reruns = list(LensRerun.objects.filter(book=graph).values_list("lens", flat=True))
    assert reruns == ["reader-trust"]
    meta = LoopMeta.objects.get(book=graph)
    assert meta.cost_spent == 1.0 and meta.round_invalidated is True and meta.saturation is False
    assert DecisionLogEntry.objects.filter(book=graph).count() == 1
    # The lint no longer sees the stale part of the graph.
    lint = author_api.get(url(graph, "/lint"), strict="true").json()
    assert "arc" not in str(lint["findings"])


def test_reapplying_an_applied_cascade_changes_nothing(graph):
    meta = lock_meta(graph)
    first = cascade_apply(meta=meta, seed="arc", reason="steer")
    assert first["applied"] is True
    after = _snapshot(graph)
    again = cascade_apply(meta=lock_meta(graph), seed="arc", reason="steer")
    assert again == {"applied": False, "noop": True, "seed": "arc"}
    assert _snapshot(graph) == after


def test_the_circuit_breaker_surfaces_to_the_author_instead_of_cascading(graph, sol_api, author_api):
    # premise's blast radius is 10 nodes > min(11/3, 8).
    preview = author_api.get(url(graph, "/cascade-preview"), node="premise").json()
    assert preview["breaker"] is True and len(preview["affected"]) == 10
    before = _snapshot(graph)
    r = ask_gate(sol_api, graph, "G0", trace_seed="premise")
    d = decide(author_api, graph, r.json()["approval_id"], "redirect", constraint="a different premise")
    assert d.status_code == 200, d.json()
    cascade = d.json()["detail"]["effect"]["cascade"]
    assert cascade["surfaced"] is True and cascade["applied"] is False
    assert _snapshot(graph) == before
    follow = OptionCard.objects.get(book=graph, kind="cascade")
    assert follow.status == "pending" and follow.trace_seed == "premise"
    assert LoopMeta.objects.get(book=graph).status == "awaiting-human"
    # The author confirms past the breaker: now it cascades, with one more row.
    c = decide(author_api, graph, str(follow.approval_id), "approve", rationale="Yes, all of it.")
    assert c.status_code == 200, c.json()
    assert c.json()["detail"]["effect"]["cascade"]["applied"] is True
    assert TraceNode.objects.filter(book=graph, status="stale").count() == 10
    assert DecisionLogEntry.objects.filter(book=graph).count() == 2


def test_the_breaker_limit_is_capped_at_eight(book, sol_api, author_api):
    nodes = [("premise", "premise")] + [(f"s{i}", "subplot") for i in range(30)] + [("ch", "chapter")]
    edges = [("premise", f"s{i}") for i in range(30)] + [(f"s{i}", "ch") for i in range(30)]
    trace(sol_api, book, nodes, [])
    from discovery.loop.models import TraceEdge as Edge

    Edge.objects.bulk_create([Edge(book=book, from_id=a, to_id=b) for a, b in edges])
    preview = author_api.get(url(book, "/cascade-preview"), node="s0").json()
    assert preview["limit"] == 8 and preview["breaker"] is False
    preview = author_api.get(url(book, "/cascade-preview"), node="premise").json()
    assert preview["limit"] == 8 and preview["breaker"] is True
