"""Who may do what: principals, roles and their capabilities (seed 000, invariant 2).

This is the one place that says what Sol, Terra, Luna, an author and an editor may
do. Services receive a :class:`Principal` and call :func:`require` /
:func:`book_for` before they touch anything; the API, the HTMX views and the admin
all reach the same checks through the services.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from novelgraph.errors import Forbidden, Invalid, NotFound

from .models import ApiKey, Book, hash_api_key


class Cap(StrEnum):
    DISCOVERY_READ = "discovery:read"
    DISCOVERY_WRITE = "discovery:write"
    SCRATCHPAD_READ = "scratchpad:read"
    SCRATCHPAD_WRITE = "scratchpad:write"
    LITERARY_READ = "literary:read"
    LITERARY_WRITE = "literary:write"
    SERIES_READ = "series:read"
    BOOK_READ = "book:read"
    CHARTER_PROPOSE = "charter:propose"
    CANON_PROPOSE = "canon:propose"
    APPROVAL_REQUEST = "approval:request"
    TURN_WRITE = "turn:write"
    LOOP_WRITE = "loop:write"
    DECIDE = "decision:make"


AGENT_CAPABILITIES: dict[str, frozenset[Cap]] = {
    "sol": frozenset(
        {
            Cap.DISCOVERY_READ,
            Cap.DISCOVERY_WRITE,
            Cap.SCRATCHPAD_READ,
            Cap.LITERARY_READ,
            Cap.SERIES_READ,
            Cap.BOOK_READ,
            Cap.CHARTER_PROPOSE,
            Cap.CANON_PROPOSE,
            Cap.APPROVAL_REQUEST,
        }
    ),
    "terra": frozenset(
        {
            Cap.DISCOVERY_READ,
            Cap.SCRATCHPAD_READ,
            Cap.SCRATCHPAD_WRITE,
            Cap.LITERARY_READ,
            Cap.SERIES_READ,
            Cap.BOOK_READ,
            Cap.CHARTER_PROPOSE,
        }
    ),
    "luna": frozenset(
        {
            Cap.DISCOVERY_READ,
            Cap.SCRATCHPAD_READ,
            Cap.SCRATCHPAD_WRITE,
            Cap.LITERARY_READ,
            Cap.BOOK_READ,
        }
    ),
}

_READ = frozenset(
    {
        Cap.DISCOVERY_READ,
        Cap.SCRATCHPAD_READ,
        Cap.LITERARY_READ,
        Cap.SERIES_READ,
        Cap.BOOK_READ,
    }
)
# People, relative to one book: the author reads everything, writes turns and is the
# only one who decides; an editor reads and writes turns, never decides.
HUMAN_CAPABILITIES: dict[str, frozenset[Cap]] = {
    "author": _READ
    | {
        Cap.DISCOVERY_WRITE,
        Cap.TURN_WRITE,
        Cap.CHARTER_PROPOSE,
        Cap.CANON_PROPOSE,
        Cap.LITERARY_WRITE,
    }
    | {Cap.LOOP_WRITE, Cap.DECIDE},
    "editor": _READ | {Cap.TURN_WRITE},
}


def capabilities_of(role: str) -> frozenset[Cap]:
    return AGENT_CAPABILITIES.get(role) or HUMAN_CAPABILITIES.get(role) or frozenset()


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a person (browser session or personal key) or an agent key."""

    user: AbstractBaseUser
    key_role: str  # "author" for people, else the agent role on the key
    api_key: ApiKey | None = None
    key_book_ids: frozenset = field(default_factory=frozenset)  # empty: all of the owner's books

    @property
    def is_agent(self) -> bool:
        return self.key_role in AGENT_CAPABILITIES

    @property
    def is_human(self) -> bool:
        return not self.is_agent

    @property
    def label(self) -> str:
        return self.key_role if self.is_agent else self.user.get_username()

    def role_for(self, book: Book) -> str | None:
        """The role this principal plays for ``book``, or None when it may not touch it."""
        if self.is_agent:
            if book.owner_id != self.user.pk:
                return None
            if self.key_book_ids and book.pk not in self.key_book_ids:
                return None
            return self.key_role
        if book.owner_id == self.user.pk:
            return "author"
        if book.editors.filter(pk=self.user.pk).exists():
            return "editor"
        return None

    def capabilities_for(self, book: Book | None) -> frozenset[Cap]:
        if book is None:
            return capabilities_of(self.key_role)
        role = self.role_for(book)
        return capabilities_of(role) if role else frozenset()

    def visible_books(self) -> QuerySet[Book]:
        books = Book.objects.all()
        if self.is_agent:
            books = books.filter(owner=self.user)
            if self.key_book_ids:
                books = books.filter(pk__in=self.key_book_ids)
            return books
        return books.filter(Q(owner=self.user) | Q(editors=self.user)).distinct()


def principal_for_user(user: AbstractBaseUser) -> Principal:
    return Principal(user=user, key_role="author")


KEY_USE_RESOLUTION = timedelta(minutes=1)


def principal_for_key(raw_key: str) -> Principal | None:
    """Resolve a bearer key to its principal; None for an unknown or revoked key."""
    try:
        key = ApiKey.objects.select_related("owner").get(key_hash=hash_api_key(raw_key), revoked_at__isnull=True)
    except ApiKey.DoesNotExist:
        return None
    if not key.owner.is_active:
        return None
    now = timezone.now()
    # Record use at most once a minute: a write per request would serialise every
    # API call on SQLite's single writer for a timestamp nobody reads that finely.
    if key.last_used_at is None or now - key.last_used_at > KEY_USE_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return Principal(
        user=key.owner,
        key_role=key.role,
        api_key=key,
        key_book_ids=frozenset(key.books.values_list("pk", flat=True)),
    )


def require(principal: Principal, *caps: Cap, book: Book | None = None) -> None:
    """Refuse with 403 unless the principal holds at least one of ``caps`` (for ``book``)."""
    held = principal.capabilities_for(book)
    if not any(cap in held for cap in caps):
        who = principal.key_role if principal.is_agent else (principal.role_for(book) if book else "author")
        raise Forbidden(f"{who or principal.label} lacks {caps[0].value}", code="missing_capability")


def book_for(principal: Principal, book_id: Any, *caps: Cap) -> Book:
    """The book, if the principal may touch it and holds one of ``caps``.

    A book the principal may not touch is a 404: its existence is not revealed.
    """
    try:
        book = Book.objects.select_related("series", "owner").get(pk=book_id)
    except (Book.DoesNotExist, ValueError, TypeError):
        raise NotFound("book not found") from None
    if principal.role_for(book) is None:
        raise NotFound("book not found")
    if caps:
        require(principal, *caps, book=book)
    return book


def require_author(principal: Principal, book: Book) -> None:
    """Only the book's author, as a person, decides; an agent key never does."""
    if principal.is_agent:
        raise Forbidden(
            f"{principal.key_role} lacks {Cap.DECIDE.value}: only the author decides",
            code="missing_capability",
        )
    require(principal, Cap.DECIDE, book=book)


def api_key_create(
    *,
    owner: AbstractBaseUser,
    role: str,
    books: list[Book] | None = None,
    name: str = "",
) -> tuple[ApiKey, str]:
    """Create a key and return it with the raw secret, which is never stored."""
    if role not in ApiKey.KeyRole.values:
        raise Invalid(
            f"unknown role {role!r}; choose one of {', '.join(ApiKey.KeyRole.values)}",
            field="role",
        )
    for book in books or []:
        if book.owner_id != owner.pk:
            raise Invalid(f"{owner} does not own book {book.pk}", field="books")
    raw = f"ng_{secrets.token_urlsafe(32)}"
    with transaction.atomic():
        key = ApiKey.objects.create(
            owner=owner,
            role=role,
            name=name,
            prefix=raw[:10],
            key_hash=hash_api_key(raw),
        )
        if books:
            key.books.set(books)
    return key, raw


def api_key_revoke(*, key: ApiKey) -> None:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at", "updated_at"])
