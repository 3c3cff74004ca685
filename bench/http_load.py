"""A bounded HTTP load generator for 127.0.0.1 only: a fixed number of GETs at a fixed concurrency.

    python -m bench.http_load --port 8123 --requests 500 --concurrency 8 --header "Authorization: Bearer x" \
        /api/v1/library/search?q=a /api/v1/library/search?q=b

Paths are requested in turn (round robin). Prints one JSON object: requests, errors, seconds, rps, p50/p99
in milliseconds, and the first few error descriptions. It only ever connects to the loopback address and
stops by itself after the fixed count (or after ``--timeout`` seconds overall).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import threading
import time

HOST = "127.0.0.1"  # loopback only, by design


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def run(port: int, paths: list[str], total: int, concurrency: int, headers: dict, timeout: float) -> dict:
    lock = threading.Lock()
    state = {"next": 0}
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + timeout

    def worker() -> None:
        conn = http.client.HTTPConnection(HOST, port, timeout=30)
        while True:
            with lock:
                index = state["next"]
                if index >= total or time.monotonic() > deadline:
                    break
                state["next"] += 1
            path = paths[index % len(paths)]
            start = time.perf_counter()
            try:
                conn.request("GET", path, headers=headers)
                response = conn.getresponse()
                response.read()
                ok = 200 <= response.status < 300
                detail = f"{response.status} {path}"
                if response.getheader("connection", "").lower() == "close":
                    conn.close()
            except (OSError, http.client.HTTPException) as exc:
                ok, detail = False, f"{exc.__class__.__name__}: {exc} {path}"
                conn.close()
                conn = http.client.HTTPConnection(HOST, port, timeout=30)
            elapsed = time.perf_counter() - start
            with lock:
                latencies.append(elapsed)
                if not ok:
                    errors.append(detail)
        conn.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    return {
        "requests": len(latencies),
        "errors": len(errors),
        "error_samples": errors[:5],
        "seconds": seconds,
        "rps": len(latencies) / seconds if seconds else 0.0,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "mean_ms": statistics.mean(latencies) * 1000 if latencies else float("nan"),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--header", action="append", default=[], help='"Name: value"')
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    headers = dict(h.split(": ", 1) for h in args.header)
    print(json.dumps(run(args.port, args.paths, args.requests, args.concurrency, headers, args.timeout)))


if __name__ == "__main__":
    main()
