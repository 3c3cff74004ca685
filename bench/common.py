"""The benchmark harness: timing, statistics, a fixed table format, synthetic text and a bench database.

Every bench script measures our code and a baseline (the floor) on the same data in the same run and prints
the medians, the p95 and the ratio. Data come from a fixed seed, so two runs measure the same work.

The benches never touch the development database: :func:`setup_django` points Django at
``var/bench/<name>.sqlite3`` (recreated each run) or, when ``DATABASE_URL`` is set, at a separate PostgreSQL
database ``novelgraph_bench`` (``novelgraph_bench_<NOVELGRAPH_TEST_DB_ID>`` when that is set; dropped and
recreated each run), and migrates it.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import platform
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "var" / "bench"
RESULTS_DIR = BENCH_DIR / "results"
# Several checkouts share one PostgreSQL server: each bench run drops and recreates its database, so the name
# carries NOVELGRAPH_TEST_DB_ID as the test databases do (two engineers' runs dropped each other's otherwise).
_RUN_ID = re.sub(r"\W", "_", os.environ.get("NOVELGRAPH_TEST_DB_ID", "")).lower()
BENCH_PG_DATABASE = f"novelgraph_bench_{_RUN_ID}" if _RUN_ID else "novelgraph_bench"
SEED = 20_260_808
SIZES = ("small", "medium", "large")


# --- Timing and statistics ---------------------------------------------------


def now_ns() -> int:
    return time.perf_counter_ns()


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of the values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


@dataclass
class Samples:
    """Durations of repeated calls, in nanoseconds."""

    label: str
    ns: list[int] = field(default_factory=list)
    round_ends: list[int] = field(default_factory=list)  # len(ns) after each interleaved round

    def end_round(self) -> None:
        self.round_ends.append(len(self.ns))

    def round_medians_ms(self) -> list[float]:
        """The median of each interleaved round (the whole run as one round when none were marked)."""
        ends = self.round_ends or [len(self.ns)]
        starts = [0, *ends[:-1]]
        return [statistics.median(self.ns[a:b]) / 1e6 for a, b in zip(starts, ends, strict=True) if b > a]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.ns) / 1e6 if self.ns else float("nan")

    @property
    def p95_ms(self) -> float:
        return percentile(self.ns, 95) / 1e6

    @property
    def p99_ms(self) -> float:
        return percentile(self.ns, 99) / 1e6

    @property
    def total_s(self) -> float:
        return sum(self.ns) / 1e9


def time_each(label: str, fn: Callable, args: Iterable, *, warmup: int = 1) -> Samples:
    """Call ``fn(arg)`` for each arg and record each call's duration (after ``warmup`` untimed passes)."""
    args = list(args)
    for _ in range(warmup):
        for arg in args:
            fn(arg)
    samples = Samples(label)
    for arg in args:
        start = time.perf_counter_ns()
        fn(arg)
        samples.ns.append(time.perf_counter_ns() - start)
    return samples


def time_repeat(label: str, fn: Callable[[], object], *, repeat: int, warmup: int = 1) -> Samples:
    """Call ``fn()`` ``repeat`` times (after ``warmup`` untimed calls) and record each duration."""
    for _ in range(warmup):
        fn()
    samples = Samples(label)
    for _ in range(repeat):
        start = time.perf_counter_ns()
        fn()
        samples.ns.append(time.perf_counter_ns() - start)
    return samples


def interleaved(pairs: Sequence[tuple[Samples, Callable[[object], object]]], args: Sequence, *, rounds: int = 3):
    """Time several implementations on the same arguments, interleaved round by round.

    Interleaving keeps a machine's drift (another process, frequency scaling) from favouring whichever
    implementation ran first. Each call's duration is appended to its Samples.
    """
    for _ in range(rounds):
        for samples, fn in pairs:
            for arg in args:
                start = time.perf_counter_ns()
                fn(arg)
                samples.ns.append(time.perf_counter_ns() - start)
            samples.end_round()


def round_ratios(ours: Samples, floor: Samples) -> list[float]:
    """Our median over the floor's, round by round (both timed in the same interleaved rounds)."""
    return [a / b for a, b in zip(ours.round_medians_ms(), floor.round_medians_ms(), strict=True) if b]


def spread(values: Sequence[float]) -> dict:
    """min, median and max of a figure measured once per round."""
    values = list(values)
    if not values:
        return {"min": float("nan"), "median": float("nan"), "max": float("nan"), "rounds": 0}
    return {"min": min(values), "median": statistics.median(values), "max": max(values), "rounds": len(values)}


def spread_text(values: Sequence[float] | dict, unit: str = "x", digits: int = 2) -> str:
    s = values if isinstance(values, dict) else spread(values)
    low, mid, high = (f"{s[k]:.{digits}f}" for k in ("min", "median", "max"))
    return f"{mid}{unit} (min {low}, max {high}, {s['rounds']} rounds)"


# --- Load average --------------------------------------------------------------


class LoadSampler:
    """The 1-minute load average, sampled every few seconds while a bench runs (other work on the machine
    moves absolute times; the ratios are interleaved, but the reader should know how loaded it was)."""

    def __init__(self, every: float = 2.0):
        import threading

        self.samples: list[float] = [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)
        self._thread.start()

    def _run(self, every: float) -> None:
        while not self._stop.wait(every):
            self.samples.append(os.getloadavg()[0])

    def summary(self) -> dict:
        self.samples.append(os.getloadavg()[0])
        return {**spread(self.samples), "samples": len(self.samples), "cores": os.cpu_count()}


# --- Printing: one fixed table format ------------------------------------------

HEADER = f"{'case':<46} {'n':>7} {'median ms':>11} {'p95 ms':>10} {'x floor':>8}"


def print_title(title: str) -> None:
    print()
    print(f"== {title}")


def print_timings(rows: Sequence[Samples], floor: Samples | None = None) -> None:
    """Print timings in the fixed format; the ratio is each median over the floor's median."""
    print(HEADER)
    print("-" * len(HEADER))
    for row in rows:
        ratio = row.median_ms / floor.median_ms if floor and floor.median_ms else float("nan")
        ratio_text = "floor" if row is floor else f"{ratio:8.2f}"
        print(f"{row.label:<46} {len(row.ns):>7} {row.median_ms:>11.3f} {row.p95_ms:>10.3f} {ratio_text:>8}")


def print_rates(rows: Sequence[tuple[str, int, float]], floor_label: str) -> None:
    """Rows of (label, items, seconds); the ratio is the floor's rate over each row's rate (x slower)."""
    header = f"{'case':<46} {'items':>9} {'seconds':>9} {'items/s':>12} {'x floor':>8}"
    print(header)
    print("-" * len(header))
    rates = {label: items / seconds if seconds else float("inf") for label, items, seconds in rows}
    floor_rate = rates[floor_label]
    for label, items, seconds in rows:
        ratio_text = "floor" if label == floor_label else f"{floor_rate / rates[label]:8.2f}"
        print(f"{label:<46} {items:>9} {seconds:>9.3f} {rates[label]:>12,.0f} {ratio_text:>8}")


def print_kv(rows: Sequence[tuple[str, object]]) -> None:
    width = max((len(k) for k, _ in rows), default=10)
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")


# --- Results and bars ----------------------------------------------------------


@dataclass
class Report:
    """What one bench measured, printed as it goes and saved for run_all's summary."""

    name: str
    size: str
    figures: dict = field(default_factory=dict)
    bars: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ratios: list[dict] = field(default_factory=list)
    load: LoadSampler = field(default_factory=LoadSampler, repr=False)

    def ratio(self, label: str, per_round: Sequence[float], limit: float | None = None) -> dict:
        """A ratio to its floor measured once per interleaved round: kept with its spread (min, median, max),
        and checked at the median against its bar when it has one."""
        entry = {"label": label, **spread(per_round), "per_round": list(per_round), "limit": limit}
        if limit is not None:
            entry["holds"] = entry["median"] <= limit
        self.ratios.append(entry)
        verdict = "" if limit is None else f" (bar <= {limit}x) -> {'HOLDS' if entry['holds'] else 'MISSED'}"
        print(f"  ratio: {label}: {spread_text(entry)}{verdict}")
        return entry

    def bar(self, label: str, value: float, limit: float, *, unit: str = "x", lower_is_better: bool = True) -> bool:
        holds = value <= limit if lower_is_better else value >= limit
        self.bars.append({"label": label, "value": value, "limit": limit, "unit": unit, "holds": holds})
        verdict = "HOLDS" if holds else "MISSED"
        relation = "<=" if lower_is_better else ">="
        print(f"  bar: {label}: {value:.3f}{unit} (bar {relation} {limit}{unit}) -> {verdict}")
        return holds

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"  note: {text}")

    def save(self) -> Path:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        path = RESULTS_DIR / f"{self.name}.json"
        payload = {
            "name": self.name,
            "size": self.size,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": machine_info(),
            "load_average": self.load.summary(),
            "figures": self.figures,
            "ratios": self.ratios,
            "bars": self.bars,
            "notes": self.notes,
        }
        path.write_text(json.dumps(payload, indent=2, default=str))
        return path


# --- Arguments -----------------------------------------------------------------


def parse_args(description: str, sizes: dict[str, dict[str, int]], argv: Sequence[str] | None = None):
    """``--size small|medium|large`` picks defaults; each parameter can be overridden by its own flag."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--size", choices=SIZES, default="small")
    for key in sizes["small"]:
        parser.add_argument(f"--{key.replace('_', '-')}", dest=key, type=int, default=None)
    args = parser.parse_args(argv)
    for key, value in sizes[args.size].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


# --- Machine -------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def fts5_available() -> bool:
    try:
        sqlite3.connect(":memory:").execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return True
    except sqlite3.Error:
        return False


def pg_version(url: str | None = None) -> str | None:
    url = url or os.environ.get("DATABASE_URL")
    if not url:
        return None
    try:
        import psycopg

        with psycopg.connect(_with_database(url, "postgres"), connect_timeout=5) as conn:
            return conn.execute("SHOW server_version").fetchone()[0]
    except Exception as exc:  # a missing server is reported, not fatal
        return f"unavailable ({exc.__class__.__name__})"


_MACHINE: dict | None = None


def machine_info() -> dict:
    global _MACHINE
    if _MACHINE is None:
        import django

        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:
            cores = os.cpu_count() or 0
        try:
            mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
            memory = f"{mem_kb / 1024 / 1024:.1f} GiB"
        except (OSError, ValueError, IndexError):
            memory = "unknown"
        _MACHINE = {
            "nproc": cores,
            "cpu": _cpu_model(),
            "memory": memory,
            "os": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(),
            "django": django.get_version(),
            "sqlite": sqlite3.sqlite_version,
            "fts5": fts5_available(),
            "postgresql": pg_version() or "not used (DATABASE_URL unset)",
            "backend": "postgresql" if os.environ.get("DATABASE_URL") else "sqlite",
        }
    return _MACHINE


def print_machine() -> None:
    print_kv(list(machine_info().items()))


# --- Synthetic English-like text ---------------------------------------------


def _split(words: str) -> list[str]:
    return words.split()


_STOPWORDS = _split(
    "the of and to a in that it was he for on is with as his she at by her had from be this not but "
    "they an which or were all one we there their been would when so if out into what who them could "
    "up then more no my said about its over only some than down time after before like through"
)
_ONSETS = _split("b bl br c ch cl cr d dr f fl fr g gl gr h j k l m n p pl pr qu r s sh sk sl sp st t th tr v w wh y z")
_VOWELS = _split("a e i o u ai ea ee oa oo ou ie")
_CODAS = ["", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck", "ng", "rd", "th", "ll", "sh"]


def make_vocabulary(rng: random.Random, size: int) -> list[str]:
    """``size`` distinct pronounceable words; rank 0 is the most frequent (shortest words first)."""
    words: list[str] = list(_STOPWORDS)
    seen = set(words)
    while len(words) < size:
        rank = len(words)
        syllables = 1 if rank < 400 else (2 if rank < 4000 else rng.choice((2, 3, 3)))
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables))
        if word not in seen and len(word) > 1:
            seen.add(word)
            words.append(word)
    return words[:size]


class ZipfText:
    """Sentences drawn from a Zipf-distributed vocabulary, with topics that raise some words' frequency.

    Each topic owns a set of mid-frequency words; a chunk about a topic draws ``topic_share`` of its words
    from them, so topical queries find clustered results the way a real library's would.
    """

    def __init__(
        self,
        seed: int = SEED,
        *,
        vocabulary: int = 20_000,
        topics: int = 40,
        words_per_topic: int = 30,
        exponent: float = 1.07,
        topic_share: float = 0.15,
    ):
        self.rng = random.Random(seed)
        self.words = make_vocabulary(self.rng, vocabulary)
        self.cum_weights = list(itertools.accumulate(1.0 / (rank**exponent) for rank in range(1, vocabulary + 1)))
        self.topic_share = topic_share
        pool = self.words[300:6000]
        self.topic_names = [f"topic-{self.words[400 + i]}" for i in range(topics)]
        self.topic_words = [self.rng.sample(pool, words_per_topic) for _ in range(topics)]

    def word_at(self, u: float) -> str:
        return self.words[bisect.bisect_left(self.cum_weights, u * self.cum_weights[-1])]

    def words_for(self, count: int, topic_ids: Sequence[int] = ()) -> list[str]:
        rng = self.rng
        drawn = rng.choices(self.words, cum_weights=self.cum_weights, k=count)
        if topic_ids:
            for index in range(count):
                if rng.random() < self.topic_share:
                    drawn[index] = rng.choice(self.topic_words[rng.choice(topic_ids)])
        return drawn

    def paragraph(self, words: int, topic_ids: Sequence[int] = ()) -> str:
        """Words split into sentences of 6-20 words, capitalised and full-stopped."""
        drawn = self.words_for(words, topic_ids)
        out: list[str] = []
        start = 0
        rng = self.rng
        while start < len(drawn):
            end = min(len(drawn), start + rng.randint(6, 20))
            sentence = " ".join(drawn[start:end])
            out.append(sentence[:1].upper() + sentence[1:] + ".")
            start = end
        return " ".join(out)

    def pick_topics(self, most: int = 2) -> list[int]:
        return self.rng.sample(range(len(self.topic_names)), self.rng.randint(1, most))

    def query_words(self, count: int) -> list[str]:
        """Words a person would search for: skip the stopwords, favour mid-frequency and topical words."""
        rng = self.rng
        out = []
        for _ in range(count):
            if rng.random() < 0.4:
                out.append(rng.choice(rng.choice(self.topic_words)))
            else:
                out.append(self.words[int(len(_STOPWORDS) + rng.paretovariate(0.6) * 20) % len(self.words)])
        return out


HOSTILE_QUERIES = (
    '"unbalanced quote',
    "NEAR(alpha beta",
    "title:secret",
    "a OR",
    "AND",
    "-negated word",
    "star*",
    "^caret",
    "'); DROP TABLE library_knowledgechunk; --",
    "{curly} [square]",
    "%_% like wildcards",
    "naïve café Zürich",
    "\\backslash\\",
    "emoji 📚 query",
    "(((",
    '""',
    "*",
    "NOT",
    "col : val",
    "x" * 300,
)


def make_queries(text: ZipfText, count: int = 200, hostile_every: int = 10) -> list[str]:
    """``count`` fixed queries of one to three words; every ``hostile_every``-th one is hostile."""
    queries = []
    for index in range(count):
        if index % hostile_every == hostile_every - 1:
            hostile = HOSTILE_QUERIES[(index // hostile_every) % len(HOSTILE_QUERIES)]
            word = text.query_words(1)[0]
            queries.append(hostile if index % 20 == 19 else f"{word} {hostile}")
        else:
            queries.append(" ".join(text.query_words(text.rng.randint(1, 3))))
    return queries


# --- The bench database --------------------------------------------------------


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def recreate_pg_database(url: str, name: str = BENCH_PG_DATABASE) -> str:
    """Drop and create the bench database on the server of ``url``; returns the bench URL."""
    import psycopg
    from psycopg import sql

    admin_url = _with_database(url, "postgres")
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return _with_database(url, name)


def _migrations_fingerprint() -> str:
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(ROOT.glob("*/migrations/*.py")) + sorted(ROOT.glob("*/*/migrations/*.py")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    digest.update((ROOT / "novelgraph" / "core" / "db.py").read_bytes())
    return digest.hexdigest()[:16]


def bench_environment(name: str) -> dict[str, str]:
    """Environment variables that point Django at the bench database ``name`` (never the dev database)."""
    env = {"DJANGO_SETTINGS_MODULE": "novelgraph.settings"}
    url = os.environ.get("DATABASE_URL")
    if url:
        env["DATABASE_URL"] = _with_database(url, BENCH_PG_DATABASE)
    else:
        env["NOVELGRAPH_SQLITE_PATH"] = str(BENCH_DIR / f"{name}.sqlite3")
    return env


def setup_django(name: str, *, fresh: bool = True) -> str:
    """Point Django at a fresh bench database, migrate it, and return the vendor ("sqlite"/"postgresql").

    SQLite: ``var/bench/<name>.sqlite3``, copied from a migrated template kept per migration fingerprint
    (migrating from scratch costs seconds each run). PostgreSQL (``DATABASE_URL`` set): the database
    ``novelgraph_bench[_<NOVELGRAPH_TEST_DB_ID>]`` on the same server, dropped and recreated.
    """
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    url = os.environ.get("DATABASE_URL")
    env = bench_environment(name)
    if url:
        if fresh:
            recreate_pg_database(url)
    else:
        path = Path(env["NOVELGRAPH_SQLITE_PATH"])
        if fresh:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            template = BENCH_DIR / f"_migrated-{_migrations_fingerprint()}.sqlite3"
            if template.exists():
                shutil.copyfile(template, path)
    os.environ.update(env)

    import django
    from django.conf import settings

    django.setup()
    db_name = str(settings.DATABASES["default"]["NAME"])
    if url:
        assert db_name == BENCH_PG_DATABASE, f"refusing to bench against {db_name}"
    else:
        assert Path(db_name).resolve().parent == BENCH_DIR.resolve(), f"refusing to bench against {db_name}"

    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    if not url and fresh:
        template = BENCH_DIR / f"_migrated-{_migrations_fingerprint()}.sqlite3"
        if not template.exists():
            from django.db import connection

            connection.close()
            for old in BENCH_DIR.glob("_migrated-*.sqlite3"):
                old.unlink()
            src = sqlite3.connect(db_name)
            src.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            dst = sqlite3.connect(template)
            src.backup(dst)
            dst.close()
            src.close()
    # Production-like: no per-query logging (CaptureQueriesContext still forces it where a bench counts).
    settings.DEBUG = False
    from django.db import connection

    return connection.vendor


def header(title: str, args) -> None:
    print(f"# {title}")
    print(f"size={args.size} " + " ".join(f"{k}={v}" for k, v in sorted(vars(args).items()) if k != "size"))
    print(f"date={datetime.now(UTC).isoformat(timespec='seconds')}")
    print_machine()


def git_revision() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def python() -> str:
    return sys.executable
