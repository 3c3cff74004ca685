from django.apps import AppConfig

APPEND_ONLY = (
    "discovery_scratchpadentry",
    "discovery_contextdossier",
    "discovery_sessionquestion",
    "discovery_observationrevision",
    "discovery_chapterrevision",
)


class DiscoveryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "discovery"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from approvals.canon_record import register_canon_kind
        from approvals.subjects import register_subject_handler
        from approvals.waiting import register_waiting
        from novelgraph.core.db import guard_tables_after_migrate, register_append_only
        from novelgraph.core.signals import book_event

        from . import duties, notifications, webhooks
        from .selectors import observations_waiting
        from .services.charters import CHARTER_CANON, CHARTER_HANDLER
        from .services.knowledge import ensure_literary_base_after_migrate
        from .services.manuscript import ENTRY_HANDLER
        from .services.subjects import CLAIM_CANON, CLAIM_HANDLER

        # The story-charter and canon-promotion subjects of approvals.services.approval_decide, and what their
        # approvals make canon (in the order verification checks them: charters, then claims).
        register_subject_handler(CHARTER_HANDLER)
        register_subject_handler(CLAIM_HANDLER)
        register_subject_handler(ENTRY_HANDLER)  # an agent's proposed codex entry
        register_canon_kind(CHARTER_CANON)
        register_canon_kind(CLAIM_CANON)
        # What waits for the author beside her decisions, in the one inbox.
        register_waiting(observations_waiting)
        # What agents may do and read through MCP (the roof's server reads the kernel's registry).
        duties.register()
        # A book's events are posted to its webhook (background work, signed).
        book_event.connect(webhooks.on_book_event, dispatch_uid="discovery_webhooks")
        # ... and told by e-mail (at once, or in the daily digest) to the people who chose to hear of them.
        book_event.connect(notifications.on_book_event, dispatch_uid="discovery_notifications")
        # The scratchpad and dossier snapshots refuse UPDATE and DELETE; after every migrate and
        # flush (tests) the guards and the shared literary base are back.
        register_append_only(*APPEND_ONLY)
        post_migrate.connect(
            guard_tables_after_migrate(*APPEND_ONLY), sender=self, weak=False, dispatch_uid="discovery_append_only"
        )
        post_migrate.connect(ensure_literary_base_after_migrate, sender=self, dispatch_uid="discovery_literary_base")
