"""Startup checks: every book's decision log is verified whenever Django runs its system checks.

``manage.py check``, ``runserver`` and ``migrate`` run it, so a broken chain is visible at
every start. It is a WARNING, not an error: the site still starts (the author must be able
to read her book and its log to investigate). It is silent before the tables exist, and while the log's
migrations are not all applied (``migrate`` runs it before it migrates an old store).
"""

from __future__ import annotations

from django.core.checks import Tags, Warning, register
from django.db import DatabaseError, connection

from discovery.models import Book

from .selectors import decision_log_verify, log_migrations_pending

DECISION_LOG_TABLE = "approvals_decisionlogentry"


@register(Tags.security, "novelgraph")
def decision_log_check(app_configs=None, **kwargs) -> list[Warning]:
    """One warning per book whose decision log fails verification, naming the first bad entry."""
    try:
        if DECISION_LOG_TABLE not in connection.introspection.table_names():
            return []
        if log_migrations_pending():
            # ``migrate`` runs the checks before it migrates: an old store's table is not yet what this code
            # reads, and saying it was altered would be false. The logs are verified at the next start.
            return []
        book_ids = Book.objects.filter(decision_log__isnull=False).values_list("pk", flat=True).distinct()
        warnings = []
        for book in Book.objects.filter(pk__in=list(book_ids)).order_by("title"):
            result = decision_log_verify(book)
            if not result.ok:
                warnings.append(
                    Warning(
                        f"The decision log of “{book.title}” ({book.pk}) fails verification at entry "
                        f"#{result.first_bad_sequence}: {result.reason}.",
                        hint=(
                            "Someone changed the log outside the application, or the seal key changed. "
                            "Compare with a backup (SECURITY.md, README 'Backups and restore')."
                        ),
                        obj=f"book {book.pk}",
                        id="novelgraph.W001",
                    )
                )
        return warnings
    except DatabaseError:
        # No database to look at (e.g. makemigrations on a machine without PostgreSQL).
        return []
