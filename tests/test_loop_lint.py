"""The traceability lint: orphan, dangling, cycle (incl. self-edge), unreachable (once), strict vs informational."""

from __future__ import annotations

import pytest

from discovery.loop.lint import lint

from .loop_scenes import (
    clean_chain,
    started_book,  # noqa: F401 (the book, its discovery started)
    trace,
    url,
)

N = [{"id": "premise", "kind": "premise"}, {"id": "sq", "kind": "story-question"}, {"id": "ch1", "kind": "chapter"}]
E = [{"from": "premise", "to": "sq"}, {"from": "sq", "to": "ch1"}]


def _codes(report):
    return sorted((f["code"], tuple(f.get("nodes", []))) for f in report.findings)


def run(nodes=N, edges=E, strict=False):
    return lint(nodes=nodes, edges=edges, root="premise", leaf_kind="chapter", strict=strict)


def test_a_clean_chain_passes_strict():
    report = run(strict=True)
    assert report.ok and report.findings == []


def test_an_isolated_node_is_an_orphan_informational_by_default_and_a_failure_when_strict():
    nodes = [*N, {"id": "loose", "kind": "clue"}]
    soft = run(nodes=nodes)
    assert _codes(soft) == [("orphan", ("loose",))]
    assert soft.ok and soft.findings[0]["severity"] == "info"
    hard = run(nodes=nodes, strict=True)
    assert not hard.ok and hard.findings[0]["severity"] == "failure"


def test_a_non_leaf_without_consumer_is_an_orphan():
    report = run(nodes=[*N, {"id": "arc", "kind": "arc"}], edges=[*E, {"from": "premise", "to": "arc"}])
    assert _codes(report) == [("orphan", ("arc",))]
    assert "it leads to no chapter" in report.findings[0]["message"]
    assert report.findings[0]["fix"].startswith("Link it to what it feeds")


def test_a_dangling_edge_is_always_a_failure():
    report = run(edges=[*E, {"from": "sq", "to": "ghost"}])
    assert _codes(report) == [("dangling", ("sq",))]
    assert not report.ok


def test_a_cycle_is_always_a_failure():
    nodes = [*N, {"id": "a", "kind": "arc"}, {"id": "b", "kind": "arc"}]
    edges = [
        *E,
        {"from": "sq", "to": "a"},
        {"from": "a", "to": "b"},
        {"from": "b", "to": "a"},
        {"from": "b", "to": "ch1"},
    ]
    report = run(nodes=nodes, edges=edges)
    assert ("cycle", ("a", "b")) in _codes(report)
    assert not report.ok


def test_a_self_edge_is_a_cycle():
    report = run(edges=[*E, {"from": "sq", "to": "sq"}])
    assert _codes(report) == [("cycle", ("sq",))]
    assert report.findings[0]["self_edge"] is True and not report.ok


def test_an_unreachable_node_is_reported_once_and_not_also_as_an_orphan():
    # island: loose -> mid -> ch9. loose is the orphan (no producer); mid and ch9 have producers and
    # consumers but cannot be reached from the root: unreachable, once each, never also orphans.
    nodes = [*N, {"id": "loose", "kind": "arc"}, {"id": "mid", "kind": "sequence"}, {"id": "ch9", "kind": "chapter"}]
    edges = [*E, {"from": "loose", "to": "mid"}, {"from": "mid", "to": "ch9"}]
    report = run(nodes=nodes, edges=edges)
    assert _codes(report) == [("orphan", ("loose",)), ("unreachable", ("ch9",)), ("unreachable", ("mid",))]
    per_node = [n for f in report.findings for n in f["nodes"]]
    assert len(per_node) == len(set(per_node))
    assert report.ok
    assert not run(nodes=nodes, edges=edges, strict=True).ok


def test_a_node_that_cannot_reach_a_leaf_is_unreachable():
    nodes = [*N, {"id": "a", "kind": "arc"}, {"id": "b", "kind": "arc"}]
    edges = [*E, {"from": "premise", "to": "a"}, {"from": "a", "to": "b"}, {"from": "b", "to": "a"}]
    codes = _codes(run(nodes=nodes, edges=edges))
    assert ("unreachable", ("a",)) in codes and ("unreachable", ("b",)) in codes


@pytest.mark.django_db
def test_the_lint_route_reports_strict_and_informational(book, sol_api, author_api):
    clean_chain(sol_api, book)
    trace(sol_api, book, [("loose", "clue")], [("sq", "ghost")])
    soft = author_api.get(url(book, "/lint"))
    assert soft.status_code == 200
    body = soft.json()
    assert body["strict"] is False and body["ok"] is False  # the dangling edge fails even when not strict
    assert body["counts"] == {"orphan": 1, "dangling": 1, "cycle": 0, "unreachable": 0}
    assert [f["severity"] for f in body["findings"] if f["code"] == "orphan"] == ["info"]
    strict = author_api.get(url(book, "/lint"), strict="true").json()
    assert [f["severity"] for f in strict["findings"] if f["code"] == "orphan"] == ["failure"]
