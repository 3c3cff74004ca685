"""The kernel every app stands on: who a caller is (API keys, sessions, roles), the error set, the database
guards, shared input schemas, paging, the seal key, backups and the site's security middleware.

It imports no app. Its app label stays ``novelgraph`` (the label its tables and migrations were made under).
"""

from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import pre_migrate


class CoreConfig(AppConfig):
    name = "novelgraph.core"
    label = "novelgraph"
    verbose_name = "NovelGraph kernel: keys and logins"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the CSRF and seal-key system checks)
        from .backup import backup_before_migrate

        # Sent once per app per migrate run; listening to this app alone makes it once per run.
        pre_migrate.connect(backup_before_migrate, sender=self, dispatch_uid="novelgraph-backup-before-migrate")
