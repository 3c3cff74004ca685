"""Decision-log verification: entries per second through ``decision_log_verify`` against the floor.

The floor hashes the same canonical bytes with bare ``hashlib`` + ``hmac`` (what verification cannot avoid).
Bars (issue 19): our verification within 2.5x of the floor on SQLite and 3x on PostgreSQL, at 20,000
entries, per interleaved round with its spread. Next to it, for reading the figure: the same rows read by the
bare database driver (no Django) plus the floor's hashing, which is the least any verification that reads
the log can cost. Then memory: the peak of Python allocations (tracemalloc) verifying the log at its size
and again after it grew to ``--memory-entries`` (200,000 at ``--size large``): verification streams, so the
peak must stay flat (bar: at most 1.5x).

The chain is built with the real ``decision_log_append`` for the first entries (so the recipe is the
service's own), then continued with the same recipe (``approvals.chain``) and bulk-inserted for speed.

    python -m bench.bench_decision_log --entries 20000
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

from bench import common

SIZES = {
    "small": {"entries": 20_000, "appends": 200, "repeat": 5, "memory_entries": 60_000},
    "medium": {"entries": 20_000, "appends": 500, "repeat": 7, "memory_entries": 100_000},
    "large": {"entries": 20_000, "appends": 1_000, "repeat": 9, "memory_entries": 200_000},
}
BARS = {"sqlite": 2.5, "postgresql": 3.0}
MEMORY_BAR = 1.5

VERDICTS = ("approve", "reject", "approve-with-constraint", "redirect", "park", "extend")
REVERSIBILITY = ("reversible", "costly-to-reverse", "one-way-door")
GATES = (None, "G0", "G1", "G1.5", "G2", "G3")


def build_chain(book, user, *, entries: int, appends: int, text: common.ZipfText) -> None:
    from django.db import transaction
    from django.utils import timezone

    from approvals.chain import GENESIS_HASH, chain_fields, current_key_id, entry_hash, entry_text, seal_of
    from approvals.models import DecisionLogEntry
    from approvals.services import decision_log_append

    rng = text.rng

    def detail_for(i: int) -> dict:
        if i % 3 == 0:
            return {}
        if i % 3 == 1:
            return {"constraint": text.paragraph(8)}
        return {"slots": [f"slot-{i % 7}", f"slot-{i % 11}"], "granted": {"turns": i % 5, "note": "naïve café"}}

    for i in range(min(appends, entries)):
        controller = i % 4 == 0
        decision_log_append(
            book=book,
            decision=VERDICTS[i % len(VERDICTS)],
            subject_type="claim" if i % 2 else "charter",
            subject_id=f"{i:08d}-bench",
            rationale=text.paragraph(rng.randint(8, 30)),
            ratified_by_user=None if controller else user,
            controller_role="sol" if controller else None,
            gate=GATES[i % len(GATES)],
            reversibility_class=REVERSIBILITY[i % 3],
            detail=detail_for(i),
        )
    last = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").values_list("sequence", "hash").first()
    sequence, prev_hash = (last[0], last[1]) if last else (0, GENESIS_HASH)
    ts = timezone.now()
    rows = []
    for i in range(sequence, entries):
        sequence += 1
        ts += timedelta(microseconds=rng.randint(1, 5_000_000))
        controller = i % 4 == 0
        ratified_by = "controller:sol" if controller else f"author:{user.get_username()}"
        fields = chain_fields(
            book_id=book.pk,
            sequence=sequence,
            ts=ts,
            gate=GATES[i % len(GATES)],
            decision=VERDICTS[i % len(VERDICTS)],
            subject_type="claim" if i % 2 else "charter",
            subject_id=f"{i:08d}-bench",
            ratified_by=ratified_by,
            reversibility_class=REVERSIBILITY[i % 3],
            rationale=text.paragraph(rng.randint(8, 30)),
            detail=detail_for(i),
            prev_hash=prev_hash,
        )
        digest = entry_hash(fields)
        rows.append(
            DecisionLogEntry(
                book=book,
                entry=entry_text(fields),
                ratified_by_user=None if controller else user,
                hash=digest,
                seal=seal_of(digest),
                seal_key_id=current_key_id(),
            )
        )
        prev_hash = digest
    with transaction.atomic():
        DecisionLogEntry.objects.bulk_create(rows, batch_size=1000)


def canonical_rows(book) -> list[bytes]:
    """The canonical bytes of every entry, read outside the timed region (the floor's input)."""
    from approvals.models import DecisionLogEntry

    texts = DecisionLogEntry.objects.filter(book=book).order_by("sequence").values_list("entry", flat=True)
    return [text.encode() for text in texts.iterator(chunk_size=2000)]


def floor_verify(payloads: list[bytes], key: bytes) -> int:
    """Hash each entry's canonical bytes and seal the hash: the irreducible work of verification.

    The honest floor (issue 19): one keyed HMAC state copied per entry, as ``verify_rows`` does, not a
    fresh ``hmac.new`` per entry (which re-keys every time and flattered us by about 25%)."""
    sha256 = hashlib.sha256
    keyed = hmac.new(key, digestmod=sha256)
    ok = 0
    for payload in payloads:
        digest = sha256(payload).hexdigest()
        seal = keyed.copy()
        seal.update(digest.encode())
        seal.hexdigest()
        ok += 1
    return ok


def bare_read(sql: str, params) -> int:
    """The verification's statement through the bare driver (Django's cursor wrapper and the ORM left out)."""
    from django.db import connection

    connection.ensure_connection()
    cursor = connection.connection.cursor()
    try:
        cursor.execute(sql.replace("%s", "?") if connection.vendor == "sqlite" else sql, params)
        n = 0
        while rows := cursor.fetchmany(2000):
            n += len(rows)
        return n
    finally:
        cursor.close()


def verify_sql(book):
    """The statement ``decision_log_verify`` runs for the chain, with its parameters."""
    from approvals import selectors
    from approvals.models import DecisionLogEntry

    rows = DecisionLogEntry.objects.filter(book=book).order_by("sequence")
    return rows.values_list(*selectors.VERIFY_COLUMNS).query.sql_with_params()


def peak_bytes(fn) -> int:
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def analyze() -> None:
    """Fresh planner statistics after the bulk insert, as a live database keeps them (autovacuum on
    PostgreSQL): without them PostgreSQL sorts 20,000 rows on disk instead of reading the unique index."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("Decision-log verification", args)
    vendor = common.setup_django("decision_log")
    report = common.Report("decision_log", args.size)
    bar = BARS[vendor]

    from django.conf import settings

    from approvals.selectors import decision_log_verify
    from discovery.models import Book
    from tests.factories import BookFactory, UserFactory

    text = common.ZipfText(common.SEED)
    user = UserFactory(username="bench-author")
    book = BookFactory(owner=user, title="Bench book", slug="bench-book")

    start = common.now_ns()
    build_chain(book, user, entries=args.entries, appends=args.appends, text=text)
    analyze()
    setup_s = (common.now_ns() - start) / 1e9
    print(f"  built a chain of {args.entries} entries in {setup_s:.1f}s ({args.appends} through decision_log_append)")

    book = Book.objects.get(pk=book.pk)
    result = decision_log_verify(book)
    assert result.ok and result.entries == args.entries, result
    payloads = canonical_rows(book)
    key = settings.DECISION_LOG_SEAL_KEY.encode()
    sql, params = verify_sql(book)
    assert bare_read(sql, params) == args.entries

    ours = common.Samples("decision_log_verify (read + recompute + canon checks)")
    floor = common.Samples("floor: sha256 + hmac over canonical bytes")
    read = common.Samples("bare driver read of the same rows")
    for _ in range(args.repeat):  # interleaved rounds
        start = common.now_ns()
        decision_log_verify(book)
        ours.ns.append(common.now_ns() - start)
        start = common.now_ns()
        floor_verify(payloads, key)
        floor.ns.append(common.now_ns() - start)
        start = common.now_ns()
        bare_read(sql, params)
        read.ns.append(common.now_ns() - start)

    common.print_title(f"verify {args.entries} entries on {vendor} ({args.repeat} interleaved rounds)")
    common.print_timings([floor, read, ours], floor)
    print()
    common.print_rates(
        [
            (floor.label, args.entries, floor.median_ms / 1000),
            (ours.label, args.entries, ours.median_ms / 1000),
        ],
        floor.label,
    )
    per_round = [a / b for a, b in zip(ours.ns, floor.ns, strict=True)]
    irreducible = [(r + f) / f for r, f in zip(read.ns, floor.ns, strict=True)]
    over_read = [a / (r + f) for a, r, f in zip(ours.ns, read.ns, floor.ns, strict=True)]
    ratio = sorted(per_round)[len(per_round) // 2]
    report.figures.update(
        {
            "vendor": vendor,
            "entries": args.entries,
            "ours_median_ms": ours.median_ms,
            "floor_median_ms": floor.median_ms,
            "bare_read_median_ms": read.median_ms,
            "ours_entries_per_s": args.entries / (ours.median_ms / 1000),
            "floor_entries_per_s": args.entries / (floor.median_ms / 1000),
            "ratio": ratio,
        }
    )
    report.ratio(f"verify within {bar}x of bare hashlib+hmac ({vendor})", per_round, bar)
    report.ratio(
        f"bare driver read + bare hashing vs bare hashing alone ({vendor}): the least a reading verifier costs",
        irreducible,
    )
    report.ratio(f"verify vs bare driver read + bare hashing ({vendor})", over_read)

    # Memory: verification streams the chain in batches, so its peak does not grow with the log.
    small_peak = peak_bytes(lambda: decision_log_verify(book))
    start = common.now_ns()
    build_chain(book, user, entries=args.memory_entries, appends=0, text=text)
    analyze()
    print(f"  grew the chain to {args.memory_entries} entries in {(common.now_ns() - start) / 1e9:.1f}s")
    grown = decision_log_verify(book)
    assert grown.ok and grown.entries == args.memory_entries, grown
    big_peak = peak_bytes(lambda: decision_log_verify(book))
    report.figures.update(
        {"memory_entries": args.memory_entries, "peak_bytes_small": small_peak, "peak_bytes_big": big_peak}
    )
    print(
        f"  peak Python allocations verifying {args.entries}: {small_peak / 1e6:.2f} MB;"
        f" {args.memory_entries}: {big_peak / 1e6:.2f} MB"
    )
    report.bar(
        f"verification memory at {args.memory_entries} entries vs at {args.entries} (tracemalloc peak, {vendor})",
        big_peak / small_peak,
        MEMORY_BAR,
    )
    report.save()
    return report


if __name__ == "__main__":
    main()
