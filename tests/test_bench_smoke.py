"""The benchmark scripts stay runnable: their harness, data builders and route discovery, at a tiny size.

No timing is asserted here (figures live in bench/RESULTS.md); these only keep the scripts from rotting.
"""

from __future__ import annotations

from approvals.selectors import decision_log_verify
from bench import common
from bench.bench_decision_log import build_chain
from bench.bench_query_counts import fill, page_patterns
from bench.data import build_book
from discovery.models import KnowledgeClaim, ScratchpadEntry


def test_the_statistics_and_the_table_format():
    samples = common.Samples("case", [3_000_000, 1_000_000, 2_000_000, 10_000_000])

    assert samples.median_ms == 2.5
    assert samples.p95_ms == 10.0
    assert common.percentile([5, 1, 3], 50) == 3


def test_synthetic_text_and_queries_are_fixed_by_the_seed():
    first, second = common.ZipfText(common.SEED, vocabulary=2_000), common.ZipfText(common.SEED, vocabulary=2_000)

    assert first.paragraph(50, [1]) == second.paragraph(50, [1])
    queries = common.make_queries(first, 40)
    assert len(queries) == 40
    assert all(1 <= len(q.split()) <= 3 for i, q in enumerate(queries) if i % 10 != 9)
    assert {queries[9], queries[19], queries[29], queries[39]} <= {
        q for q in queries if any(h in q for h in common.HOSTILE_QUERIES)
    }


def test_size_flags_override_the_defaults():
    args = common.parse_args("x", {"small": {"chunks": 10}, "large": {"chunks": 100}}, ["--size", "large"])
    assert args.chunks == 100
    assert common.parse_args("x", {"small": {"chunks": 10}}, ["--chunks", "7"]).chunks == 7


def test_the_bench_chain_verifies_through_the_real_selector(book, author):
    build_chain(book, author, entries=30, appends=5, text=common.ZipfText(common.SEED, vocabulary=2_000))

    result = decision_log_verify(book)

    assert result.ok, result
    assert result.entries == 30


def test_the_bench_book_has_what_was_asked(db):
    text = common.ZipfText(common.SEED, vocabulary=2_000)
    bench = build_book("smoke", claims=20, scratchpad=7, observations=3, pending=2, decisions=2, text=text)

    assert KnowledgeClaim.objects.filter(base__owner_id=str(bench.book.pk), status="approved").count() >= 10
    assert ScratchpadEntry.objects.filter(session=bench.session).count() == 7
    assert decision_log_verify(bench.book).ok


def test_every_page_is_found_and_route_paths_are_filled(db):
    pages = dict(page_patterns())

    assert "approvals:inbox" in pages
    assert fill("/api/v1/books/{book_id}/discovery", {"book_id": "abc"}) == "/api/v1/books/abc/discovery"
    assert fill("/books/<uuid:book_id>/", {"book_id": "abc"}) == "/books/abc/"
    assert fill("/api/v1/dossiers/{dossier_id}", {}) is None


def test_interleaved_rounds_give_one_ratio_per_round_and_its_spread():
    ours, floor = common.Samples("ours"), common.Samples("floor")
    common.interleaved([(ours, lambda _: None), (floor, lambda _: None)], [1, 2], rounds=5)
    ours.ns = [2, 2, 4, 4, 2, 2, 6, 6, 2, 2]
    floor.ns = [1] * 10

    ratios = common.round_ratios(ours, floor)

    assert ratios == [2, 4, 2, 6, 2]
    assert common.spread(ratios) == {"min": 2, "median": 2, "max": 6, "rounds": 5}


def test_the_plot_draws_every_ratio_against_its_bar(tmp_path):
    from bench.plot import write_svg

    run = {
        "benches": {
            "http": {
                "ratios": [
                    {
                        "label": "search",
                        "min": 1.5,
                        "median": 1.8,
                        "max": 2.4,
                        "rounds": 5,
                        "limit": 2.0,
                        "holds": True,
                    },
                    {"label": "ingest", "min": 1.1, "median": 1.6, "max": 1.9, "rounds": 5, "limit": None},
                ],
                "bars": [{"label": "verify", "value": 3.4, "limit": 3.0, "unit": "x", "holds": False}],
            }
        }
    }
    path = tmp_path / "results.svg"

    write_svg({"runs": {"sqlite/small": run}}, path)

    svg = path.read_text()
    assert svg.startswith("<svg") and svg.count("<circle") == 3
    assert "bar 2x" in svg and "bar 3x" in svg and "#cf222e" in svg


def test_the_dossier_floor_reads_the_same_dossier_as_ours(db):
    from django.db import connection

    from bench.bench_dossier import RawDossier
    from discovery.services.dossiers import dossier_content

    text = common.ZipfText(common.SEED, vocabulary=2_000)
    bench = build_book("floor", claims=30, scratchpad=5, observations=4, text=text)
    connection.ensure_connection()

    for role in ("sol", "terra", "luna"):
        floor = RawDossier(connection.vendor).build(
            connection.connection.cursor(), book=bench.book, session=bench.session, agent_role=role
        )
        assert floor == dossier_content(book=bench.book, session=bench.session, agent_role=role), role


def test_the_results_table_gives_each_ratio_with_its_spread_and_load():
    from bench.run_all import markdown

    bench = {
        "load_average": {"min": 3.0, "median": 5.0, "max": 9.0, "rounds": 4},
        "ratios": [
            {"label": "search", "min": 1.5, "median": 1.8, "max": 2.4, "rounds": 5, "limit": 2.0, "holds": True}
        ],
        "bars": [],
    }

    table = markdown({"runs": {"sqlite/small": {"benches": {"http": bench}, "machine": {"nproc": 2}}}})

    assert "| http | search | **1.80x** | 1.50 | 2.40 | 5 | 2x | yes | 5.0 (3.0-9.0) |" in table


def test_the_http_floor_answers_a_search_as_our_api_does(author_api, monkeypatch):
    """The HTTP bench compares our API with ``bench.floor_wsgi`` only when both answer the same: the floor's own
    search statement is run here against this database (it had fallen behind the any-word search on PostgreSQL)."""
    from urllib.parse import urlencode

    from django.db import connection

    from bench import floor_wsgi
    from bench.bench_http import _rounded

    from .factories import KnowledgeChunkFactory, KnowledgeSourceFactory

    source = KnowledgeSourceFactory(title="Floor notes")
    for n, text in enumerate(["the keeper's ledger", "a ledger of tides", "tides and keepers", "nothing to find"]):
        KnowledgeChunkFactory(source=source, content=text, topics=[], citation=f"passage {n}")
    connection.ensure_connection()
    monkeypatch.setattr(floor_wsgi, "POSTGRES", connection.vendor == "postgresql")
    monkeypatch.setitem(floor_wsgi._local, "conn", connection.connection)  # the test's own transaction

    for query in ("ledger tides", "keeper", "ledger AND tides"):
        ours = author_api.get("/library/search", q=query)
        status, floor = floor_wsgi.search(None, {"QUERY_STRING": urlencode({"q": query})}, "")
        assert (ours.status_code, status) == (200, 200)
        assert ours.json()["results"], query
        assert _rounded(floor) == _rounded(ours.json()), query


def test_the_discovery_bench_walks_the_same_discovery_as_the_hand_off_test():
    """bench/bench_discovery.py answers as tests/test_discovery_to_handoff.py does (that test keeps the walk going)."""
    from bench import bench_discovery, run_all

    from .test_discovery_to_handoff import ANSWERS

    assert bench_discovery.ANSWERS == ANSWERS
    assert "discovery" in run_all.BENCHES


def test_the_continuity_bench_checks_a_chapter_through_the_real_rules():
    """bench/bench_continuity.py builds its codex, canon and chapters, and times the check the offline provider
    calls (run_all runs it)."""
    from bench import run_all
    from bench.bench_continuity import alias_scanner, build_manuscript, check

    assert "continuity" in run_all.BENCHES

    book = build_manuscript(
        common.ZipfText(common.SEED, vocabulary=2_000), words=3_000, entries=20, claims=50, chapters=3
    )

    assert len(book["entries"]) == 20 and len(book["claims"]) == 50 and sorted(book["earlier"]) == [1, 2]
    named = alias_scanner(book["entries"]).findall(book["text"])
    assert named, "the chapter names some entries"
    kinds = {f["kind"] for f in check(book, book["text"])}
    assert "evidence-not-shown" in kinds or "reveal-too-early" in kinds, kinds
