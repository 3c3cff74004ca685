"""The API keys page: a person creates keys (each shown once), scoped to her books, and revokes her own."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from novelgraph.core.auth import principal_for_user
from novelgraph.core.errors import DomainError
from novelgraph.core.models import ApiKey
from novelgraph.core.roles import KEY_ROLES
from novelgraph.core.schemas import ApiKeyIn, parse_form
from novelgraph.core.selectors import key_of, keys_of
from novelgraph.core.services import api_key_create, api_key_revoke

from .access import books_visible_to


def _page(request: HttpRequest, *, raw_key: str | None = None, created: ApiKey | None = None, error=None, status=200):
    context = {
        "keys": keys_of(request.user),
        "books": books_visible_to(principal_for_user(request.user)).order_by("title"),
        "roles": KEY_ROLES,
        "raw_key": raw_key,
        "created": created,
        "error": error,
        "posted": request.POST if request.method == "POST" else None,
    }
    response = render(request, "discovery/keys.html", context, status=status)
    if raw_key:
        response["Cache-Control"] = "no-store"  # the key is shown once: never cached
    return response


# The new key waits in the (server-side) session for the one page that shows it, then is gone.
NEW_KEY_SESSION = "novelgraph-new-key"


@login_required
def keys(request: HttpRequest) -> HttpResponse:
    """GET: your keys. POST: create one (role, name, optional books you own), then redirect to the page
    that shows it once (reloading that page shows it no more and creates nothing)."""
    if request.method != "POST":
        shown = request.session.pop(NEW_KEY_SESSION, None)
        created = key_of(request.user, shown["id"]) if shown else None
        return _page(request, raw_key=shown["raw"] if created else None, created=created)
    try:  # too long, or a NUL character (PostgreSQL cannot store one; SQLite must not)
        payload = parse_form(ApiKeyIn, {"name": request.POST.get("name", ""), "role": request.POST.get("role", "")})
    except DomainError as exc:
        return _page(request, error=exc, status=422)
    book_ids = request.POST.getlist("books")
    books = list(books_visible_to(principal_for_user(request.user)).filter(pk__in=_valid_uuids(book_ids)))
    if len(books) != len(set(book_ids)):
        return _page(request, error=DomainError("choose only books you own or edit", field="books"), status=422)
    try:
        key, raw = api_key_create(owner=request.user, role=payload.role, books=books, name=payload.name)
    except DomainError as exc:
        return _page(request, error=exc, status=422)
    request.session[NEW_KEY_SESSION] = {"id": str(key.pk), "raw": raw}
    return redirect("keys")


@login_required
@require_POST
def key_revoke(request: HttpRequest, key_id) -> HttpResponse:
    """Revoke one of your keys (another person's key is a 404)."""
    key = key_of(request.user, key_id)
    if key is None:
        raise Http404("no such key")
    api_key_revoke(key=key)
    return redirect("keys")


def _valid_uuids(values: list[str]) -> list[str]:
    import uuid

    valid = []
    for value in values:
        try:
            valid.append(str(uuid.UUID(value)))
        except ValueError:
            continue
    return valid
