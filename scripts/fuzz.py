"""`make fuzz`: schemathesis over every API operation (author, Sol and Luna keys) and every browser form,
with many examples and a random seed, on SQLite and on PostgreSQL. Prints the seed for replay and, per
database, how many requests were sent and how many answered 5xx (the goal: none).

    python scripts/fuzz.py [--examples 50] [--seed N] [--databases sqlite,postgresql] [--postgres-url URL]

Replay a run: the same --seed and --examples (``make fuzz FUZZ_SEED=N FUZZ_EXAMPLES=50``).
Exit status: 0 when every pytest run passed and no request answered 5xx.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/novelgraph"
TESTS = ["tests/test_api_fuzz.py", "tests/test_forms_fuzz.py"]


def run(database: str, *, examples: int, seed: int, postgres_url: str, jobs: int) -> tuple[int, Counter]:
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "answers.log"
        env = {**os.environ}
        env.update(
            NOVELGRAPH_FUZZ_EXAMPLES=str(examples),
            NOVELGRAPH_FUZZ_SEED=str(seed),
            NOVELGRAPH_FUZZ_ROLES="author,sol,luna",
            NOVELGRAPH_FUZZ_REPORT=str(report),
            NOVELGRAPH_TEST_DB_ID=os.environ.get("NOVELGRAPH_TEST_DB_ID", "novelgraph") + "_fuzz",
        )
        if database == "postgresql":
            env["DATABASE_URL"] = postgres_url
        else:
            env.pop("DATABASE_URL", None)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--hypothesis-seed={seed}", *TESTS]
        if jobs > 1:
            command += ["-n", str(jobs)]
        print(f"== fuzz on {database}: {' '.join(command[1:])}", flush=True)
        status = subprocess.run(command, cwd=ROOT, env=env).returncode
        answers: Counter = Counter()
        if report.exists():
            for line in report.read_text().splitlines():
                kind, code = line.split()
                answers[kind, "5xx" if code.startswith("5") else "other"] += 1
        return status, answers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=50, help="examples per API operation and per form")
    parser.add_argument("--seed", type=int, default=None, help="replay a run (default: a random seed, printed)")
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--postgres-url", default=os.environ.get("FUZZ_DATABASE_URL") or DEFAULT_POSTGRES)
    parser.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    replay = f"make fuzz FUZZ_SEED={seed} FUZZ_EXAMPLES={args.examples}"
    print(f"fuzz seed {seed}, {args.examples} examples (replay: {replay})", flush=True)

    failed = False
    lines = []
    for database in [d.strip() for d in args.databases.split(",") if d.strip()]:
        status, answers = run(
            database, examples=args.examples, seed=seed, postgres_url=args.postgres_url, jobs=args.jobs
        )
        api = answers["api", "5xx"] + answers["api", "other"]
        forms = answers["forms", "5xx"] + answers["forms", "other"]
        server_errors = answers["api", "5xx"] + answers["forms", "5xx"]
        lines.append(
            f"{database}: {api} API requests and {forms} form submissions, {server_errors} answered 5xx; "
            f"pytest {'passed' if status == 0 else f'FAILED (exit {status})'}"
        )
        failed = failed or status != 0 or server_errors > 0 or api == 0
    print(f"\nfuzz seed {seed}, {args.examples} examples per operation and per form, roles author, sol, luna")
    for line in lines:
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
