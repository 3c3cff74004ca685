"""API keys and people in the admin.

Keys are listed and revoked, never created or widened here. People (authors and editors) are created
here by staff, without a password, and invited by e-mail: one action sends each a one-time link to choose
one, at her own address (staff never see the link). A person's password is hers:
no staff member (superusers included) sets, resets or disables the password of another account here, nor
changes the e-mail address of one that has a password (the reset e-mail goes there); see
``novelgraph.core.services`` for the rules.

A key's secret is shown once to its owner when she creates it (the keys page or
``create_api_key``); its role, owner and the books it is limited to never change afterwards.
"""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UsernameField
from django.http import HttpResponseRedirect
from django.urls import reverse

from .errors import Conflict
from .models import ApiKey
from .services import api_key_revoke, set_password_invitation_send, staff_may_change_email, staff_may_set_password


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


# --- People: staff create authors and editors here and invite each by e-mail to set a password -----


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


class PersonCreationForm(forms.ModelForm):
    """A new account: a username and an e-mail address, and no password (she chooses it through the
    one-time link, so no one else ever knows it)."""

    class Meta:
        model = User
        fields = ("username", "email")
        field_classes = {"username": UsernameField}

    def save(self, commit: bool = True):
        user = super().save(commit=False)
        user.set_unusable_password()
        if commit:
            user.save()
        return user


PASSWORD_NOT_YOURS = (
    "Staff cannot set, reset or disable another person's password. A new account gets its password "
    'through a one-time link e-mailed to her (the action "Invite by e-mail" in the list); a person '
    'who has a password and forgot it resets it herself by e-mail ("Forgot your password?" on the login page).'
)


@admin.register(User)
class PersonAdmin(UserAdmin):
    """Django's user admin, plus an action that invites a new person by e-mail (create the account with
    her address, then invite her): she gets a one-time link to set her password. The password form and
    the password field are there for the staff member's own account only; another's e-mail address is
    read-only once she has a password."""

    actions = ["invite_by_email"]
    add_form = PersonCreationForm
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("username", "email")}),)

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None or staff_may_set_password(staff=request.user, person=obj):
            return fieldsets
        return [
            (name, {**options, "fields": [f if f != "password" else "password_status" for f in options["fields"]]})
            for name, options in fieldsets
        ]

    def get_readonly_fields(self, request, obj=None):
        readonly = list(super().get_readonly_fields(request, obj))
        if obj is not None and not staff_may_set_password(staff=request.user, person=obj):
            readonly.append("password_status")
        if obj is not None and not staff_may_change_email(staff=request.user, person=obj):
            readonly.append("email")
        return readonly

    @admin.display(description="Password")
    def password_status(self, obj) -> str:
        if obj.has_usable_password():
            return (
                "Set by her. Only she can change it; if she forgot it, she resets it herself by e-mail "
                '("Forgot your password?" on the login page).'
            )
        return 'None yet: invite her by e-mail to choose it (the action "Invite by e-mail" in the list).'

    def user_change_password(self, request, id, form_url=""):
        person = self.get_object(request, unquote(id))
        if person is not None and not staff_may_set_password(staff=request.user, person=person):
            self.message_user(request, PASSWORD_NOT_YOURS, messages.ERROR)
            return HttpResponseRedirect(reverse("admin:auth_user_change", args=[person.pk]))
        return super().user_change_password(request, id, form_url)

    @admin.action(description="Invite by e-mail (a one-time link to set the password)")
    def invite_by_email(self, request, queryset):
        for user in queryset:
            try:
                address = set_password_invitation_send(person=user)
            except Conflict as refused:
                self.message_user(request, f"{refused.message}.", messages.ERROR)
                continue
            except OSError as failed:
                self.message_user(
                    request, f"The invitation to {user.get_username()} was not sent: {failed}.", messages.ERROR
                )
                continue
            self.message_user(
                request,
                f"Invitation sent to {address} for the username {user.get_username()}: "
                "a one-time link to choose her password.",
                messages.SUCCESS,
            )
