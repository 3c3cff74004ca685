"""An upgrade from the first round (issue 30, item 6), on the database of the environment (run in a subprocess by
tests/test_seal_upgrade.py against a throwaway SQLite file or PostgreSQL database, with no seal key configured).

    NOVELGRAPH_SQLITE_PATH=/tmp/x.sqlite3 python -m tests.migrate_first_round

The store is built at the first round's migration state (before the seal key ring, commit b73fb5a^), with the
first round's seal recipe: ``seal = HMAC-SHA256("seal:" + SECRET_KEY, hash)`` and no key id. Then ``migrate``
upgrades it, and every book's log is verified with whatever the settings say (nothing about old keys). Prints one
JSON line: what ``migrate`` printed, and each book's verification.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from io import StringIO

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novelgraph.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.migrations.executor import MigrationExecutor  # noqa: E402
from django.db.models.signals import pre_migrate  # noqa: E402

from approvals.chain import GENESIS_HASH, chain_fields, entry_hash  # noqa: E402

pre_migrate.disconnect(dispatch_uid="novelgraph-backup-before-migrate")

# The last migration of each app in the first round (git show b73fb5a^ --name-only ... migrations).
FIRST_ROUND = [
    ("novelgraph", "0002_apikey"),
    ("discovery", "0006_session_questions_and_entry_provenance"),
    ("library", "0003_search_index"),
    ("loop", "0003_role_and_gate_choices_from_one_place"),
    ("agents", "0001_agent_runs"),
    ("approvals", "0005_gate_labels"),
]


def first_round_seal(hash_hex: str) -> str:
    """The first round's recipe: the key derived from SECRET_KEY when NOVELGRAPH_SEAL_KEY was unset."""
    return hmac.new(f"seal:{settings.SECRET_KEY}".encode(), hash_hex.encode(), hashlib.sha256).hexdigest()


def build_first_round_store() -> list[str]:
    call_command("migrate", "auth", interactive=False, verbosity=0, skip_checks=True, stdout=StringIO())
    for app, name in FIRST_ROUND:
        call_command("migrate", app, name, interactive=False, verbosity=0, skip_checks=True, stdout=StringIO())
    state = MigrationExecutor(connection).loader.project_state([(app, name) for app, name in FIRST_ROUND])
    User = state.apps.get_model("auth", "User")
    Book = state.apps.get_model("discovery", "Book")
    Entry = state.apps.get_model("approvals", "DecisionLogEntry")
    author = User.objects.create(username="ada", password="!")
    books = []
    start = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
    for b in range(2):
        book = Book.objects.create(title=f"First-round book {b}", slug=f"first-round-{b}", owner=author)
        prev = GENESIS_HASH
        for sequence in range(1, 4):
            ts = start + timedelta(minutes=sequence)
            fields = chain_fields(
                book_id=book.pk,
                sequence=sequence,
                ts=ts,
                gate=None,
                decision="approve",
                subject_type="note",
                subject_id=f"note-{sequence}",
                ratified_by="author:ada",
                reversibility_class="reversible",
                rationale=f"Réason {sequence} of the first round.",
                detail={},
                prev_hash=prev,
            )
            digest = entry_hash(fields)
            Entry.objects.create(
                book_id=book.pk,
                sequence=sequence,
                ts=ts,
                gate=None,
                decision="approve",
                subject_type="note",
                subject_id=f"note-{sequence}",
                ratified_by="author:ada",
                ratified_by_user_id=author.pk,
                reversibility_class="reversible",
                rationale=fields["rationale"],
                detail={},
                prev_hash=prev,
                hash=digest,
                seal=first_round_seal(digest),
            )
            prev = digest
        books.append(str(book.pk))
    return books


def main() -> int:
    books = build_first_round_store()
    # The other apps first, as an upgrade that stops half-way leaves it: their tables are current, the log's not
    # yet, so the checks ``migrate`` runs before migrating can read the books.
    for app in ("novelgraph", "discovery", "library", "loop", "agents"):
        call_command("migrate", app, interactive=False, verbosity=0, skip_checks=True, stdout=StringIO())
    from approvals.checks import decision_log_check
    from approvals.selectors import decision_log_verify
    from discovery.models import Book

    half_way = [str(warning.msg) for warning in decision_log_check()]
    verified_half_way = decision_log_verify(Book.objects.get(pk=books[0])).reason
    out, err = StringIO(), StringIO()
    call_command("migrate", interactive=False, verbosity=1, stdout=out, stderr=err)
    report = {
        "verified half-way": verified_half_way,
        "checks half-way": half_way,
        "migrate printed": out.getvalue() + err.getvalue(),
        "seal key configured": settings.DECISION_LOG_SEAL_KEY_CONFIGURED,
        "old keys": len(settings.DECISION_LOG_SEAL_OLD_KEYS),
        "books": {pk: decision_log_verify(Book.objects.get(pk=pk)).as_dict() for pk in books},
    }
    print(json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
