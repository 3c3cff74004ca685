"""Dossier assembly: queries that do not grow with the data, and time against a bare ``json.dumps``.

A book with N approved claims across its bases, scratchpad entries and observations (issue 8: 5,000 claims,
2,000 entries, 500 observations), and a second book with 4N of each. The SQL query count of
``dossier_content`` and ``dossier_create`` must be the same for both; the median time of assembling the
dossier is printed against serialising the same rows with a bare ``json.dumps`` (the floor).

    python -m bench.bench_dossier --claims 5000 --scratchpad 2000 --observations 500
"""

from __future__ import annotations

import json

from bench import common

SIZES = {
    "small": {"claims": 1_250, "scratchpad": 500, "observations": 125, "repeat": 7},
    "medium": {"claims": 2_500, "scratchpad": 1_000, "observations": 250, "repeat": 7},
    "large": {"claims": 5_000, "scratchpad": 2_000, "observations": 500, "repeat": 9},
}


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("Dossier assembly", args)
    vendor = common.setup_django("dossier")
    report = common.Report("dossier", args.size)

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from bench.data import build_book
    from discovery.access import Principal
    from discovery.services.dossiers import dossier_content, dossier_create

    def author_of(bench_book) -> Principal:
        return Principal(user=bench_book.author, key_role="author")

    text = common.ZipfText(common.SEED)
    books = {}
    for factor in (1, 4):
        start = common.now_ns()
        books[factor] = build_book(
            f"dossier-{factor}n",
            claims=args.claims * factor,
            scratchpad=args.scratchpad * factor,
            observations=args.observations * factor,
            text=text,
        )
        print(f"  built the {factor}N book in {(common.now_ns() - start) / 1e9:.1f}s")

    common.print_title(f"SQL queries per dossier on {vendor} (N = {args.claims} claims)")
    print(f"{'call':<46} {'at N':>8} {'at 4N':>8}")
    counts = {}
    for label, call in (
        ("dossier_content (assembly)", lambda b: dossier_content(book=b.book, session=b.session, agent_role="sol")),
        (
            "dossier_create (checks + assembly + store)",
            lambda b: dossier_create(principal=author_of(b), book=b.book, agent_role="sol"),
        ),
    ):
        row = []
        for factor in (1, 4):
            with CaptureQueriesContext(connection) as captured:
                call(books[factor])
            row.append(len(captured.captured_queries))
        counts[label] = row
        print(f"{label:<46} {row[0]:>8} {row[1]:>8}")
    grows = {label: row for label, row in counts.items() if row[1] > row[0]}

    bench = books[1]
    content = dossier_content(book=bench.book, session=bench.session, agent_role="sol")
    sizes = {key: len(content[key]) for key in ("claims", "scratchpad", "observations")}
    print(f"  dossier at N: {sizes}, {len(json.dumps(content)) / 1e6:.2f} MB of JSON")
    principal = Principal(user=bench.author, key_role="author")

    assemble = common.Samples("dossier_content (read + assemble)")
    create = common.Samples("dossier_create (+ checks + store)")
    floor = common.Samples("floor: json.dumps of the same rows")
    common.interleaved(
        [
            (assemble, lambda _: dossier_content(book=bench.book, session=bench.session, agent_role="sol")),
            (create, lambda _: dossier_create(principal=principal, book=bench.book, agent_role="sol")),
            (floor, lambda _: json.dumps(content)),
        ],
        [None],
        rounds=args.repeat,
    )
    common.print_title(f"dossier at N on {vendor}, median of {args.repeat} runs")
    common.print_timings([floor, assemble, create], floor)

    report.figures.update(
        {
            "vendor": vendor,
            "n": {"claims": args.claims, "scratchpad": args.scratchpad, "observations": args.observations},
            "queries": counts,
            "floor_median_ms": floor.median_ms,
            "assemble_median_ms": assemble.median_ms,
            "create_median_ms": create.median_ms,
            "assemble_ratio": assemble.median_ms / floor.median_ms,
            "create_ratio": create.median_ms / floor.median_ms,
        }
    )
    for label, (at_n, at_4n) in counts.items():
        report.bar(f"{label}: queries at 4N minus at N ({at_n} -> {at_4n})", at_4n - at_n, 0, unit="")
    report.note(
        f"assembly {assemble.median_ms:.1f} ms = {assemble.median_ms / floor.median_ms:.1f}x a bare json.dumps "
        f"({floor.median_ms:.1f} ms); stored {create.median_ms:.1f} ms"
    )
    if grows:
        report.note(f"query count grows with the data: {grows}")
    report.save()
    return report


if __name__ == "__main__":
    main()
