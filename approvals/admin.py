from django.contrib import admin

from novelgraph.core.admin import ReadOnlyAdmin

from .models import Approval, DecisionLogEntry


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdmin):
    list_display = ["summary", "kind", "book", "status", "verdict", "decided_by", "created_at"]
    list_filter = ["kind", "status", "verdict"]
    search_fields = ["summary", "rationale"]


@admin.register(DecisionLogEntry)
class DecisionLogEntryAdmin(ReadOnlyAdmin):
    list_display = ["book", "sequence", "ts", "gate", "decision", "subject_type", "ratified_by"]
    list_filter = ["decision", "gate", "reversibility_class"]
    search_fields = ["rationale", "subject_id"]
