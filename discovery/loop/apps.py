from django.apps import AppConfig


class LoopConfig(AppConfig):
    """The discovery loop of seed 002, as its own app inside discovery/ (own migrations)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "discovery.loop"
    label = "loop"
    verbose_name = "Discovery loop"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from approvals.subjects import register_subject_handler
        from approvals.waiting import register_waiting
        from discovery.panels import register_book_panel
        from discovery.signals import (
            charter_decided,
            charter_proposed,
            discovery_started,
            premise_changed,
            premise_impact,
        )

        from . import duties
        from .requirements import missing_panel
        from .roster import seed_roster_after_migrate
        from .selectors import loop_panel, questions_waiting
        from .services.base import loop_on_discovery_started
        from .services.reopen import (
            charter_reopen_card,
            charter_reopen_settle,
            premise_reopen_g0,
            premise_reopen_impact,
        )
        from .services.verdicts import GATE_HANDLER

        register_subject_handler(GATE_HANDLER)
        register_book_panel(loop_panel)
        register_book_panel(missing_panel)
        register_waiting(questions_waiting)  # the questions routed to the author, in her inbox
        duties.register()  # Sol's loop tools for MCP
        # Discovery announces; the loop follows: it starts with the discovery, and a charter version proposed
        # after G2 reopens convergence until the author decides that version.
        discovery_started.connect(loop_on_discovery_started, dispatch_uid="loop_on_discovery_started")
        charter_proposed.connect(charter_reopen_card, dispatch_uid="loop_charter_reopen_card")
        charter_decided.connect(charter_reopen_settle, dispatch_uid="loop_charter_reopen_settle")
        # A new premise reopens G0, with the impact answered first.
        premise_impact.connect(premise_reopen_impact, dispatch_uid="loop_premise_reopen_impact")
        premise_changed.connect(premise_reopen_g0, dispatch_uid="loop_premise_reopen_g0")
        # The roster is data: present after every migrate and flush (tests), never overwriting staff's edits.
        post_migrate.connect(seed_roster_after_migrate, sender=self, dispatch_uid="loop_roster_seed")
