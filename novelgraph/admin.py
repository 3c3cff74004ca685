"""API keys in the admin: listed and revoked, never created or widened here.

A key's secret is shown once to its owner when she creates it (the keys page or
``create_api_key``); its role, owner and the books it is limited to never change afterwards.
"""

from django.contrib import admin, messages

from .models import ApiKey
from .services import api_key_revoke


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "role", "owner", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["role", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name", "owner__username"]
    fields = ["name", "prefix", "role", "owner", "books", "created_at", "last_used_at", "revoked_at", "key_hash"]
    readonly_fields = fields
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Revoke the selected keys", permissions=["view"])
    def revoke(self, request, queryset):
        for key in queryset:
            api_key_revoke(key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).", messages.SUCCESS)
