from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from novelgraph.backup import BackupUnsupported, sqlite_backup


class Command(BaseCommand):
    help = (
        "Take a consistent copy of the SQLite database while the app runs (SQLite online backup API), "
        "into var/backups/ with a timestamp. On PostgreSQL, explains how to use pg_dump and fails."
    )
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--output", type=Path, help="where to write the copy (default: var/backups/<timestamp>)")
        parser.add_argument("--database", default="default")

    def handle(self, *args, output, database, **options):
        try:
            path = sqlite_backup(using=database, output=output)
        except (BackupUnsupported, FileExistsError, RuntimeError) as exc:
            raise CommandError(str(exc))
        size = path.stat().st_size
        self.stdout.write(f"Backed up the database to {path} ({size} bytes).")
