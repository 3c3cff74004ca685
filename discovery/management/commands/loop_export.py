from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from discovery.loop.services.sidecar import discovery_root, loop_export_folder
from discovery.models import Book


def book_or_error(book_id: str) -> Book:
    try:
        return Book.objects.get(pk=book_id)
    except (Book.DoesNotExist, ValueError, ValidationError):
        raise CommandError(f"no book with id {book_id!r}") from None


class Command(BaseCommand):
    help = (
        "Write a book's discovery loop to disk in seed 002's layout: <discovery-root>/<book-slug>/_state/*.json, "
        "the committed artifacts beside it and screens/*.svg. The root is NOVELGRAPH_DISCOVERY_ROOT, else "
        "var/discovery, else the folder holding a .novelgraph-discovery marker; --to overrides it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--book", required=True, metavar="BOOK_ID")
        parser.add_argument("--to", default="", metavar="ROOT", help="the discovery root to write under")

    def handle(self, *args, book, to, **options):
        the_book = book_or_error(book)
        result = loop_export_folder(book=the_book, root=Path(to) if to else discovery_root())
        self.stdout.write(f"wrote {len(result['files'])} files to {result['folder']}")
