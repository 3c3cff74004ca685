"""``python manage.py verify_decision_log [--book ID]``: recompute every book's chain and seals."""

from __future__ import annotations

import json
import uuid

from django.core.management.base import BaseCommand, CommandError

from approvals.anchor import anchor_append
from approvals.selectors import decision_log_reaches, decision_log_verify
from discovery.models import Book


class Command(BaseCommand):
    help = (
        "Verify the hash chain and HMAC seals of the decision log of every book (or one). "
        "Prints a line per book; exits non-zero naming the book and its first failing entry."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--book", metavar="ID", help="verify only this book (its id or slug)")
        parser.add_argument(
            "--against",
            metavar="EXPORT",
            help="also check that the log still reaches the sealed tip of this earlier export (a .jsonl file)",
        )
        parser.add_argument(
            "--reanchor",
            action="store_true",
            help=(
                "after restoring a backup on purpose: append each book's current tip to its anchor file, once "
                "its chain, seals and canon verify (the older anchor lines stay, as a record of what was lost)"
            ),
        )

    def handle(
        self, *args, book: str | None = None, against: str | None = None, reanchor: bool = False, **options
    ) -> None:
        books = Book.objects.order_by("title", "pk")
        if book:
            try:
                books = books.filter(pk=uuid.UUID(book))
            except ValueError:
                books = books.filter(slug=book)
            if not books.exists():
                raise CommandError(f"no book {book!r}")
        failures = []
        kept = _export_tip(against) if against else None
        if kept is not None:
            books = books.filter(pk=kept["book"])
        for each in books.iterator():
            result = decision_log_verify(each, use_anchor=not reanchor)
            if reanchor and result.ok and result.entries:
                anchor_append(each.pk, result.entries, result.tip_hash, reanchor=True)
                result = decision_log_verify(each)
            if result.ok and kept is not None:
                result = decision_log_reaches(each, kept, result)
            if result.ok:
                tip = result.anchored_sequence
                anchored = f"tip anchored at #{tip}" if tip else "no tip anchor"
                self.stdout.write(
                    f"ok      {each.pk}  {each.title}: {result.entries} entries verified "
                    f"({anchored}; {result.canon_checked} canon subjects checked against the log)"
                )
            else:
                line = f"BROKEN  {each.pk}  {each.title}: entry {result.first_bad_sequence} fails: {result.reason}"
                self.stdout.write(line)
                failures.append(f"book {each.pk} ({each.title}) broken at entry {result.first_bad_sequence}")
        if failures:
            raise CommandError("decision log verification failed: " + "; ".join(failures))


def _export_tip(path: str) -> dict:
    """The ``{"tip": ...}`` line an export ends with."""
    try:
        with open(path, encoding="utf-8") as handle:
            last = [line for line in handle if line.strip()][-1]
        tip = json.loads(last)["tip"]
        tip["book"] = str(uuid.UUID(str(tip["book"])))
        int(tip["sequence"])
    except (OSError, IndexError, KeyError, TypeError, ValueError) as exc:
        raise CommandError(f"{path} does not end with a tip line: {exc}") from None
    return tip
