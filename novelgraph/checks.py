"""Startup checks: every book's decision log is verified whenever Django runs its system checks.

``manage.py check``, ``runserver`` and ``migrate`` run it, so a broken chain is visible at
every start. It is a WARNING, not an error: the site still starts (the author must be able
to read her book and its log to investigate). It is silent before the tables exist.
"""

from __future__ import annotations

from django.core.checks import Tags, Warning, register
from django.db import DatabaseError, connection

DECISION_LOG_TABLE = "approvals_decisionlogentry"


@register(Tags.security, "novelgraph")
def decision_log_check(app_configs=None, **kwargs) -> list[Warning]:
    """One warning per book whose decision log fails verification, naming the first bad entry."""
    from approvals.selectors import decision_log_verify
    from discovery.models import Book

    try:
        if DECISION_LOG_TABLE not in connection.introspection.table_names():
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


@register(Tags.security, deploy=True)
def csrf_middleware_check(app_configs=None, **kwargs) -> list[Warning]:
    """Stands in for Django's security.W003, silenced in settings: that check looks for CsrfViewMiddleware by
    its dotted name, and ours is a subclass that bearer-key API requests skip (novelgraph.browser_only).
    CSRF protection is still required: Django's middleware or a subclass of it."""
    from django.conf import settings
    from django.middleware.csrf import CsrfViewMiddleware
    from django.utils.module_loading import import_string

    if any(issubclass(import_string(path), CsrfViewMiddleware) for path in settings.MIDDLEWARE):
        return []
    return [
        Warning(
            "No CSRF protection: neither CsrfViewMiddleware nor a subclass of it is in MIDDLEWARE.",
            hint="Keep novelgraph.browser_only.BrowserCsrfViewMiddleware (or Django's own) in MIDDLEWARE.",
            id="novelgraph.W003",
        )
    ]


@register(Tags.security, deploy=True)
def seal_key_check(app_configs=None, **kwargs) -> list[Warning]:
    """Issue 20: in production (DEBUG off) the decision log's seal key is configured, not the local one.

    Without NOVELGRAPH_SEAL_KEY the seal key is the random one generated in var/seal.key, beside the
    database: whoever copies the var directory gets the key with the log, and the seals prove nothing."""
    from django.conf import settings

    if settings.DEBUG or getattr(settings, "DECISION_LOG_SEAL_KEY_CONFIGURED", False):
        return []
    return [
        Warning(
            "No seal key is configured: the decision log is sealed with the local key in var/seal.key, "
            "kept beside the database.",
            hint=(
                "Set NOVELGRAPH_SEAL_KEY to a long random secret kept outside the server's data directory "
                "(and move the current key to NOVELGRAPH_SEAL_OLD_KEYS so existing entries keep verifying). "
                "See SECURITY.md."
            ),
            id="novelgraph.W004",
        )
    ]
