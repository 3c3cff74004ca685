"""A bounded HTTP load generator for 127.0.0.1 only: a fixed number of GETs at a fixed concurrency.

    python -m bench.http_load --port 8123 --requests 500 --concurrency 8 --header "Authorization: Bearer x" \
        /api/v1/library/search?q=a /api/v1/library/search?q=b

Paths are requested in turn (round robin). Prints one JSON object: requests, errors, seconds, rps, p50/p99
in milliseconds, and the first few error descriptions. It only ever connects to the loopback address and
stops by itself after the fixed count (or after ``--timeout`` seconds overall).

The client shares the machine's cores with the servers it measures, so it is kept lean: each request is
prebuilt bytes on a fresh socket (gunicorn's sync workers close the connection after every response), read
to the end, with only the status line parsed. Whatever it still costs is paid equally by our app and its floor,
which narrows their ratio: the figures are a lower bound of the true ratio.
"""

from __future__ import annotations

import argparse
import json
import socket
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


def request_bytes(path: str, port: int, headers: dict) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: {HOST}:{port}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def fetch(port: int, payload: bytes) -> int:
    """Send one request and read the whole response; returns the status code."""
    with socket.create_connection((HOST, port), timeout=30) as sock:
        sock.sendall(payload)
        first = sock.recv(65536)
        while sock.recv(65536):
            pass
    return int(first[9:12])


def run(port: int, paths: list[str], total: int, concurrency: int, headers: dict, timeout: float) -> dict:
    payloads = [request_bytes(path, port, headers) for path in paths]
    lock = threading.Lock()
    state = {"next": 0}
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + timeout

    def worker() -> None:
        while True:
            with lock:
                index = state["next"]
                if index >= total or time.monotonic() > deadline:
                    break
                state["next"] += 1
            payload = payloads[index % len(payloads)]
            start = time.perf_counter()
            try:
                status = fetch(port, payload)
                ok, detail = 200 <= status < 300, f"{status} {paths[index % len(paths)]}"
            except (OSError, ValueError) as exc:
                ok, detail = False, f"{exc.__class__.__name__}: {exc} {paths[index % len(paths)]}"
            elapsed = time.perf_counter() - start
            with lock:
                latencies.append(elapsed)
                if not ok:
                    errors.append(detail)

    started, cpu_started = time.perf_counter(), time.process_time()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    client_cpu = time.process_time() - cpu_started
    return {
        "requests": len(latencies),
        "errors": len(errors),
        "error_samples": errors[:5],
        "seconds": seconds,
        "rps": len(latencies) / seconds if seconds else 0.0,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "mean_ms": statistics.mean(latencies) * 1000 if latencies else float("nan"),
        "client_cpu_ms_per_request": client_cpu * 1000 / len(latencies) if latencies else float("nan"),
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
