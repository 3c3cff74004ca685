"""Ingestion: a Markdown source through the ``import_source`` command, against bulk-inserting the same rows.

The document (English-like Zipf text under ``##`` headings, about 5 MB at ``--size large``) is imported with
``call_command("import_source", ...)``; the floor inserts the very rows the import produced (same contents,
citations, topics) as another source with raw SQL ``executemany`` in one transaction. Both pay the search
index triggers. Printed: chunks per second and the ratio.

    python -m bench.bench_ingest --kilobytes 4900
"""

from __future__ import annotations

import io
import json
import random
import uuid

from bench import common

SIZES = {
    "small": {"kilobytes": 1_000, "rounds": 3},
    "medium": {"kilobytes": 2_500, "rounds": 3},
    "large": {"kilobytes": 4_900, "rounds": 3},  # the command accepts at most 5,000,000 characters
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
    floor = common.Samples("floor: raw SQL executemany of the same rows")
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

    def bulk_once(round_no: int) -> None:
        rows = produced["rows"]
        start = common.now_ns()
        now = timezone.now()
        stamp = now.strftime("%Y-%m-%d %H:%M:%S.%f") if vendor == "sqlite" else now

        def new_id():
            value = uuid.uuid4()
            return value.hex if vendor == "sqlite" else value

        source_id = new_id()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO library_knowledgesource (id, created_at, updated_at, title, origin, license_note, version)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [source_id, stamp, stamp, "Bench handbook", "bench-floor", "synthetic", f"bulk-{round_no}"],
            )
            cursor.executemany(
                "INSERT INTO library_knowledgechunk (id, created_at, updated_at, source_id, position, content,"
                " topics, applicability, citation) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [
                    (new_id(), stamp, stamp, source_id, position, content, json.dumps(topics), json.dumps(appl), cit)
                    for position, content, topics, appl, cit in rows
                ],
            )
        floor.ns.append(common.now_ns() - start)

    for round_no in range(args.rounds):
        import_once(round_no)
        bulk_once(round_no)

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
    report.note(
        f"import {chunks / (command.median_ms / 1000):,.0f} chunks/s vs raw bulk insert "
        f"{chunks / (floor.median_ms / 1000):,.0f} chunks/s ({ratio:.1f}x)"
    )
    report.save()
    return report


if __name__ == "__main__":
    main()
