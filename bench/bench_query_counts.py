"""Query counts on every page and GET API route at two data sizes: no route's count may grow with the data.

Statements are counted by the database's own trace (``tests.sqltrace``), so those run on the DB-API connection
itself count too.

API routes come from the OpenAPI schema (every GET), pages from the URL configuration (every pattern that
answers GET). Two books with the same shape, the second with 4x the rows (claims, scratchpad, observations,
turns, thrusts, charters, research, dossiers, pending approvals, decisions), each read by its own author
through a logged-in session. A route whose count at 4x is higher than at 1x has an N+1.

    python -m bench.bench_query_counts --scale 10
"""

from __future__ import annotations

import re

from bench import common

SIZES = {
    "small": {"scale": 10},
    "medium": {"scale": 20},
    "large": {"scale": 40},
}
# Routes that change state, or stream a download, are not page or list reads.
SKIP_PAGES = {"logout", "discovery_start", "turn_add", "dossier_take", "research_decide", "key-revoke"}


def page_patterns() -> list[tuple[str, str]]:
    """(name, pattern) of every non-API, non-admin URL pattern."""
    from django.urls import URLResolver, get_resolver

    out = []

    def walk(patterns, prefix: str, namespace: str) -> None:
        for pattern in patterns:
            text = str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                if text.startswith(("api/", "admin/")):
                    continue
                walk(pattern.url_patterns, prefix + text, pattern.namespace or namespace)
            elif pattern.name not in SKIP_PAGES:
                out.append((f"{namespace}:{pattern.name}" if namespace else pattern.name, "/" + prefix + text))

    walk(get_resolver().url_patterns, "", "")
    return out


def api_get_routes() -> list[str]:
    from novelgraph.api import api

    schema = api.get_openapi_schema()
    return [path for path, operations in schema["paths"].items() if "get" in operations]


def ids_for(bench_book) -> dict[str, str]:
    from approvals.models import Approval
    from discovery.loop.models import PlanNode
    from discovery.models import ContextDossier, Handoff, KnowledgeClaim
    from library.models import KnowledgeSource, ResearchItem

    book = bench_book.book
    canon = KnowledgeClaim.objects.filter(base__owner_id=str(book.pk), status="approved")
    values = {
        "book_id": book.pk,
        "session_id": bench_book.session.pk,
        "dossier_id": ContextDossier.objects.filter(book=book).values_list("pk", flat=True).first(),
        "handoff_id": Handoff.objects.filter(book=book).values_list("pk", flat=True).first(),
        "approval_id": Approval.objects.filter(book=book, status="pending").values_list("pk", flat=True).first(),
        "source_id": KnowledgeSource.objects.values_list("pk", flat=True).first(),
        "item_id": ResearchItem.objects.filter(book=book).values_list("pk", flat=True).first(),
        "node_id": PlanNode.objects.filter(book=book).values_list("pk", flat=True).first(),
        "claim_id": canon.order_by("created_at").values_list("pk", flat=True).first(),  # a claim's history
    }
    return {key: str(value) for key, value in values.items() if value is not None}


def fill(path: str, ids: dict[str, str]) -> str | None:
    """The path with its parameters filled in (``{x}`` or ``<uuid:x>``), or None when one is unknown."""
    missing = []

    def sub(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        if name not in ids:
            missing.append(name)
            return ""
        return ids[name]

    filled = re.sub(r"\{(\w+)\}|<(?:\w+:)?(\w+)>", sub, path)
    return None if missing else filled


QUERY_PARAMS = {
    "/api/v1/library/search": "?q=tension",
    "/library/": "?q=tension",
    "/api/v1/books/{book_id}/loop/cascade-preview": "?node={node_id}",
}


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("Query counts per route", args)
    vendor = common.setup_django("query_counts")
    report = common.Report("query_counts", args.size)

    from django.test import Client

    from bench.data import build_book
    from discovery.loop.services.base import loop_ensure
    from tests.factories import HandoffFactory
    from tests.sqltrace import sql_trace

    text = common.ZipfText(common.SEED)
    books = {}
    for factor in (1, 4):
        n = args.scale * factor
        books[factor] = build_book(
            f"routes-{factor}x",
            claims=3 * n,
            scratchpad=4 * n,
            observations=2 * n,
            turns=n,
            pending=n,
            decisions=n,
            thrusts=max(1, n // 2),
            charters=max(1, n // 5),
            research=n,
            dossiers=max(1, n // 2),
            text=text,
        )
        loop_ensure(book=books[factor].book)
        bench_book = books[factor]
        for index in range(max(1, n // 5)):
            HandoffFactory(
                book=bench_book.book,
                session=bench_book.session,
                dossier__book=bench_book.book,
                to_role=("terra", "luna")[index % 2],
            )

    routes = [(path, path) for path in api_get_routes()] + [(path, name) for name, path in page_patterns()]
    clients = {}
    for factor, bench_book in books.items():
        client = Client()
        client.force_login(bench_book.author)
        clients[factor] = (client, ids_for(bench_book))

    rows = []
    for path, label in routes:
        counts, statuses = [], []
        for factor in (1, 4):
            client, ids = clients[factor]
            url = fill(path, ids)
            if url is None:
                counts.append(None)
                statuses.append("no id")
                continue
            url += fill(QUERY_PARAMS.get(path, ""), ids) or ""
            with sql_trace() as trace:
                response = client.get(url)
            counts.append(len(trace))
            statuses.append(str(response.status_code))
        rows.append((label, counts, statuses))

    common.print_title(
        f"SQL statements per GET at 1x and 4x data on {vendor} (scale {args.scale}, the database's trace)"
    )
    print(f"{'route':<58} {'status':>9} {'at 1x':>6} {'at 4x':>6}  verdict")
    grown, measured = [], 0
    for label, counts, statuses in rows:
        status = "/".join(dict.fromkeys(statuses))
        if None in counts or any(s not in {"200"} for s in statuses):
            verdict = "not measured"
            at1 = "-" if counts[0] is None else counts[0]
            at4 = "-" if counts[1] is None else counts[1]
        else:
            measured += 1
            at1, at4 = counts
            verdict = "GROWS (N+1)" if at4 > at1 else "constant"
            if at4 > at1:
                grown.append(f"{label} {at1}->{at4}")
        print(f"{label:<58} {status:>9} {at1!s:>6} {at4!s:>6}  {verdict}")

    report.figures.update({"vendor": vendor, "scale": args.scale, "routes": rows, "measured": measured})
    report.bar(f"routes whose query count grows with the data ({measured} measured)", len(grown), 0, unit="")
    for item in grown:
        report.note(f"grows: {item}")
    skipped = [label for label, counts, statuses in rows if None in counts or set(statuses) != {"200"}]
    if skipped:
        report.note(f"not measured (no 200 at both sizes): {', '.join(skipped)}")
    report.save()
    return report


if __name__ == "__main__":
    main()
