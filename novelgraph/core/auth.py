"""Who is calling: the principal of a request, resolved once at the edge.

A principal is a person (browser session or personal key) or an agent key. It says
who acts and, for a key, which books the key is limited to; what the principal may do
on one book is worked out from it by ``discovery.access.book_access``. The API's
authentication classes live here too, below the apps, so every app's router imports
them without importing the API instance that mounts it.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer, SessionAuth

from .key_rows import key_lookup_for
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
# How long a resolved key is kept per process. Every request still reads the key's row (one statement), and
# the cached principal is used only while that row, its owner's row and its book list are exactly what they
# were: a revocation, a deactivated owner, a changed password or book list is seen by the next request.
KEY_CACHE_SECONDS = 60.0
KEY_CACHE_MAX = 1024

_key_cache: dict[str, tuple[tuple, Principal, float]] = {}


def principal_for_key(raw_key: str) -> Principal | None:
    """Resolve a bearer key to its principal; None for an unknown or revoked key, or an inactive owner.

    One statement, whatever the key (``KeyLookup``): no second query for the key's books. The principal
    built from a row is kept for ``KEY_CACHE_SECONDS`` and reused only when the next request reads the very
    same row (key, owner and book list, everything but ``last_used_at``), so nothing stale is ever served:
    a revoked key or an inactive owner matches no row at all.
    """
    key_hash = hash_api_key(raw_key)
    lookup = key_lookup_for(connection)
    with connection.cursor() as cursor:
        cursor.execute(lookup.sql, [key_hash])
        row = cursor.fetchone()
    if row is None:
        _key_cache.pop(key_hash, None)
        return None
    marker = row[: lookup.last_used_index] + row[lookup.last_used_index + 1 :]
    now = time.monotonic()
    cached = _key_cache.get(key_hash)
    if cached is not None and cached[0] == marker and cached[2] > now:
        principal = cached[1]
    else:
        n_key = lookup.key.width
        key = lookup.key.instance(row[:n_key], connection)
        owner = lookup.user.instance(row[n_key:-1], connection)
        key.owner = owner
        books = frozenset(uuid.UUID(pk) for pk in row[-1].split(",")) if row[-1] else frozenset()
        principal = Principal(user=owner, key_role=key.role, api_key=key, key_book_ids=books)
        if len(_key_cache) >= KEY_CACHE_MAX:
            _key_cache.clear()
        _key_cache[key_hash] = (marker, principal, now + KEY_CACHE_SECONDS)
    # Record use at most once a minute: a write per request would serialise every
    # API call on SQLite's single writer for a timestamp nobody reads that finely.
    last_used = lookup.key.convert(lookup.last_used_index, row[lookup.last_used_index], connection)
    stamp = timezone.now()
    if last_used is None or stamp - last_used > KEY_USE_RESOLUTION:
        ApiKey.objects.filter(pk=principal.api_key.pk).update(last_used_at=stamp)
    return principal


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
