"""Bearer-key lookup: one statement per request, a per-process cache that never serves a stale principal.

``novelgraph.core.auth.principal_for_key`` reads the key, its owner and its book list in one statement, and reuses
the principal it built only while that row is unchanged. Every test here warms the cache first, then changes
the key, its owner or its books through the ordinary services and models, and checks the very next request.
"""

from __future__ import annotations

from django.test import Client

from novelgraph.core import auth
from novelgraph.core.models import ApiKey
from novelgraph.core.services import api_key_create, api_key_revoke

from .factories import BookFactory
from .sqltrace import sql_trace


def _get(raw: str, path: str = "/api/v1/me"):
    return Client().get(path, HTTP_AUTHORIZATION=f"Bearer {raw}")


def test_an_unrestricted_key_is_resolved_in_one_statement_with_no_book_list_query(author, book):
    _, raw = api_key_create(owner=author, role="sol")
    auth._key_cache.clear()
    auth.principal_for_key(raw)  # records last_used_at once; the next lookup within a minute only reads

    for cached in (False, True):
        if not cached:
            auth._key_cache.clear()
        with sql_trace() as trace:
            principal = auth.principal_for_key(raw)
        assert len(trace) == 1, trace
        assert "apikey_books" in trace.statements[0]  # folded into the same statement
        assert principal.key_book_ids == frozenset()
        assert principal.user.pk == author.pk and principal.key_role == "sol"


def test_a_key_limited_to_books_is_resolved_in_one_statement_too(author, book):
    second = BookFactory(owner=author, title="Second")
    _, raw = api_key_create(owner=author, role="luna", books=[book, second])
    auth.principal_for_key(raw)
    auth._key_cache.clear()

    with sql_trace() as trace:
        principal = auth.principal_for_key(raw)

    assert len(trace) == 1, trace
    assert principal.key_book_ids == frozenset({book.pk, second.pk})
    assert principal.user.is_active and principal.user.get_username() == author.get_username()
    assert principal.api_key.last_used_at is not None and principal.api_key.last_used_at.tzinfo is not None


def test_the_cached_principal_is_reused_while_the_row_is_unchanged(author, book):
    _, raw = api_key_create(owner=author, role="terra")
    first = auth.principal_for_key(raw)
    assert auth.principal_for_key(raw) is first


def test_revoking_a_cached_key_refuses_the_very_next_request(author, book):
    key, raw = api_key_create(owner=author, role="author")
    assert _get(raw).status_code == 200
    assert _get(raw).status_code == 200  # served from the cache

    api_key_revoke(key=key)

    assert _get(raw).status_code == 401
    assert auth.principal_for_key(raw) is None


def test_deactivating_the_owner_of_a_cached_key_refuses_the_next_request(author, book):
    _, raw = api_key_create(owner=author, role="sol")
    assert _get(raw, f"/api/v1/books/{book.pk}").status_code == 200

    author.is_active = False
    author.save(update_fields=["is_active"])

    assert _get(raw, f"/api/v1/books/{book.pk}").status_code == 401


def test_changing_a_cached_keys_books_is_seen_by_the_next_request(author, book):
    second = BookFactory(owner=author, title="Second")
    key, raw = api_key_create(owner=author, role="sol", books=[book])
    assert _get(raw, f"/api/v1/books/{book.pk}").status_code == 200
    assert _get(raw, f"/api/v1/books/{second.pk}").status_code == 404

    key.books.set([second])  # the same number of books, another one

    assert _get(raw, f"/api/v1/books/{book.pk}").status_code == 404
    assert _get(raw, f"/api/v1/books/{second.pk}").status_code == 200


def test_a_deleted_key_is_unknown_at_once_and_leaves_the_cache(author, book):
    key, raw = api_key_create(owner=author, role="sol")
    assert auth.principal_for_key(raw) is not None
    ApiKey.objects.filter(pk=key.pk).delete()

    assert auth.principal_for_key(raw) is None
    assert _get(raw).status_code == 401
    assert auth.hash_api_key(raw) not in auth._key_cache
