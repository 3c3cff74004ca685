from django.apps import AppConfig


class LibraryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "library"
    verbose_name = "Literary library"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_migrate

        from approvals.canon_record import register_canon_kind
        from approvals.subjects import register_subject_handler

        from . import duties, search
        from .seed import seed_curated_library_after_migrate
        from .services import RESEARCH_CANON, RESEARCH_HANDLER

        connection_created.connect(search.register_sqlite_functions, dispatch_uid="library_sqlite_functions")
        post_migrate.connect(search.ensure_search_schema, sender=self, dispatch_uid="library_search_schema")
        # The curated craft library is present after every migrate and flush (tests).
        post_migrate.connect(seed_curated_library_after_migrate, sender=self, dispatch_uid="library_curated_seed")
        # The research-admission subject of approvals.services.approval_decide, and what an admission makes canon.
        register_subject_handler(RESEARCH_HANDLER)
        register_canon_kind(RESEARCH_CANON)
        duties.register()  # the library's MCP tool and resource
