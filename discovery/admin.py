"""Books and their discovery, for staff to look at: nothing here is editable.

Staff curate the literary library (``library.admin``); they do not own books. A book's
owner and editors, its knowledge bases and their scopes, the links between them, and every
record of a discovery belong to the book's author and change only through her own actions
(the services the API and the pages call). So the admin shows them and changes none.
"""

from django.contrib import admin

from novelgraph.core.admin import ReadOnlyAdmin

from .models import (
    Book,
    Chapter,
    ContextDossier,
    DiscoverySession,
    Handoff,
    KnowledgeBase,
    KnowledgeClaim,
    KnowledgeLink,
    Observation,
    ScratchpadEntry,
    Series,
    StoryCharter,
    ThrustCandidate,
    Turn,
)


@admin.register(Series)
class SeriesAdmin(ReadOnlyAdmin):
    list_display = ["title", "owner", "publication_target", "created_at"]
    search_fields = ["title"]


@admin.register(Book)
class BookAdmin(ReadOnlyAdmin):
    list_display = ["title", "series", "owner", "genre_pack", "planned_order"]
    list_filter = ["genre_pack"]
    search_fields = ["title", "premise"]


@admin.register(Chapter)
class ChapterAdmin(ReadOnlyAdmin):
    list_display = ["book", "number", "title"]


@admin.register(DiscoverySession)
class DiscoverySessionAdmin(ReadOnlyAdmin):
    list_display = ["book", "status", "created_at"]
    list_filter = ["status"]


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = ["session", "ordinal", "role", "created_at"]


@admin.register(Observation)
class ObservationAdmin(ReadOnlyAdmin):
    list_display = ["key", "provenance", "status", "confidence"]
    list_filter = ["provenance", "status"]


@admin.register(ScratchpadEntry)
class ScratchpadEntryAdmin(ReadOnlyAdmin):
    list_display = ["session", "sequence", "agent_role", "kind", "created_at"]
    list_filter = ["agent_role", "kind"]
    search_fields = ["content"]


@admin.register(ThrustCandidate)
class ThrustCandidateAdmin(ReadOnlyAdmin):
    list_display = ["title", "kind", "status", "proposed_by"]


@admin.register(StoryCharter)
class StoryCharterAdmin(ReadOnlyAdmin):
    list_display = ["book", "version", "status", "proposed_by", "created_at"]
    list_filter = ["status"]


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(ReadOnlyAdmin):
    list_display = ["name", "scope", "owner_id"]
    list_filter = ["scope"]


@admin.register(KnowledgeClaim)
class KnowledgeClaimAdmin(ReadOnlyAdmin):
    list_display = ["subject", "predicate", "base", "status", "provenance"]
    list_filter = ["status", "provenance", "base__scope"]
    search_fields = ["subject", "predicate"]


@admin.register(KnowledgeLink)
class KnowledgeLinkAdmin(ReadOnlyAdmin):
    list_display = ["book", "base", "relation"]


@admin.register(ContextDossier)
class ContextDossierAdmin(ReadOnlyAdmin):
    list_display = ["book", "agent_role", "created_at"]
    list_filter = ["agent_role"]


@admin.register(Handoff)
class HandoffAdmin(ReadOnlyAdmin):
    list_display = ["book", "from_role", "to_role", "status", "created_at"]
