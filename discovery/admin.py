from django.contrib import admin, messages
from django.db import models as db_models

from novelgraph.forms import BoundedModelMultipleChoiceField

from .access import api_key_revoke
from .models import (
    ApiKey,
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


class ReadOnlyAdmin(admin.ModelAdmin):
    """History is read-only in the admin: decisions and agent notes are never edited here."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Series)
class SeriesAdmin(admin.ModelAdmin):
    list_display = ["title", "owner", "publication_target", "created_at"]
    search_fields = ["title"]


@admin.register(Book)
class BookAdmin(admin.ModelAdmin):
    list_display = ["title", "series", "owner", "genre_pack", "planned_order"]
    list_filter = ["genre_pack"]
    search_fields = ["title", "premise"]
    prepopulated_fields = {"slug": ["title"]}
    filter_horizontal = ["editors"]
    # editors=<a 20-digit number> is a form error, not a database overflow (novelgraph.forms).
    formfield_overrides = {db_models.ManyToManyField: {"form_class": BoundedModelMultipleChoiceField}}


@admin.register(Chapter)
class ChapterAdmin(admin.ModelAdmin):
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
class KnowledgeBaseAdmin(admin.ModelAdmin):
    list_display = ["name", "scope", "owner_id"]
    list_filter = ["scope"]


@admin.register(KnowledgeClaim)
class KnowledgeClaimAdmin(ReadOnlyAdmin):
    list_display = ["subject", "predicate", "base", "status", "provenance"]
    list_filter = ["status", "provenance", "base__scope"]
    search_fields = ["subject", "predicate"]


@admin.register(KnowledgeLink)
class KnowledgeLinkAdmin(admin.ModelAdmin):
    list_display = ["book", "base", "relation"]


@admin.register(ContextDossier)
class ContextDossierAdmin(ReadOnlyAdmin):
    list_display = ["book", "agent_role", "created_at"]
    list_filter = ["agent_role"]


@admin.register(Handoff)
class HandoffAdmin(ReadOnlyAdmin):
    list_display = ["book", "from_role", "to_role", "status", "created_at"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are created with `manage.py create_api_key` (the secret is shown once); here they are listed and revoked."""

    list_display = ["prefix", "name", "role", "owner", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["role", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name", "owner__username"]
    readonly_fields = ["prefix", "key_hash", "owner", "role", "created_at", "last_used_at", "revoked_at"]
    fields = [
        "name",
        "prefix",
        "role",
        "owner",
        "books",
        "created_at",
        "last_used_at",
        "revoked_at",
        "key_hash",
    ]
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request, queryset):
        for key in queryset:
            api_key_revoke(key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).", messages.SUCCESS)
