from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from novelgraph.core.backup import BackupUnsupported, database_backup


class Command(BaseCommand):
    help = (
        "Take a consistent copy of the database while the app runs, into var/backups/ with a timestamp: "
        "SQLite's online backup API (.sqlite3), or pg_dump --format=custom on PostgreSQL (.dump; "
        "restore with pg_restore --clean --if-exists)."
    )
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--output", type=Path, help="where to write the copy (default: var/backups/<timestamp>)")
        parser.add_argument("--database", default="default")

    def handle(self, *args, output, database, **options):
        try:
            path = database_backup(using=database, output=output)
        except (BackupUnsupported, FileExistsError, RuntimeError) as exc:
            raise CommandError(str(exc))
        size = path.stat().st_size
        self.stdout.write(f"Backed up the database to {path} ({size} bytes).")
