"""HTTP: our API against a minimal WSGI app over the same database and output, gunicorn serving both.

Three authenticated API reads, each with its floor (``bench.floor_wsgi``: the same routes answering the same
JSON from the same database with bare SQL, the bench checks that first): ``GET /api/v1/me`` and
``GET /api/v1/books/{id}`` (trivial reads: bar 4x) and ``GET /api/v1/library/search`` rotating through the
fixed queries (bar 2x). Both servers run at once under gunicorn with the same number of sync workers and the
same settings; the load client (``bench.http_load``, a separate process on the loopback address) measures
requests per second under concurrency and one request at a time, our app and the floor interleaved A, B, B, A
... for every route, round after round. Each ratio (the floor's requests per second over ours) is kept per round
with its spread. Two heavier routes (the discovery view, the review inbox by session cookie) are only loaded
to check for errors, which must be 0. The server runs with DEBUG off against the bench database.

    python -m bench.bench_http --chunks 100000 --rounds 5

``BENCH_HTTP_SERVER=uvicorn`` serves our app the README's way instead (uvicorn, ``novelgraph.asgi``, the same
number of worker processes; the floor stays a WSGI app under gunicorn) and records it as ``http_uvicorn``;
``BENCH_HTTP_ROUTES=trivial`` compares the two trivial reads only (issue 30).
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
from dataclasses import dataclass
from urllib.parse import quote

from bench import common

SIZES = {
    "small": {"chunks": 10_000, "requests": 300, "serial": 100, "rounds": 5, "concurrency": 8, "pending": 200},
    "medium": {"chunks": 50_000, "requests": 500, "serial": 150, "rounds": 5, "concurrency": 8, "pending": 500},
    "large": {"chunks": 100_000, "requests": 800, "serial": 200, "rounds": 5, "concurrency": 8, "pending": 500},
}
SECRET = "bench-only-secret-key-not-for-production-0123456789"
SERVER = os.environ.get("BENCH_HTTP_SERVER", "gunicorn")  # our app's server: gunicorn (WSGI) or uvicorn (ASGI)
ROUTES = os.environ.get("BENCH_HTTP_ROUTES", "all")  # all, or trivial (GET /me and a book)


@dataclass
class Route:
    label: str
    paths: list[str]
    bar: float


def _rounded(value):
    """An answer with its floats rounded to 6 places: the same FTS5 match ranked by the floor's differently
    shaped statement can give a BM25 score that differs in its last bits (seen once in 200 queries)."""
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
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
    env.update(extra or {})
    return env


class Server:
    """gunicorn (or uvicorn) on a free loopback port; stopped (by its own pid) on exit."""

    def __init__(
        self, app: str, workers: int, name: str, env: dict[str, str] | None = None, server: str = "gunicorn"
    ):
        self.port = free_port()
        self.log = open(common.BENCH_DIR / f"{server}-{name}.log", "w")  # noqa: SIM115
        executable = os.path.join(os.path.dirname(sys.executable), server)
        if server == "uvicorn":
            command = [executable, app, "--host", "127.0.0.1", "--port", str(self.port), "--workers", str(workers)]
            command += ["--log-level", "warning", "--no-access-log"]
        else:
            command = [executable, app, "--bind", f"127.0.0.1:{self.port}", "--workers", str(workers)]
            command += ["--log-level", "warning"]
        self.process = subprocess.Popen(
            command,
            cwd=common.ROOT,
            env=server_env(env),
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
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/me", timeout=2).read()
            except urllib.error.HTTPError as exc:
                if exc.code == 401:  # up, and refusing an unauthenticated call as it should
                    return self
                self.__exit__()
                raise RuntimeError(f"/api/v1/me answered {exc.code}; see {self.log.name}") from exc
            except OSError:
                time.sleep(0.3)
            else:
                self.__exit__()
                raise RuntimeError(f"/api/v1/me answered without a key; see {self.log.name}")
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


def fetch_json(port: int, path: str, headers: list[str]) -> object:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    for header in headers:
        name, value = header.split(": ", 1)
        request.add_header(name, value)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    os.environ["DJANGO_SECRET_KEY"] = SECRET  # session cookies must match the server's key
    common.header("HTTP: our API against a minimal WSGI app", args)
    vendor = common.setup_django("http")
    report = common.Report("http" if SERVER == "gunicorn" else f"http_{SERVER}", args.size)

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from bench.bench_search import populate
    from bench.data import build_book
    from discovery.access import CAPABILITIES
    from novelgraph.core.services import api_key_create

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

    capabilities = {
        role: sorted(c.value for c in caps) for role, caps in CAPABILITIES.items()
    }
    workers = 2 * (os.cpu_count() or 1) + 1
    bearer = [f"Authorization: Bearer {raw_key}"]
    cookie = [f"Cookie: {settings.SESSION_COOKIE_NAME}={session.session_key}"]
    compared = [
        Route("GET /api/v1/me", ["/api/v1/me"], 4.0),
        Route("GET /api/v1/books/{id}", [f"/api/v1/books/{bench.book.pk}"], 4.0),
        Route(
            f"GET /api/v1/library/search ({args.chunks:,} chunks)",
            [f"/api/v1/library/search?q={quote(q)}" for q in queries],
            2.0,
        ),
    ]
    if ROUTES == "trivial":
        compared = compared[:2]
    loaded_only = [
        ("GET /api/v1/books/{id}/discovery", [f"/api/v1/books/{bench.book.pk}/discovery"], bearer),
        (f"GET /review/ (inbox, {args.pending} pending, session cookie)", ["/review/"], cookie),
    ]
    modes = (("concurrent", args.concurrency, args.requests), ("serial", 1, args.serial))
    print(
        f"  ours under {SERVER}, the floor under gunicorn: {workers} workers each; per round and route: "
        f"{args.requests} requests at concurrency {args.concurrency}, then {args.serial} one at a time; "
        f"{args.rounds} rounds"
    )
    timings: dict = {route.label: {mode: {"ours": [], "floor": []} for mode, _, _ in modes} for route in compared}
    errors_only = {}
    differing = {}
    from discovery.selectors import VIEW_PAGE

    floor_env = {"BENCH_CAPABILITIES": json.dumps(capabilities), "BENCH_VIEW_PAGE": str(VIEW_PAGE)}
    with (
        Server(
            "novelgraph.asgi:application" if SERVER == "uvicorn" else "novelgraph.wsgi:application",
            workers,
            "app",
            server=SERVER,
        ) as ours,
        Server("bench.floor_wsgi:app", workers, "floor", floor_env) as floor,
    ):
        servers = {"ours": ours, "floor": floor}
        # Same answers, or the comparison means nothing.
        for route in compared:
            differing[route.label] = 0
            for path in route.paths:
                a, b = fetch_json(ours.port, path, bearer), fetch_json(floor.port, path, bearer)
                if _rounded(a) != _rounded(b):
                    differing[route.label] += 1
                    if os.environ.get("BENCH_SHOW_DIFF"):
                        print("DIFF", path, json.dumps(a)[:1500], "\n----\n", json.dumps(b)[:1500])
        print(f"  answers differing from the floor's: {differing}")
        for route in compared:  # warm every worker of both
            for server in servers.values():
                load(server.port, route.paths[:20], 50, args.concurrency, bearer)
        for round_no in range(args.rounds):
            order = ("ours", "floor") if round_no % 2 == 0 else ("floor", "ours")
            for route in compared:
                for mode, concurrency, count in modes:
                    for name in order:
                        result = load(servers[name].port, route.paths, count, concurrency, bearer)
                        timings[route.label][mode][name].append(result)
            load_now = os.getloadavg()[0]
            print(f"  round {round_no + 1}/{args.rounds} done (load average {load_now:.1f})", flush=True)
        for label, paths, headers in loaded_only:
            load(ours.port, paths[:5], 20, args.concurrency, headers)
            errors_only[label] = load(ours.port, paths, max(50, args.requests // 3), args.concurrency, headers)

    common.print_title(f"HTTP on {vendor}, ours under {SERVER}, {workers} workers each, {args.rounds} rounds")
    header = (
        f"{'route':<44} {'mode':<10} {'ours req/s':>11} {'floor req/s':>11} {'ours p50':>9} {'floor p50':>9}"
        f" {'client CPU':>10}"
    )
    print(header)
    print("-" * len(header))
    ratios = {}
    errors = 0
    for route in compared:
        for mode, _, _ in modes:
            ours_runs, floor_runs = timings[route.label][mode]["ours"], timings[route.label][mode]["floor"]
            errors += sum(r["errors"] for r in ours_runs + floor_runs)
            per_round = [f["rps"] / o["rps"] for o, f in zip(ours_runs, floor_runs, strict=True) if o["rps"]]
            ratios[(route.label, mode)] = (per_round, route.bar)
            ours_rps = common.spread([r["rps"] for r in ours_runs])
            floor_rps = common.spread([r["rps"] for r in floor_runs])
            ours_p50 = common.spread([r["p50_ms"] for r in ours_runs])["median"]
            floor_p50 = common.spread([r["p50_ms"] for r in floor_runs])["median"]
            client_cpu = common.spread([r["client_cpu_ms_per_request"] for r in floor_runs])["median"]
            print(
                f"{route.label:<44} {mode:<10} {ours_rps['median']:>11.1f} {floor_rps['median']:>11.1f}"
                f" {ours_p50:>8.2f}ms {floor_p50:>8.2f}ms {client_cpu:>8.3f}ms"
            )
    for label, result in errors_only.items():
        errors += result["errors"]
        print(f"{label:<44} {'loaded':<10} {result['rps']:>11.1f} {'-':>11} {result['p50_ms']:>8.2f}ms")
        for sample in result["error_samples"]:
            print(f"    error: {sample}")
    print()
    for (label, mode), (per_round, bar) in ratios.items():
        what = "under concurrency" if mode == "concurrent" else "one at a time"
        report.ratio(f"{label}, {what} (req/s)", per_round, bar)
    report.figures.update(
        {
            "vendor": vendor,
            "workers": workers,
            "concurrency": args.concurrency,
            "chunks": args.chunks,
            "answers_differing": differing,
            "timings": {
                label: {
                    mode: {
                        name: [
                            {k: r[k] for k in ("rps", "p50_ms", "p99_ms", "errors", "client_cpu_ms_per_request")}
                            for r in runs
                        ]
                        for name, runs in by_name.items()
                    }
                    for mode, by_name in by_mode.items()
                }
                for label, by_mode in timings.items()
            },
            "loaded_only": {
                label: {k: r[k] for k in ("requests", "rps", "p50_ms", "p99_ms", "errors")}
                for label, r in errors_only.items()
            },
        }
    )
    report.bar("HTTP errors across all routes", errors, 0, unit="")
    if any(differing.values()):
        report.note(f"answers differing from the floor: {differing}")
    report.save()
    return report


if __name__ == "__main__":
    main()
