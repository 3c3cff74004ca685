"""Bounded big reads: the discovery view, the book page and a dossier keep their time and size flat as a book grows.

Three books with N, 10N and 100N items (N = 100: 100, 1,000 and 10,000 each of turns, observations, scratchpad
entries and approved claims, a tenth as many thrusts and charters but more than a page), the same seed. Each
read runs through the
real routes in-process (Django's test client: URL resolution, middleware, authentication, response rendering),
the three books interleaved round by round (the order reversed every other round):

- ``GET /api/v1/books/{id}/discovery`` with the author's bearer key;
- the book page ``GET /books/{id}/`` with the author's session;
- ``POST /api/v1/books/{id}/dossiers`` (a new Sol snapshot: assembly and store) with the author's key.

The floor of each ratio is the same read of the smallest book, timed in the same rounds: the ratio is how much
slower the read of the larger book is (bar 1.5x, the noise of a loaded machine), and its size over the smallest's
(bar 1.05x: a digit of a count or a timestamp may differ, a page more may not). Before the bounds, each read grew
linearly with the book (issue 19: 1.36 MB for the discovery view at 1,000 items, 150 us per item for a dossier).

    python -m bench.bench_bounded --items 100 --rounds 7
"""

from __future__ import annotations

from bench import common

SIZES = {
    "small": {"items": 100, "rounds": 5, "repeat": 3},
    "medium": {"items": 100, "rounds": 7, "repeat": 5},
    "large": {"items": 100, "rounds": 9, "repeat": 5},
}
FACTORS = (1, 10, 100)
TIME_BAR = 1.5
SIZE_BAR = 1.05


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("Bounded big reads: flat from N to 100N items", args)
    vendor = common.setup_django("bounded")
    report = common.Report("bounded", args.size)

    from django.test import Client

    from bench.data import build_book
    from discovery.selectors import VIEW_PAGE
    from novelgraph.core.services import api_key_create

    text = common.ZipfText(common.SEED)
    books = {}
    for factor in FACTORS:
        n = args.items * factor
        start = common.now_ns()
        books[factor] = build_book(
            f"bounded-{n}",
            claims=n,
            scratchpad=n,
            observations=n,
            turns=n,
            thrusts=max(VIEW_PAGE + 1, n // 10),
            charters=max(VIEW_PAGE + 1, n // 10),
            text=text,
        )
        print(f"  built the book with {n:,} items in {(common.now_ns() - start) / 1e9:.1f}s", flush=True)

    if vendor == "postgresql":
        # What autovacuum does after bulk inserts on a live server: without statistics the planner takes a
        # session's 10,000 rows for 21 and sorts them all instead of reading a page in index order.
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")

    reads = {}  # (read, factor) -> a call returning the response
    for factor, bench in books.items():
        _, raw = api_key_create(owner=bench.author, role="author", name="bench")
        api = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
        browser = Client()
        browser.force_login(bench.author)
        book_id = bench.book.pk
        reads[("GET /api/v1/books/{id}/discovery", factor)] = (
            lambda api=api, book_id=book_id: api.get(f"/api/v1/books/{book_id}/discovery")
        )
        reads[("GET /books/{id}/ (the book page)", factor)] = (
            lambda browser=browser, book_id=book_id: browser.get(f"/books/{book_id}/")
        )
        reads[("POST /api/v1/books/{id}/dossiers (sol)", factor)] = (
            lambda api=api, book_id=book_id: api.post(
                f"/api/v1/books/{book_id}/dossiers", {"agent_role": "sol"}, content_type="application/json"
            )
        )
    labels = list(dict.fromkeys(label for label, _ in reads))

    sizes = {}
    for (label, factor), call in reads.items():
        response = call()
        assert response.status_code in (200, 201), (label, factor, response.status_code, response.content[:500])
        sizes[(label, factor)] = len(response.content)

    samples = {key: common.Samples(f"{key[0]} at {args.items * key[1]:,}") for key in reads}
    for round_no in range(args.rounds):
        order = FACTORS if round_no % 2 == 0 else FACTORS[::-1]
        for label in labels:
            pairs = [(samples[(label, factor)], lambda _, call=reads[(label, factor)]: call()) for factor in order]
            common.interleaved(pairs, range(args.repeat), rounds=1)
        print(f"  round {round_no + 1}/{args.rounds} done", flush=True)

    common.print_title(f"Bounded reads on {vendor}, {args.rounds} interleaved rounds of {args.repeat} calls")
    for label in labels:
        rows = [samples[(label, factor)] for factor in FACTORS]
        common.print_timings(rows, rows[0])
        print("  response bytes: " + ", ".join(f"{args.items * f:,}: {sizes[(label, f)]:,}" for f in FACTORS))
        print()
    figures = {}
    for label in labels:
        floor = samples[(label, FACTORS[0])]
        figures[label] = {
            str(args.items * factor): {
                "median_ms": samples[(label, factor)].median_ms,
                "p95_ms": samples[(label, factor)].p95_ms,
                "bytes": sizes[(label, factor)],
            }
            for factor in FACTORS
        }
        for factor in FACTORS[1:]:
            n = args.items * factor
            report.ratio(
                f"{label}: time at {n:,} items vs {args.items:,}",
                common.round_ratios(samples[(label, factor)], floor),
                TIME_BAR,
            )
            report.bar(
                f"{label}: size at {n:,} items vs {args.items:,}",
                sizes[(label, factor)] / sizes[(label, FACTORS[0])],
                SIZE_BAR,
            )
    report.figures.update({"vendor": vendor, "items": [args.items * f for f in FACTORS], "reads": figures})
    report.save()
    return report


if __name__ == "__main__":
    main()
