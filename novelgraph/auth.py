"""Who is calling: the principal of a request, resolved once at the edge.

A principal is a person (browser session or personal key) or an agent key. It says
who acts and, for a key, which books the key is limited to; what the principal may do
on one book is worked out from it by ``discovery.access.book_access``. The API's
authentication classes live here too, below the apps, so every app's router imports
them without importing the API instance that mounts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Exists, OuterRef
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer, SessionAuth

from .models import ApiKey, hash_api_key
from .roles import PERSONAL_KEY_ROLE, AgentRole


@dataclass(frozen=True)
class Principal:
    """An authenticated caller.

    ``key_role`` is the agent role on an agent key, else "author" (a person acting as
    herself, through her session or a personal key). ``key_book_ids`` limits a key to
    those books whatever its role; empty means every book the person may touch.
    """

    user: AbstractBaseUser
    key_role: str = PERSONAL_KEY_ROLE
    api_key: ApiKey | None = None
    key_book_ids: frozenset = field(default_factory=frozenset)

    @property
    def is_agent(self) -> bool:
        return self.key_role in AgentRole.values

    @property
    def is_person(self) -> bool:
        return not self.is_agent

    @property
    def label(self) -> str:
        return self.key_role if self.is_agent else self.user.get_username()

    def key_allows(self, book_id) -> bool:
        """False when the key is limited to other books."""
        return not self.key_book_ids or book_id in self.key_book_ids


def principal_for_user(user: AbstractBaseUser) -> Principal:
    """A person in the browser: her own principal, with no key scope."""
    return Principal(user=user)


KEY_USE_RESOLUTION = timedelta(minutes=1)


def principal_for_key(raw_key: str) -> Principal | None:
    """Resolve a bearer key to its principal; None for an unknown or revoked key, or an inactive owner.

    One query for a key that names no books (the usual case); a second only for a key
    limited to some books, to read them. Nothing is cached, so a revocation is seen at once.
    """
    scoped = ApiKey.books.through.objects.filter(apikey_id=OuterRef("pk"))
    key = (
        ApiKey.objects.select_related("owner")
        .annotate(scoped=Exists(scoped))
        .filter(key_hash=hash_api_key(raw_key), revoked_at__isnull=True, owner__is_active=True)
        .first()
    )
    if key is None:
        return None
    now = timezone.now()
    # Record use at most once a minute: a write per request would serialise every
    # API call on SQLite's single writer for a timestamp nobody reads that finely.
    if key.last_used_at is None or now - key.last_used_at > KEY_USE_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    book_ids = frozenset(key.books.values_list("pk", flat=True)) if key.scoped else frozenset()
    return Principal(user=key.owner, key_role=key.role, api_key=key, key_book_ids=book_ids)


class ApiKeyAuth(HttpBearer):
    """``Authorization: Bearer <key>``; the key carries the role (author, sol, terra, luna)."""

    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        return principal_for_key(token)


class BrowserSessionAuth(SessionAuth):
    """A logged-in person in the browser (CSRF-checked on unsafe methods).

    A request that sends a bearer key is judged by its key alone: a bad or revoked key
    is a 401, never a fall-back to the session (nor a CSRF refusal that hides the 401).
    """

    def __call__(self, request: HttpRequest):
        if request.headers.get("Authorization"):
            return None
        return super().__call__(request)

    def authenticate(self, request: HttpRequest, key: str | None) -> Principal | None:
        if request.user.is_authenticated:
            return principal_for_user(request.user)
        return None


def principal_of(request: HttpRequest) -> Principal:
    """The authenticated principal of an API request (set by the auth classes above)."""
    return request.auth
