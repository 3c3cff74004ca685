"""HTTP under load: gunicorn on 127.0.0.1 serving the app, a bounded load from a second process.

Routes: the library search API (rotating through the fixed queries), a book's discovery view (API) and the
review inbox page with 500 pending decisions (logged in by session cookie). The floor for the search route
is the raw ``sqlite3`` (or ``psycopg``) search behind a minimal WSGI app (``bench.floor_wsgi``), served by
the same gunicorn settings. Printed per route: requests/s, p50, p99 and the error count, which must be 0.
The server runs with DEBUG off against the bench database; the load client (``bench.http_load``) only
connects to the loopback address and stops after a fixed number of requests.

    python -m bench.bench_http --chunks 100000 --requests 2000
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from urllib.parse import quote

from bench import common

SIZES = {
    "small": {"chunks": 20_000, "pending": 500, "requests": 400, "concurrency": 8},
    "medium": {"chunks": 50_000, "pending": 500, "requests": 1_000, "concurrency": 8},
    "large": {"chunks": 100_000, "pending": 500, "requests": 2_000, "concurrency": 8},
}
SECRET = "bench-only-secret-key-not-for-production-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(common.bench_environment("http"))
    env.update(
        {
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": SECRET,
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DJANGO_SECURE_SSL_REDIRECT": "0",
            "DJANGO_STATIC_ROOT": str(common.BENCH_DIR / "static"),
            "DJANGO_LOG_LEVEL": "ERROR",
        }
    )
    if "NOVELGRAPH_SQLITE_PATH" in env:
        env["BENCH_SQLITE_PATH"] = env["NOVELGRAPH_SQLITE_PATH"]
    return env


class Server:
    """gunicorn on a free loopback port; stopped (by its own pid) on exit."""

    def __init__(self, app: str, workers: int, name: str):
        self.port = free_port()
        self.log = open(common.BENCH_DIR / f"gunicorn-{name}.log", "w")  # noqa: SIM115
        gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
        self.process = subprocess.Popen(
            [gunicorn, app, "--bind", f"127.0.0.1:{self.port}", "--workers", str(workers), "--log-level", "warning"],
            cwd=common.ROOT,
            env=server_env(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def __enter__(self) -> Server:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.__exit__()
                raise RuntimeError(f"gunicorn exited; see {self.log.name}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/login/", timeout=2).read()
                return self
            except urllib.error.HTTPError as exc:
                self.__exit__()
                raise RuntimeError(f"the login page answered {exc.code}; see {self.log.name}") from exc
            except OSError:
                time.sleep(0.3)
        self.__exit__()
        raise RuntimeError(f"gunicorn did not answer within 60s; see {self.log.name}")

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def load(port: int, paths: list[str], requests: int, concurrency: int, headers: list[str]) -> dict:
    command = [sys.executable, "-m", "bench.http_load", "--port", str(port), "--requests", str(requests)]
    command += ["--concurrency", str(concurrency)]
    for header in headers:
        command += ["--header", header]
    output = subprocess.run(command + paths, cwd=common.ROOT, capture_output=True, text=True, check=True).stdout
    return json.loads(output)


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    os.environ["DJANGO_SECRET_KEY"] = SECRET  # session cookies must match the server's key
    common.header("HTTP under load", args)
    vendor = common.setup_django("http")
    report = common.Report("http", args.size)

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from bench.bench_search import populate
    from bench.data import build_book
    from discovery.access import api_key_create

    text = common.ZipfText(common.SEED)
    populate(vendor, args.chunks, text)
    queries = common.make_queries(text, 200)
    bench = build_book(
        "http", claims=500, scratchpad=200, observations=50, turns=40, pending=args.pending, thrusts=6, text=text
    )
    _, raw_key = api_key_create(owner=bench.author, role="author", name="bench")
    session = SessionStore()
    session[SESSION_KEY] = str(bench.author.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = bench.author.get_session_auth_hash()
    session.create()
    # DEBUG off serves hashed static names from a manifest: collect them with the server's settings.
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=common.ROOT,
        env=server_env(),
        check=True,
    )
    from django.db import connections

    connections.close_all()

    workers = 2 * (os.cpu_count() or 1) + 1
    bearer = [f"Authorization: Bearer {raw_key}"]
    cookie = [f"Cookie: {settings.SESSION_COOKIE_NAME}={session.session_key}"]
    search_paths = [f"/api/v1/library/search?q={quote(q)}" for q in queries]
    routes = [
        ("GET /api/v1/library/search (ours)", search_paths, bearer),
        ("GET /api/v1/books/{id}/discovery", [f"/api/v1/books/{bench.book.pk}/discovery"], bearer),
        (f"GET /review/ (inbox, {args.pending} pending)", ["/review/"], cookie),
    ]
    results = {}
    print(
        f"  gunicorn: {workers} sync workers; load: {args.requests} requests per route, concurrency {args.concurrency}"
    )
    with Server("novelgraph.wsgi:application", workers, "app") as server:
        for label, paths, headers in routes:
            load(server.port, paths[:20], min(50, args.requests), args.concurrency, headers)  # warm up
            results[label] = load(server.port, paths, args.requests, args.concurrency, headers)
    with Server("bench.floor_wsgi:app", workers, "floor") as server:
        floor_paths = [f"/?q={quote(q)}" for q in queries]
        load(server.port, floor_paths[:20], min(50, args.requests), args.concurrency, [])
        results["floor: raw search behind a bare WSGI app"] = load(
            server.port, floor_paths, args.requests, args.concurrency, []
        )

    common.print_title(f"HTTP on {vendor}, gunicorn {workers} workers, {args.chunks} chunks")
    header = f"{'route':<46} {'requests':>8} {'errors':>6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}"
    print(header)
    print("-" * len(header))
    for label, result in results.items():
        print(
            f"{label:<46} {result['requests']:>8} {result['errors']:>6} {result['rps']:>8.1f}"
            f" {result['p50_ms']:>8.2f} {result['p99_ms']:>8.2f}"
        )
        for sample in result["error_samples"]:
            print(f"    error: {sample}")
    floor = results["floor: raw search behind a bare WSGI app"]
    ours = results["GET /api/v1/library/search (ours)"]
    print(f"  search route: {floor['rps'] / ours['rps']:.2f}x the floor's time per request (req/s ratio)")
    errors = sum(r["errors"] for r in results.values())
    report.figures.update({"vendor": vendor, "workers": workers, "results": results})
    report.bar("HTTP errors across all routes", errors, 0, unit="")
    report.note(
        f"search {ours['rps']:.0f} req/s (p50 {ours['p50_ms']:.1f} ms, p99 {ours['p99_ms']:.1f} ms) vs floor "
        f"{floor['rps']:.0f} req/s (p50 {floor['p50_ms']:.1f} ms): {floor['rps'] / ours['rps']:.2f}x"
    )
    report.save()
    return report


if __name__ == "__main__":
    main()
