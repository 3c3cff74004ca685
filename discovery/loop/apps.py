from django.apps import AppConfig


class LoopConfig(AppConfig):
    """The discovery loop of seed 002, as its own app inside discovery/ (own migrations)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "discovery.loop"
    label = "loop"
    verbose_name = "Discovery loop"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from approvals.services import register_subject_handler

        from .roster import seed_roster_after_migrate
        from .services.verdicts import GATE_HANDLER

        register_subject_handler(GATE_HANDLER)
        # The roster is data: present after every migrate and flush (tests), never overwriting staff's edits.
        post_migrate.connect(seed_roster_after_migrate, sender=self, dispatch_uid="loop_roster_seed")
