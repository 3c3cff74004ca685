from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """The built-in runner of the three agent roles, as its own app inside discovery/ (own migrations)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "discovery.agents"
    label = "agents"
    verbose_name = "Agent runs"

    def ready(self) -> None:
        from approvals.signals import verdict_recorded
        from discovery.signals import person_acted
        from library.views import research_page_part_register
        from novelgraph.core.runs import register_run_records

        from . import duties
        from .selectors import produced_by, ran_for
        from .services import agents_take_the_next_step
        from .views import research_collect_part

        # Pages below the agents (a book's pages, the decision page) name the run behind what they show.
        register_run_records(produced_by=produced_by, ran_for=ran_for)

        # After the author's turn, confirmation or verdict, Sol takes the next step (when the book lets her).
        def next_step(sender, book, **kwargs) -> None:
            agents_take_the_next_step(book=book)

        person_acted.connect(next_step, weak=False, dispatch_uid="agents-next-step-after-an-act")
        verdict_recorded.connect(next_step, weak=False, dispatch_uid="agents-next-step-after-a-verdict")
        duties.register()  # the agent runs an outside agent may queue through MCP
        # The research page (the library's, below the agents) offers to ask Luna to collect a page.
        research_page_part_register(research_collect_part)
