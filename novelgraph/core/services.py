"""API keys: created by their owner (shown once), limited to books she may touch, revoked at once."""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from .errors import Invalid
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
