"""API keys and people in the admin.

Keys are listed and revoked, never created or widened here. People (authors and editors) are created
here by staff, each sent a one-time link to set a password.

A key's secret is shown once to its owner when she creates it (the keys page or
``create_api_key``); its role, owner and the books it is limited to never change afterwards.
"""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from .models import ApiKey
from .services import api_key_revoke


class ReadOnlyAdmin(admin.ModelAdmin):
    """Read-only in the admin: an author's books, canon and history are never edited here."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


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


# --- People: staff create authors and editors here, each with a one-time link to set a password ----


def set_password_link(request, user) -> str:
    """A one-time link for ``user`` to choose a password (Django's reset token: it stops working once a
    password is set, after a login, or after PASSWORD_RESET_TIMEOUT)."""
    from django.contrib.auth.tokens import default_token_generator
    from django.urls import reverse
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    uidb64 = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    return request.build_absolute_uri(reverse("password_set", args=[uidb64, token]))


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class PersonAdmin(UserAdmin):
    """Django's user admin, plus an action that makes a one-time set-password link to send to the person
    (create the account with "Password-based authentication: disabled", then make the link)."""

    actions = ["make_set_password_link"]

    @admin.action(description="Make a one-time link to set the password")
    def make_set_password_link(self, request, queryset):
        for user in queryset.filter(is_active=True):
            link = set_password_link(request, user)
            self.message_user(
                request,
                f"Send this to {user.get_username()} (it works once): {link}",
                messages.SUCCESS,
            )
