"""Run every benchmark, each in its own process (a fresh Django and a fresh bench database), then summarise.

    python -m bench.run_all [--size small|medium|large] [--only NAME[,NAME...]]

``small`` (the default, what ``make bench`` runs) finishes in a few minutes on 2 cores; ``large`` uses the
sizes of issue 8 (100,000 chunks, 5,000 claims, 20,000 decisions, a 5 MB source). With ``DATABASE_URL`` set,
the benches run against a separate ``novelgraph_bench`` database on that PostgreSQL server.
The exit status is non-zero only when a bench crashed; a missed bar is printed, not fatal.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from bench import common

BENCHES = (
    "decision_log",
    "search",
    "dossier",
    "ingest",
    "query_counts",
    "http",
    "agents",
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=common.SIZES, default="small")
    parser.add_argument("--only", default="", help="comma-separated bench names: " + ", ".join(BENCHES))
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()] or list(BENCHES)
    unknown = sorted(set(chosen) - set(BENCHES))
    if unknown:
        parser.error(f"unknown bench {', '.join(unknown)}; choose from {', '.join(BENCHES)}")

    outcomes: list[tuple[str, int, float]] = []
    for name in chosen:
        (common.RESULTS_DIR / f"{name}.json").unlink(missing_ok=True)
        start = time.monotonic()
        print(f"\n######## bench_{name} --size {args.size}", flush=True)
        code = subprocess.call([sys.executable, "-m", f"bench.bench_{name}", "--size", args.size], cwd=common.ROOT)
        outcomes.append((name, code, time.monotonic() - start))

    print("\n######## summary")
    common.print_machine()
    failed = 0
    for name, code, seconds in outcomes:
        path = common.RESULTS_DIR / f"{name}.json"
        status = "ok" if code == 0 else f"CRASHED (exit {code})"
        failed += code != 0
        print(f"\n{name}: {status} in {seconds:.0f}s")
        if code == 0 and path.exists():
            result = json.loads(path.read_text())
            for bar in result["bars"]:
                verdict = "HOLDS" if bar["holds"] else "MISSED"
                value = f"{bar['value']:.3f}{bar['unit']}"
                print(f"  {verdict:<6} {bar['label']}: {value} (bar {bar['limit']}{bar['unit']})")
            for note in result["notes"]:
                print(f"  note   {note}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
