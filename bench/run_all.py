"""Run every benchmark, each in its own process (a fresh Django and a fresh bench database), then summarise.

    python -m bench.run_all [--size small|medium|large] [--only NAME[,NAME...]]

``small`` (the default, what ``make bench`` runs) finishes in a few minutes on 2 cores; ``large`` uses the
sizes of issue 8 (100,000 chunks, 5,000 claims, 20,000 decisions, a 5 MB source). With ``DATABASE_URL`` set,
the benches run against a separate ``novelgraph_bench`` database on that PostgreSQL server
(``novelgraph_bench_<NOVELGRAPH_TEST_DB_ID>`` when that is set, so parallel checkouts do not drop each other's).
The exit status is non-zero only when a bench crashed; a missed bar is printed, not fatal.

Each run's figures (every ratio with its spread over the interleaved rounds, and the load average) are merged
into ``bench/RESULTS.json`` under ``<backend>/<size>``, so a SQLite run and a PostgreSQL run sit side by side,
and ``bench/RESULTS.svg`` plots every ratio against its bar.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime

from bench import common, plot

RESULTS_JSON = common.ROOT / "bench" / "RESULTS.json"
RESULTS_SVG = common.ROOT / "bench" / "RESULTS.svg"

BENCHES = (
    "decision_log",
    "search",
    "dossier",
    "ingest",
    "query_counts",
    "http",
    "agents",
    "discovery",
    "bounded",
    "key_lookup",
    "continuity",
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=common.SIZES, default="small")
    parser.add_argument("--only", default="", help="comma-separated bench names: " + ", ".join(BENCHES))
    parser.add_argument("--table", action="store_true", help="print bench/RESULTS.json as Markdown tables, run nothing")
    args = parser.parse_args(argv)
    if args.table:
        print(markdown(json.loads(RESULTS_JSON.read_text())))
        return 0
    chosen = [name.strip() for name in args.only.split(",") if name.strip()] or list(BENCHES)
    unknown = sorted(set(chosen) - set(BENCHES))
    if unknown:
        parser.error(f"unknown bench {', '.join(unknown)}; choose from {', '.join(BENCHES)}")

    outcomes: list[tuple[str, int, float]] = []
    load = common.LoadSampler()
    for name in chosen:
        (common.RESULTS_DIR / f"{name}.json").unlink(missing_ok=True)
        start = time.monotonic()
        print(f"\n######## bench_{name} --size {args.size}", flush=True)
        code = subprocess.call([sys.executable, "-m", f"bench.bench_{name}", "--size", args.size], cwd=common.ROOT)
        outcomes.append((name, code, time.monotonic() - start))

    print("\n######## summary")
    common.print_machine()
    load_average = load.summary()
    print(f"  load average (1 min) during the run: {common.spread_text(load_average, unit='', digits=1)}")
    failed = 0
    results = {}
    for name, code, seconds in outcomes:
        path = common.RESULTS_DIR / f"{name}.json"
        status = "ok" if code == 0 else f"CRASHED (exit {code})"
        failed += code != 0
        print(f"\n{name}: {status} in {seconds:.0f}s")
        if code == 0 and path.exists():
            result = json.loads(path.read_text())
            results[name] = {**result, "seconds": round(seconds, 1)}
            for ratio in result.get("ratios", []):
                verdict = "REPORT" if ratio["limit"] is None else ("HOLDS" if ratio["holds"] else "MISSED")
                bar = "" if ratio["limit"] is None else f" (bar {ratio['limit']}x)"
                print(f"  {verdict:<6} {ratio['label']}: {common.spread_text(ratio)}{bar}")
            for bar in result["bars"]:
                verdict = "HOLDS" if bar["holds"] else "MISSED"
                value = f"{bar['value']:.3f}{bar['unit']}"
                print(f"  {verdict:<6} {bar['label']}: {value} (bar {bar['limit']}{bar['unit']})")
            for note in result["notes"]:
                print(f"  note   {note}")
    if results:
        record(args.size, load_average, results)
        print(f"\nwritten: {RESULTS_JSON.relative_to(common.ROOT)}, {RESULTS_SVG.relative_to(common.ROOT)}")
    return 1 if failed else 0


def record(size: str, load_average: dict, results: dict) -> None:
    """Merge this run into bench/RESULTS.json (benches not run keep their last figures) and redraw the plot."""
    backend = "postgresql" if os.environ.get("DATABASE_URL") else "sqlite"
    stored = json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.exists() else {}
    stored.setdefault(
        "about",
        "Written by `make bench` (bench/run_all.py). runs: <backend>/<size>; each bench's ratios to its floor carry "
        "min, median and max over interleaved rounds (per_round lists them); load_average is the 1-minute load "
        "sampled during the run.",
    )
    run = stored.setdefault("runs", {}).setdefault(f"{backend}/{size}", {"benches": {}})
    run["benches"].update(results)
    run.update(
        {
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "git": common.git_revision(),
            "machine": common.machine_info(),
            "load_average": load_average,
        }
    )
    RESULTS_JSON.write_text(json.dumps(stored, indent=1, default=str) + "\n")
    plot.write_svg(stored, RESULTS_SVG)


def markdown(stored: dict) -> str:
    """Every ratio of every run as Markdown tables (for bench/RESULTS.md)."""
    out = []
    for key in sorted(stored.get("runs", {})):
        run = stored["runs"][key]
        out.append(
            f"\n#### {key} (last run {run.get('at', '?')}, git {run.get('git', '?')}, "
            f"{run.get('machine', {}).get('nproc', '?')} cores)\n"
        )
        out.append("| bench | ratio to its floor | median | min | max | rounds | bar | holds | load during the bench |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for name, bench in run.get("benches", {}).items():
            bench_load = bench.get("load_average")
            load_text = (
                f"{bench_load['median']:.1f} ({bench_load['min']:.1f}-{bench_load['max']:.1f})" if bench_load else "-"
            )
            for r in bench.get("ratios", []):
                bar = "-" if r["limit"] is None else f"{r['limit']:g}x"
                holds = "-" if r["limit"] is None else ("yes" if r["holds"] else "**no**")
                out.append(
                    f"| {name} | {r['label']} | **{r['median']:.2f}x** | {r['min']:.2f} | {r['max']:.2f} "
                    f"| {r['rounds']} | {bar} | {holds} | {load_text} |"
                )
            for b in bench.get("bars", []):
                if not any(r["label"] == b["label"] for r in bench.get("ratios", [])):
                    holds = "yes" if b["holds"] else "**no**"
                    out.append(
                        f"| {name} | {b['label']} | **{b['value']:.3g}{b['unit']}** | - | - | 1 "
                        f"| {b['limit']:g}{b['unit']} | {holds} | {load_text} |"
                    )
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
