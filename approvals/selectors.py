"""Reads of approvals and the decision log, shared by the API, pages and commands."""

from __future__ import annotations

from django.db.models import QuerySet

from discovery.models import Book

from .chain import Verification, verify_rows
from .models import DecisionLogEntry

VERIFY_COLUMNS = (
    "sequence",
    "ts",
    "gate",
    "decision",
    "subject_type",
    "subject_id",
    "ratified_by",
    "reversibility_class",
    "rationale",
    "detail",
    "prev_hash",
    "hash",
    "seal",
)


def decision_log_for(book: Book) -> QuerySet[DecisionLogEntry]:
    return DecisionLogEntry.objects.filter(book=book).order_by("sequence")


def decision_log_verify(book: Book) -> Verification:
    """Recompute the book's chain and seals; names the first entry that fails."""
    rows = (
        DecisionLogEntry.objects.filter(book=book)
        .order_by("sequence")
        .values_list(*VERIFY_COLUMNS)
        .iterator(chunk_size=2000)
    )
    return verify_rows(book.pk, rows)
