from django.apps import AppConfig


class LoopConfig(AppConfig):
    """The discovery loop of seed 002, as its own app inside discovery/ (own migrations)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "discovery.loop"
    label = "loop"
    verbose_name = "Discovery loop"

    def ready(self) -> None:
        from approvals.services import register_subject_handler

        from .services.verdicts import GATE_HANDLER

        register_subject_handler(GATE_HANDLER)
