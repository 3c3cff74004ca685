from django.apps import AppConfig


class DiscoveryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "discovery"

    def ready(self) -> None:
        # The story-charter and canon-promotion subjects of approvals.services.approval_decide.
        from .services.subjects import register

        register()
