"""``migrate <app> zero`` and back, for each of our apps, on the database of the environment (run in a subprocess
by tests/test_migrate_zero.py against a throwaway SQLite file or PostgreSQL database).

    NOVELGRAPH_SQLITE_PATH=/tmp/x.sqlite3 python -m tests.migrate_roundtrip discovery library ...

Migrates everything, then for each app: loads the demo book when it is gone, unapplies the app (and what
depends on it), checks its tables are gone and the unapply did not fail in a ``post_migrate`` handler,
migrates back, and checks every
table, the seeded rows (curated library, literary base, loop roster) and the append-only guards are back.
Prints one JSON line per app; exits non-zero on the first failure. The backup ``migrate`` takes first is left
out (tests/test_backup*.py cover it; a ``pg_dump`` per step would make this slow).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from io import StringIO

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novelgraph.settings")

import django

django.setup()

from django.apps import apps  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models.signals import pre_migrate  # noqa: E402

from novelgraph.core.db import APPEND_ONLY_TABLES  # noqa: E402

pre_migrate.disconnect(dispatch_uid="novelgraph-backup-before-migrate")


def tables() -> set[str]:
    return set(connection.introspection.table_names())


def triggers() -> set[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        return {row[0] for row in cursor.fetchall()}


def seeded() -> dict[str, int]:
    from discovery.loop.models import RosterEntry
    from discovery.models import KnowledgeBase
    from library.models import KnowledgeSource

    return {
        "curated sources": KnowledgeSource.objects.count(),
        "literary bases": KnowledgeBase.objects.filter(scope=KnowledgeBase.Scope.LITERARY).count(),
        "roster entries": RosterEntry.objects.count(),
    }


def own_tables(label: str) -> set[str]:
    """The tables the app's own migrations create (the API key's table keeps the name discovery gave it)."""
    models = apps.get_app_config(label).get_models(include_auto_created=True)
    return {m._meta.db_table for m in models if m._meta.db_table.startswith(f"{label}_")}


def main(labels: list[str]) -> int:
    call_command("migrate", "--noinput", verbosity=0)
    all_tables, all_triggers, all_seeded = tables(), triggers(), seeded()
    guards = {t for t in all_triggers if any(t.startswith(table) for table in APPEND_ONLY_TABLES)}
    for label in labels:
        step = {"app": label}
        try:
            call_command("demo", "--if-empty", stdout=StringIO())  # every app goes with data
            call_command("migrate", label, "zero", "--noinput", verbosity=0)
            left = own_tables(label) & tables()
            step["tables left after zero"] = sorted(left)
            call_command("migrate", "--noinput", verbosity=0)
            step["tables missing after back"] = sorted(all_tables - tables())
            step["guards missing after back"] = sorted(guards - triggers())
            step["seeded after back"] = seeded()
            step["ok"] = not left and not step["tables missing after back"] and not step["guards missing after back"]
            step["ok"] = step["ok"] and all(step["seeded after back"][k] >= v for k, v in all_seeded.items())
        except Exception:
            step["ok"] = False
            step["error"] = traceback.format_exc()[-3000:]
        print(json.dumps(step), flush=True)
        if not step["ok"]:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
