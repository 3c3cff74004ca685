"""Library search: our ``library.search.search()`` against the raw full-text query on the same database.

Synthetic English-like chunks (Zipf vocabulary, topics), 200 fixed queries of one to three words, a tenth with
hostile characters. SQLite: the floor is the raw FTS5 statement through the ``sqlite3`` module on the same file
(the MATCH strings are prepared outside the timed region); PostgreSQL (``DATABASE_URL`` set): the raw statement
through a plain ``psycopg`` connection. The LIKE fallback answers a subset of the queries (it scans every chunk).
Bar: our full-text path within 1.3x of the raw query at the median.

    python -m bench.bench_search --chunks 100000
"""

from __future__ import annotations

import json
import os
import random
import statistics
import uuid
from datetime import UTC, datetime, timedelta

from bench import common

SIZES = {
    "small": {"chunks": 20_000, "queries": 200, "like_queries": 20, "rounds": 5},
    "medium": {"chunks": 50_000, "queries": 200, "like_queries": 20, "rounds": 5},
    "large": {"chunks": 100_000, "queries": 200, "like_queries": 20, "rounds": 5},
}
BAR = 1.3
CHUNKS_PER_SOURCE = 500
APPLICABILITY = ("scene", "dialogue", "pacing", "structure", "character", "setting", "revision")


def populate(vendor: str, chunks: int, text: common.ZipfText) -> float:
    """Insert sources and chunks with raw SQL in one transaction (the index triggers keep search in step)."""
    from django.db import connection, transaction

    rng = random.Random(common.SEED + 1)
    start = common.now_ns()
    base = datetime(2026, 1, 1, tzinfo=UTC)

    def uid() -> str | uuid.UUID:
        value = uuid.UUID(int=rng.getrandbits(128), version=4)
        return value.hex if vendor == "sqlite" else value

    def ts(seconds: int):
        value = base + timedelta(seconds=seconds)
        return value.strftime("%Y-%m-%d %H:%M:%S.%f") if vendor == "sqlite" else value

    sources = []
    for index in range((chunks + CHUNKS_PER_SOURCE - 1) // CHUNKS_PER_SOURCE):
        sources.append((uid(), ts(index), ts(index), f"Bench source {index}", "bench", "synthetic", "1"))
    chunk_rows = []
    for index in range(chunks):
        topic_ids = text.pick_topics()
        content = text.paragraph(rng.randint(60, 140), topic_ids)
        source = sources[index // CHUNKS_PER_SOURCE]
        chunk_rows.append(
            (
                uid(),
                ts(index),
                ts(index),
                source[0],
                index % CHUNKS_PER_SOURCE,
                content,
                json.dumps([text.topic_names[t] for t in topic_ids]),
                json.dumps(rng.sample(APPLICABILITY, rng.randint(0, 2))),
                f"{source[3]}, passage {index % CHUNKS_PER_SOURCE + 1}",
            )
        )
    generated = (common.now_ns() - start) / 1e9
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO library_knowledgesource (id, created_at, updated_at, title, origin, license_note, version)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            sources,
        )
        for offset in range(0, len(chunk_rows), 5000):
            cursor.executemany(
                "INSERT INTO library_knowledgechunk (id, created_at, updated_at, source_id, position, content,"
                " topics, applicability, citation) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                chunk_rows[offset : offset + 5000],
            )
    if vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE library_knowledgechunk")
    inserted = (common.now_ns() - start) / 1e9 - generated
    print(f"  generated {chunks} chunks in {generated:.1f}s, inserted in {inserted:.1f}s")
    return generated


RAW_SQLITE_NAIVE = (
    "SELECT c.id, c.content, c.topics, c.applicability, c.citation, s.title, -f.rank"
    " FROM library_chunk_fts f JOIN library_chunk_fts_map m ON m.id = f.rowid"
    " JOIN library_knowledgechunk c ON c.id = m.chunk_id JOIN library_knowledgesource s ON s.id = c.source_id"
    " WHERE library_chunk_fts MATCH ? ORDER BY f.rank LIMIT ?"
)
RAW_SQLITE_RANKED_FIRST = (
    "SELECT c.id, c.content, c.topics, c.applicability, c.citation, s.title, -hits.rank FROM ("
    " SELECT rowid AS rid, rank FROM library_chunk_fts WHERE library_chunk_fts MATCH ? ORDER BY rank LIMIT ?) hits"
    " JOIN library_chunk_fts_map m ON m.id = hits.rid JOIN library_knowledgechunk c ON c.id = m.chunk_id"
    " JOIN library_knowledgesource s ON s.id = c.source_id ORDER BY hits.rank"
)
RAW_PG = (
    "SELECT c.id, c.content, c.topics, c.applicability, c.citation, s.title, ts_rank(c.search_vector, q.query) AS score"
    " FROM library_knowledgechunk c JOIN library_knowledgesource s ON s.id = c.source_id"
    " CROSS JOIN (SELECT (string_agg('(' || w.q::text || ')', ' | '))::tsquery AS query FROM ("
    "SELECT plainto_tsquery('simple', library_search_fold(t.word)) AS q"
    " FROM jsonb_array_elements_text(%s::jsonb) AS t(word)) AS w WHERE numnode(w.q) > 0) AS q"
    " WHERE c.search_vector @@ q.query ORDER BY score DESC, c.created_at DESC, c.id LIMIT %s"
)


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("Library search", args)
    vendor = common.setup_django("search")
    report = common.Report("search", args.size)

    from django.conf import settings

    from library import search as library_search

    text = common.ZipfText(common.SEED)
    populate(vendor, args.chunks, text)
    queries = common.make_queries(text, args.queries)
    limit = library_search.DEFAULT_LIMIT
    mode = library_search.resolve_mode()
    print(f"  mode={mode} queries={len(queries)} (hostile: {sum(1 for i in range(len(queries)) if i % 10 == 9)})")

    def ours(query: str):
        return library_search.search(query, limit)

    # The floor runs the statement alone: words are split (stop words dropped) and quoted beforehand.
    # Same query shape as ours: any word (FTS5 "a" OR "b"; PostgreSQL the ORed plainto_tsquery terms).
    prepared = {q: library_search.search_terms(q) for q in queries}
    floors: list[tuple[common.Samples, callable]] = []
    if vendor == "sqlite":
        import sqlite3

        raw = sqlite3.connect(str(settings.DATABASES["default"]["NAME"]))
        match = {q: library_search.fts5_match(words) for q, words in prepared.items()}

        def raw_naive(query: str):
            if match[query]:
                return raw.execute(RAW_SQLITE_NAIVE, (match[query], limit)).fetchall()
            return []

        def raw_ranked_first(query: str):
            if match[query]:
                return raw.execute(RAW_SQLITE_RANKED_FIRST, (match[query], limit)).fetchall()
            return []

        floors = [
            (common.Samples("floor: raw sqlite3, rank in FTS5 then join"), raw_ranked_first),
            (common.Samples("raw sqlite3, join then rank"), raw_naive),
        ]
        check = raw_ranked_first
    else:
        import psycopg

        raw = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)  # the bench database
        joined = {q: json.dumps(words) if words else "" for q, words in prepared.items()}

        def raw_pg(query: str):
            if joined[query]:
                return raw.execute(RAW_PG, (joined[query], limit)).fetchall()
            return []

        floors = [(common.Samples("floor: raw psycopg, same statement"), raw_pg)]
        check = raw_pg

    # Same answers, or the comparison means nothing.
    mismatched = 0
    for query in queries:
        expected = [str(uuid.UUID(str(row[0]))) for row in check(query)]
        got = [row["chunk_id"] for row in ours(query).results]
        mismatched += expected != got
    hits = statistics.mean(len(ours(q).results) for q in queries)
    print(f"  average results per query: {hits:.1f} (limit {limit}); answers differing from the floor: {mismatched}")

    our_samples = common.Samples(f"search() {mode} (ours)")
    common.interleaved([(our_samples, ours), *floors], queries, rounds=args.rounds)
    floor = floors[0][0]
    common.print_title(f"{mode} search, {args.chunks} chunks, {len(queries)} queries x {args.rounds} rounds")
    common.print_timings([floors[0][0], our_samples, *[f[0] for f in floors[1:]]], floor)

    like_queries = queries[: args.like_queries]
    like = common.time_each(
        f"search() like fallback ({len(like_queries)} queries)",
        lambda q: library_search.search(q, limit, mode="like"),
        like_queries,
        warmup=0,
    )
    like_floor = common.Samples(floor.label)
    like_floor.ns = [ns for index, ns in enumerate(floor.ns) if index % len(queries) < len(like_queries)]
    common.print_title(f"LIKE fallback on the first {len(like_queries)} queries")
    common.print_timings([like_floor, like], like_floor)

    ratio = our_samples.median_ms / floor.median_ms
    like_ratio = like.median_ms / like_floor.median_ms
    report.figures.update(
        {
            "vendor": vendor,
            "mode": mode,
            "chunks": args.chunks,
            "queries": len(queries),
            "floor_median_ms": floor.median_ms,
            "floor_p95_ms": floor.p95_ms,
            "ours_median_ms": our_samples.median_ms,
            "ours_p95_ms": our_samples.p95_ms,
            "ratio": ratio,
            "like_median_ms": like.median_ms,
            "like_p95_ms": like.p95_ms,
            "like_ratio": like_ratio,
            "answers_differing": mismatched,
        }
    )
    report.ratio(
        f"{mode} search() vs the raw statement, {args.chunks:,} chunks",
        common.round_ratios(our_samples, floor),
        BAR,
    )
    report.note(f"LIKE fallback answers at {args.chunks} chunks: median {like.median_ms:.1f} ms = {like_ratio:.0f}x")
    if mismatched:
        report.note(f"{mismatched} queries answered differently from the raw statement")
    report.save()
    return report


if __name__ == "__main__":
    main()
