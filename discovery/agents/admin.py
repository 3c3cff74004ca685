"""Agent runs, for staff to look at: a run is a record of what happened, so nothing here is editable."""

from django.contrib import admin

from novelgraph.core.admin import ReadOnlyAdmin

from .models import AgentRun


@admin.register(AgentRun)
class AgentRunAdmin(ReadOnlyAdmin):
    list_display = ("book", "role", "task", "status", "provider", "model", "created_at", "duration_ms", "cost")
    list_filter = ("status", "role", "task", "provider")
    search_fields = ("book__title", "reason")
