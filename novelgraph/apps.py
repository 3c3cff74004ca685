"""The project package as a tiny app: cross-cutting safety (login throttling, startup checks, backups)."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import pre_migrate


class NovelGraphConfig(AppConfig):
    name = "novelgraph"
    verbose_name = "NovelGraph safety"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the decision-log and CSRF system checks)
        from .backup import backup_before_migrate

        # Sent once per app per migrate run; listening to this app alone makes it once per run.
        pre_migrate.connect(backup_before_migrate, sender=self, dispatch_uid="novelgraph-backup-before-migrate")
