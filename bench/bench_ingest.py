"""Ingestion: a Markdown source through the ``import_source`` command, against bulk-inserting the same rows.

The document (English-like Zipf text under ``##`` headings, about 5 MB at ``--size large``) is imported with
``call_command("import_source", ...)``; the floor inserts the very rows the import produced (same contents,
citations, topics) as another source with multi-row ``INSERT`` statements on the DB-API cursor, in one transaction.
Its rows (UUIDs, JSON-encoded topics) are built before its timer starts: only the insert is timed. Both pay the
search index triggers. Rounds alternate which goes first. Printed: chunks per second and the ratio.

    python -m bench.bench_ingest --kilobytes 4900
"""

from __future__ import annotations

import io
import json
import random
import uuid

from bench import common

# Within both databases' limits on bound parameters (SQLite 32,766, PostgreSQL 65,535) at 9 per row.
FLOOR_ROWS_PER_STATEMENT = 3_000
SIZES = {
    "small": {"kilobytes": 1_000, "rounds": 5},
    "medium": {"kilobytes": 2_500, "rounds": 5},
    "large": {"kilobytes": 4_900, "rounds": 5},  # the command accepts at most 5,000,000 characters
}


def make_document(text: common.ZipfText, kilobytes: int) -> str:
    rng = random.Random(common.SEED + 5)
    parts: list[str] = ["# A synthetic craft handbook\n"]
    size = len(parts[0])
    section = 0
    while size < kilobytes * 1000:
        section += 1
        topic_ids = text.pick_topics()
        heading = f"\n## {section}. {text.paragraph(rng.randint(2, 5)).rstrip('.')}\n"
        body = "\n\n".join(text.paragraph(rng.randint(40, 160), topic_ids) for _ in range(rng.randint(1, 6)))
        piece = heading + "\n" + body + "\n"
        parts.append(piece)
        size += len(piece)
    return "".join(parts)[: kilobytes * 1000]


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("Ingestion", args)
    vendor = common.setup_django("ingest")
    report = common.Report("ingest", args.size)

    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from library.models import KnowledgeChunk, KnowledgeSource
    from library.services import split_document

    text = common.ZipfText(common.SEED)
    document = make_document(text, args.kilobytes)
    path = common.BENCH_DIR / "ingest.md"
    path.write_text(document, encoding="utf-8")
    chunks_expected = len(split_document(document, "Bench handbook"))
    print(f"  document: {len(document.encode()) / 1e6:.2f} MB, {chunks_expected} chunks expected")

    command = common.Samples("import_source command (ours)")
    floor = common.Samples("floor: raw multi-row INSERTs of the same rows")
    produced = {"rows": None}

    def import_once(round_no: int) -> None:
        start = common.now_ns()
        call_command(
            "import_source",
            str(path),
            "--title=Bench handbook",
            "--origin=bench",
            "--license-note=synthetic",
            f"--version=import-{round_no}",
            "--topics=pacing,scene",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
        command.ns.append(common.now_ns() - start)
        if produced["rows"] is None:
            source = KnowledgeSource.objects.get(origin="bench", version=f"import-{round_no}")
            produced["rows"] = list(
                KnowledgeChunk.objects.filter(source=source)
                .order_by("position")
                .values_list("position", "content", "topics", "applicability", "citation")
            )

    def floor_rows(round_no: int) -> tuple[list, list[tuple]]:
        """The source row and the chunk rows, ids and JSON included, ready to insert (built before timing)."""
        now = timezone.now()
        stamp = now.strftime("%Y-%m-%d %H:%M:%S.%f") if vendor == "sqlite" else now

        def new_id():
            value = uuid.uuid4()
            return value.hex if vendor == "sqlite" else value

        source_id = new_id()
        source = [source_id, stamp, stamp, "Bench handbook", "bench-floor", "synthetic", f"bulk-{round_no}"]
        chunks = [
            (new_id(), stamp, stamp, source_id, position, content, json.dumps(topics), json.dumps(appl), cit)
            for position, content, topics, appl, cit in produced["rows"]
        ]
        return source, chunks

    placeholders = "?" if vendor == "sqlite" else "%s"
    source_sql = (
        "INSERT INTO library_knowledgesource (id, created_at, updated_at, title, origin, license_note, version)"
        f" VALUES ({', '.join([placeholders] * 7)})"
    )
    chunk_row = f"({', '.join([placeholders] * 9)})"

    def chunk_statements(chunks: list[tuple]) -> list[tuple[str, list]]:
        """Multi-row INSERTs of FLOOR_ROWS_PER_STATEMENT rows: the fastest way found to insert them. (One
        statement per row, as ``executemany`` runs them, is 4x slower on SQLite: FTS5 writes an index
        segment at the end of every statement.)"""
        statements = []
        for offset in range(0, len(chunks), FLOOR_ROWS_PER_STATEMENT):
            part = chunks[offset : offset + FLOOR_ROWS_PER_STATEMENT]
            sql = (
                "INSERT INTO library_knowledgechunk (id, created_at, updated_at, source_id, position, content,"
                f" topics, applicability, citation) VALUES {', '.join([chunk_row] * len(part))}"
            )
            statements.append((sql, [value for row in part for value in row]))
        return statements

    def bulk_once(round_no: int) -> None:
        """The floor: the same rows through the DB-API cursor itself, in one transaction; nothing else timed."""
        source, chunks = floor_rows(round_no)
        statements = chunk_statements(chunks)
        connection.ensure_connection()
        start = common.now_ns()
        with transaction.atomic():
            cursor = connection.connection.cursor()
            cursor.execute(source_sql, source)
            for sql, params in statements:
                cursor.execute(sql, params)
            cursor.close()
        floor.ns.append(common.now_ns() - start)

    # Interleaved, alternating which goes first: A, B, B, A, A, B...
    for round_no in range(args.rounds):
        order = (import_once, bulk_once) if round_no % 2 == 0 else (bulk_once, import_once)
        if produced["rows"] is None:
            order = (import_once, bulk_once)  # the floor inserts the rows the first import produced
        for run in order:
            run(round_no)
        command.end_round()
        floor.end_round()

    chunks = len(produced["rows"])
    assert chunks == chunks_expected, (chunks, chunks_expected)
    common.print_title(f"import of {len(document) / 1e6:.2f} MB ({chunks} chunks) on {vendor}, {args.rounds} rounds")
    common.print_timings([floor, command], floor)
    print()
    common.print_rates(
        [(floor.label, chunks, floor.median_ms / 1000), (command.label, chunks, command.median_ms / 1000)],
        floor.label,
    )
    ratio = command.median_ms / floor.median_ms
    report.figures.update(
        {
            "vendor": vendor,
            "megabytes": len(document.encode()) / 1e6,
            "chunks": chunks,
            "command_median_ms": command.median_ms,
            "floor_median_ms": floor.median_ms,
            "command_chunks_per_s": chunks / (command.median_ms / 1000),
            "floor_chunks_per_s": chunks / (floor.median_ms / 1000),
            "ratio": ratio,
        }
    )
    report.ratio(
        f"import_source vs raw multi-row INSERTs of the same rows, {len(document) / 1e6:.1f} MB",
        common.round_ratios(command, floor),
    )
    report.note(
        f"import {chunks / (command.median_ms / 1000):,.0f} chunks/s vs raw bulk insert "
        f"{chunks / (floor.median_ms / 1000):,.0f} chunks/s ({ratio:.1f}x)"
    )
    report.save()
    return report


if __name__ == "__main__":
    main()
