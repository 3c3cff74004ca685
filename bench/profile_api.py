"""Where an API request's time goes: our app and its floor called in-process, as gunicorn calls them.

Each route of the HTTP bench runs through Django's WSGI handler (request_started and request_finished
included, so persistent connections behave as under gunicorn) and through ``bench.floor_wsgi``, interleaved,
without a profiler, next to our app without each of issue 19's levers in turn (bearer-key calls skipping the
browser middleware; persistent connections). Then once more under cProfile, whose cumulative times are
grouped into the parts of the request: key authentication, URL resolution, the view's own work, ninja's
input parsing and response validation, the ORM's compiling and running of queries, the database's execute
calls, and middleware (the whole minus what the handler does inside it).

    python -m bench.profile_api --chunks 10000 --requests 300

Not part of ``make bench``: it explains the HTTP bench's ratios, it is not a figure with a bar.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import time
from urllib.parse import quote, urlsplit

from bench import common

SIZES = {
    "small": {"chunks": 10_000, "requests": 300, "rounds": 5},
    "medium": {"chunks": 50_000, "requests": 300, "rounds": 5},
    "large": {"chunks": 100_000, "requests": 500, "rounds": 5},
}

# (part, file suffix, function name): cumulative time of these functions, per request.
PARTS = (
    ("whole request (WSGIHandler.__call__)", "django/core/handlers/wsgi.py", "__call__"),
    ("inside the middleware (BaseHandler._get_response)", "django/core/handlers/base.py", "_get_response"),
    ("URL resolution", "django/urls/resolvers.py", "resolve"),
    ("key authentication (principal_for_key)", "discovery/access.py", "principal_for_key"),
    ("ninja: parse and validate input", "ninja/operation.py", "_get_values"),
    ("ninja: validate and render the response", "ninja/operation.py", "_result_to_response"),
    ("route: whoami", "discovery/api.py", "whoami"),
    ("route: book_detail", "discovery/api.py", "book_detail"),
    ("route: library_search", "library/api.py", "library_search"),
    ("library.search.search", "library/search.py", "search"),
    (
        "ORM: queries, from compiling to rows (SQLCompiler.execute_sql)",
        "django/db/models/sql/compiler.py",
        "execute_sql",
    ),
    ("ORM: of which compiling querysets into SQL (as_sql)", "django/db/models/sql/compiler.py", "as_sql"),
    ("sqlite3: statements through Django's cursor", "~", "SQLiteCursorWrapper.execute"),
    ("sqlite3: statements on the connection itself", "~", "<method 'execute' of 'sqlite3.Connection' objects>"),
    ("psycopg: statements", "psycopg/cursor.py", "execute"),
    ("open a database connection", "django/db/backends/base/base.py", "connect"),
)


def environ_for(path: str, key: str) -> dict:
    from django.test import RequestFactory

    parts = urlsplit(path)
    return RequestFactory()._base_environ(
        PATH_INFO=parts.path, QUERY_STRING=parts.query, REQUEST_METHOD="GET", HTTP_AUTHORIZATION=f"Bearer {key}"
    )


def call(app, environ: dict) -> bytes:
    status = {}

    def start_response(line, headers):
        status["line"] = line

    body = app(dict(environ), start_response)
    try:
        data = b"".join(body)
    finally:
        if hasattr(body, "close"):
            body.close()
    assert status["line"].startswith("200"), (status, data[:200])
    return data


def main(argv=None) -> None:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("Where an API request's time goes (in-process)", args)
    vendor = common.setup_django("profile")

    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connections
    from django.test import override_settings

    from bench.bench_search import populate
    from bench.data import build_book
    from discovery.access import CAPABILITIES
    from novelgraph.core.services import api_key_create

    text = common.ZipfText(common.SEED)
    populate(vendor, args.chunks, text)
    queries = common.make_queries(text, 200)
    bench = build_book("profile", claims=50, scratchpad=20, observations=10, text=text)
    _, key = api_key_create(owner=bench.author, role="author", name="profile")
    connections.close_all()

    os.environ["BENCH_CAPABILITIES"] = json.dumps(
        {role: sorted(c.value for c in caps) for role, caps in CAPABILITIES.items()}
    )
    from discovery.selectors import VIEW_PAGE

    os.environ["BENCH_VIEW_PAGE"] = str(VIEW_PAGE)
    if vendor == "sqlite":
        os.environ["BENCH_SQLITE_PATH"] = str(settings.DATABASES["default"]["NAME"])
    from bench import floor_wsgi

    ours = WSGIHandler()
    # The same app without one lever each: Django's own browser middleware for every request, and a new
    # database connection for every request (as with CONN_MAX_AGE 0: closed when the request finishes).
    django_own = {ours: theirs for theirs, ours in settings.BROWSER_ONLY_MIDDLEWARE.items()}
    with override_settings(MIDDLEWARE=[django_own.get(m, m) for m in settings.MIDDLEWARE]):
        without_skip = WSGIHandler()

    def without_persistence(environ):
        data = call(ours, environ)
        connections.close_all()
        return data

    routes = {
        "GET /api/v1/me": ["/api/v1/me"],
        "GET /api/v1/books/{id}": [f"/api/v1/books/{bench.book.pk}"],
        "GET /api/v1/library/search": [f"/api/v1/library/search?q={quote(q)}" for q in queries],
    }
    for label, paths in routes.items():
        environs = [environ_for(paths[i % len(paths)], key) for i in range(args.requests)]
        for environ in environs[:50]:  # warm both
            call(ours, environ)
            call(floor_wsgi.app, environ)
        variants = [
            (common.Samples("floor (bench.floor_wsgi)"), lambda e: call(floor_wsgi.app, e)),
            (common.Samples("ours"), lambda e: call(ours, e)),
            (common.Samples("ours with Django's browser middleware"), lambda e: call(without_skip, e)),
            (common.Samples("ours with a new connection per request"), without_persistence),
        ]
        common.interleaved(variants, environs, rounds=args.rounds)
        floor_samples = variants[0][0]
        common.print_title(f"{label} on {vendor}, in-process, {args.requests} requests x {args.rounds} rounds")
        print(f"  {'variant':<44} {'us/request':>10}  x floor (min, max over rounds)")
        for samples, _ in variants:
            ratio = common.spread(common.round_ratios(samples, floor_samples))
            print(f"  {samples.label:<44} {samples.median_ms * 1000:>10.0f}  {common.spread_text(ratio)}")
        profiler = cProfile.Profile()
        profiler.enable()
        for environ in environs:
            call(ours, environ)
        profiler.disable()
        stats = pstats.Stats(profiler, stream=io.StringIO()).stats
        whole = None
        print(f"  {'part (cProfile, cumulative)':<58} {'us/request':>10} {'share':>7}")
        for part, suffix, name in PARTS:
            total = sum(
                ct
                for (file, _, func), (_, _, _, ct, _) in stats.items()
                if file.endswith(suffix) and (func == name or (suffix == "~" and name in func))
            )
            if not total:
                continue
            per_request = total / len(environs) * 1e6
            whole = whole or per_request
            print(f"  {part:<58} {per_request:>10.0f} {per_request / whole:>7.0%}")
    print()
    print(f"  (cProfile inflates every call; the shares are what to read. {time.strftime('%Y-%m-%d %H:%M')})")


if __name__ == "__main__":
    main()
