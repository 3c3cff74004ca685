from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """The built-in runner of the three agent roles, as its own app inside discovery/ (own migrations)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "discovery.agents"
    label = "agents"
    verbose_name = "Agent runs"
