from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from library.schemas import SourceImportIn
from library.services import source_import, split_document
from novelgraph.core.errors import DomainError
from novelgraph.core.schemas import parse_form


class Command(BaseCommand):
    help = (
        "Import a Markdown or plain-text file as a library source: one cited chunk per heading "
        "(or per group of paragraphs when the file has no headings)."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version names the source's version here, not Django's.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--title", required=True)
        parser.add_argument("--origin", required=True)
        parser.add_argument("--license-note", required=True)
        parser.add_argument("--version", dest="source_version", required=True)
        parser.add_argument("--topics", default="", help="comma-separated, e.g. scene,pacing")
        parser.add_argument("--applicability", default="general", help="comma-separated (default: general)")

    def handle(self, *args, **options):
        path: Path = options["path"]
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {path}: {exc}") from exc
        expected = len(split_document(text, options["title"])) if text.strip() else 0
        try:
            with tqdm(total=expected, unit="chunk", desc="Importing", file=self.stderr, disable=None) as bar:
                payload = parse_form(
                    SourceImportIn,
                    {
                        "title": options["title"],
                        "origin": options["origin"],
                        "license_note": options["license_note"],
                        "version": options["source_version"],
                        "text": text,
                        "topics": options["topics"],
                        "applicability": options["applicability"],
                    },
                )
                source = source_import(principal=None, payload=payload, progress=bar.update)
        except DomainError as exc:
            raise CommandError(f"{exc.field or 'import'}: {exc.message}") from exc
        count = source.chunks.count()
        self.stdout.write(f"Imported {source.title!r} ({source.version}) as {count} chunks. Source id: {source.pk}")
