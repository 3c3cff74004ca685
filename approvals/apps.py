from django.apps import AppConfig

APPEND_ONLY = ("approvals_decisionlogentry", "approvals_decisionlistitem")


class ApprovalsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "approvals"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from novelgraph.core.db import guard_tables_after_migrate, register_append_only

        from . import (
            checks,  # noqa: F401  (registers the decision log's system check)
            duties,
        )

        # What agents may read of approvals and the log through MCP (the roof's server reads the kernel's registry).
        duties.register()
        # The decision log refuses UPDATE and DELETE; the guard is back after every migrate and flush.
        register_append_only(*APPEND_ONLY)
        post_migrate.connect(
            guard_tables_after_migrate(*APPEND_ONLY), sender=self, weak=False, dispatch_uid="approvals_append_only"
        )
