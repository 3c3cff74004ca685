"""API keys: created by their owner (shown once), limited to books she may touch, revoked at once.

Accounts: a person's password is hers. Staff invite a new account (no usable password yet) by e-mailing
her a one-time link to choose one; nobody sets or resets the password of an account that has one, but its
owner (by e-mail, with Django's password-reset views, when she forgot it).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.tokens import default_token_generator
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from .errors import Conflict, Invalid
from .mail import mail_send, site_url
from .models import ApiKey, hash_api_key
from .roles import KEY_ROLES, PERSONAL_KEY_ROLE


def api_key_create(
    *,
    owner: AbstractBaseUser,
    role: str,
    books: Iterable | None = None,
    name: str = "",
) -> tuple[ApiKey, str]:
    """Create a key and return it with the raw secret, which is never stored.

    An agent key acts for its owner's books, so it may be limited only to books she owns; a
    personal key may also be limited to books she edits. The limit applies to every route.
    """
    roles = [value for value, _ in KEY_ROLES]
    if role not in roles:
        raise Invalid(f"unknown role {role!r}; choose one of {', '.join(roles)}", field="role")
    books = list(books or [])
    for book in books:
        owns = book.owner_id == owner.pk
        edits = role == PERSONAL_KEY_ROLE and book.editors.filter(pk=owner.pk).exists()
        if not (owns or edits):
            raise Invalid(f"{owner} may not limit a {role} key to book {book.pk}", field="books")
    raw = f"ng_{secrets.token_urlsafe(32)}"
    with transaction.atomic():
        key = ApiKey.objects.create(owner=owner, role=role, name=name, prefix=raw[:10], key_hash=hash_api_key(raw))
        if books:
            key.books.set(books)
    return key, raw


def api_key_revoke(*, key: ApiKey) -> None:
    """Revoke a key: from now on it is refused like an unknown one (401)."""
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at", "updated_at"])


# --- Accounts: what staff may do to a person's password ------------------------------------------


def set_password_link_make(*, person: AbstractBaseUser) -> tuple[str, str]:
    """The ``(uidb64, token)`` of a one-time link for ``person`` to choose her first password (Django's
    reset token: it stops working once a password is set, after a login, or after PASSWORD_RESET_TIMEOUT).

    Only for an active account with no usable password yet (a new one): a link for an account that has
    a password would let whoever holds it take the account over, so it is refused (409)."""
    name = person.get_username()
    if not person.is_active:
        raise Conflict(f"No link was made for {name}: the account is inactive")
    if person.has_usable_password():
        raise Conflict(
            f"No link was made for {name}: the account already has a password. Only its owner can change it; "
            'if she forgot it, she resets it herself by e-mail ("Forgot your password?" on the login page)'
        )
    return urlsafe_base64_encode(force_bytes(person.pk)), default_token_generator.make_token(person)


def set_password_invitation_send(*, person: AbstractBaseUser) -> str:
    """E-mail ``person`` her one-time link to choose her first password (the invitation staff send from the
    admin); returns the address it went to.

    The link goes to her own address only, never to the staff member: an account without an e-mail address is
    refused (409) and nothing is sent, as are the accounts :func:`set_password_link_make` refuses."""
    name = person.get_username()
    if not person.email:
        raise Conflict(
            f"No invitation was sent to {name}: the account has no e-mail address. "
            "Add hers on the account's page, then invite her again"
        )
    uidb64, token = set_password_link_make(person=person)
    link = site_url() + reverse("password_set", args=[uidb64, token])
    mail_send(to=[person.email], template="set_password", context={"person": person, "link": link})
    return person.email


def staff_may_set_password(*, staff: AbstractBaseUser, person: AbstractBaseUser) -> bool:
    """Whether ``staff`` may set, reset or disable ``person``'s password in the admin: only her own.

    Superusers included. Another person's password is set through her one-time link (a new account)
    or by herself (the e-mail reset); otherwise a staff member could log in as an author and decide."""
    return staff.pk is not None and staff.pk == person.pk


def staff_may_change_email(*, staff: AbstractBaseUser, person: AbstractBaseUser) -> bool:
    """Whether ``staff`` may change ``person``'s e-mail address in the admin: her own, or an account
    with no password yet. The password-reset e-mail goes there, so changing the address of an account
    that has a password would hand its reset link to whoever chose the new address."""
    return staff.pk == person.pk or not person.has_usable_password()
