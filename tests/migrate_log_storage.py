"""Migration ``approvals.0011`` (each decision-log entry stored once, as its hashed text) on a log with data, both
ways, on the database of the environment (run in a subprocess by tests/test_migrate_zero.py against a throwaway
SQLite file or PostgreSQL database).

    NOVELGRAPH_SQLITE_PATH=/tmp/x.sqlite3 python -m tests.migrate_log_storage

Loads the demo book, then: back to 0010 and forward again, and the log still verifies; back to 0010, one
entry's rationale rewritten in its old column, forward again, and verification names that entry. Prints one
JSON line; exits non-zero on failure.
"""

from __future__ import annotations

import json
import os
import sys
from io import StringIO

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novelgraph.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models.signals import pre_migrate  # noqa: E402

from novelgraph.core.db import install_append_only, remove_append_only  # noqa: E402

pre_migrate.disconnect(dispatch_uid="novelgraph-backup-before-migrate")
TABLE = "approvals_decisionlogentry"


def migrate(*args: str) -> None:
    call_command("migrate", *args, interactive=False, verbosity=0, stdout=StringIO())


def verification() -> dict:
    from approvals.selectors import decision_log_verify
    from discovery.models import Book

    book = Book.objects.get(decision_log__isnull=False, decision_log__sequence=1)
    return decision_log_verify(book).as_dict()


def main() -> int:
    migrate()
    call_command("demo", stdout=StringIO())
    report = {"before": verification()}
    migrate("approvals", "0010")
    migrate()
    report["back and forth"] = verification()
    migrate("approvals", "0010")
    remove_append_only(connection, [TABLE])
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {TABLE} SET rationale = 'Rewritten before the upgrade.' WHERE sequence = 2")
    install_append_only(connection, [TABLE])
    migrate()
    report["rewritten before the upgrade"] = verification()
    report["ok"] = (
        report["before"]["ok"]
        and report["back and forth"] == report["before"]
        and report["rewritten before the upgrade"]["first_bad_sequence"] == 2
        and report["rewritten before the upgrade"]["reason"] == "hash does not match the entry's content"
    )
    print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
