from django.apps import AppConfig


class DiscoveryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "discovery"

    def ready(self) -> None:
        # The story-charter and canon-promotion subjects of approvals.services.approval_decide.
        from django.db.models.signals import post_migrate

        from novelgraph.db import restore_store_invariants

        from .services.subjects import register

        register()
        # After migrate and after flush (tests): guards on, seeded rows present.
        post_migrate.connect(restore_store_invariants, sender=self, dispatch_uid="novelgraph_store_invariants")
