from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from discovery.access import book_access
from discovery.loop.services.sidecar import loop_import_folder, sidecar_folder
from novelgraph.core.auth import principal_for_user
from novelgraph.core.errors import DomainError

from .loop_export import book_or_error


class Command(BaseCommand):
    help = (
        "Import a loop folder (<book-slug>/ holding _state/*.json, as loop_export writes it) into a book whose "
        "loop has not started. The book's author is the one who imports (one decision-log row of hers); the "
        "rules are the zip import's. Without --from, the book's own folder under the discovery root is read."
    )

    def add_arguments(self, parser):
        parser.add_argument("--book", required=True, metavar="BOOK_ID")
        parser.add_argument("--from", dest="source", default="", metavar="FOLDER")

    def handle(self, *args, book, source, **options):
        the_book = book_or_error(book)
        folder = Path(source) if source else sidecar_folder(the_book)
        access = book_access(principal_for_user(the_book.owner), the_book)
        try:
            result = loop_import_folder(access=access, folder=folder)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        counts = ", ".join(f"{k} {v}" for k, v in result["imported"].items())
        self.stdout.write(f"imported from {folder}: {counts}; skipped {len(result['skipped'])}")
        for line in result["downgraded"]:
            self.stdout.write(f"  {line}")
