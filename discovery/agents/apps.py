from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """The built-in runner of the three agent roles, as its own app inside discovery/ (own migrations)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "discovery.agents"
    label = "agents"
    verbose_name = "Agent runs"

    def ready(self) -> None:
        from novelgraph.core.runs import register_run_records

        from . import duties
        from .selectors import produced_by, ran_for

        # Pages below the agents (a book's pages, the decision page) name the run behind what they show.
        register_run_records(produced_by=produced_by, ran_for=ran_for)
        duties.register()
