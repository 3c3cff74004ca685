"""``python manage.py verify_decision_log [--book ID]``: recompute every book's chain and seals."""

from __future__ import annotations

import uuid

from django.core.management.base import BaseCommand, CommandError

from approvals.selectors import decision_log_verify
from discovery.models import Book


class Command(BaseCommand):
    help = (
        "Verify the hash chain and HMAC seals of the decision log of every book (or one). "
        "Prints a line per book; exits non-zero naming the book and its first failing entry."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--book", metavar="ID", help="verify only this book (its id or slug)")

    def handle(self, *args, book: str | None = None, **options) -> None:
        books = Book.objects.order_by("title", "pk")
        if book:
            try:
                books = books.filter(pk=uuid.UUID(book))
            except ValueError:
                books = books.filter(slug=book)
            if not books.exists():
                raise CommandError(f"no book {book!r}")
        failures = []
        for each in books.iterator():
            result = decision_log_verify(each)
            if result.ok:
                self.stdout.write(f"ok      {each.pk}  {each.title}: {result.entries} entries verified")
            else:
                line = f"BROKEN  {each.pk}  {each.title}: entry {result.first_bad_sequence} fails: {result.reason}"
                self.stdout.write(line)
                failures.append(f"book {each.pk} ({each.title}) broken at entry {result.first_bad_sequence}")
        if failures:
            raise CommandError("decision log verification failed: " + "; ".join(failures))
