"""The API keys page: a person creates keys (each shown once) and revokes her own."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from discovery.access import api_key_create, api_key_revoke
from discovery.models import ApiKey, Book
from discovery.services.common import check_text
from novelgraph.errors import DomainError


def _page(request: HttpRequest, *, raw_key: str | None = None, created: ApiKey | None = None, error=None, status=200):
    context = {
        "keys": ApiKey.objects.filter(owner=request.user).prefetch_related("books"),
        "books": Book.objects.filter(owner=request.user).order_by("title"),
        "roles": ApiKey.KeyRole.choices,
        "raw_key": raw_key,
        "created": created,
        "error": error,
        "posted": request.POST if request.method == "POST" else None,
    }
    response = render(request, "novelgraph/keys.html", context, status=status)
    if raw_key:
        response["Cache-Control"] = "no-store"  # the key is shown once: never cached
    return response


@login_required
def keys(request: HttpRequest) -> HttpResponse:
    """GET: your keys. POST: create one (role, name, optional books you own); the key is shown once."""
    if request.method != "POST":
        return _page(request)
    try:
        name = check_text(request.POST.get("name", ""), "name", max_length=100, required=False)
    except DomainError as exc:  # too long, or a NUL character (PostgreSQL cannot store one; SQLite must not)
        return _page(request, error=exc, status=422)
    book_ids = request.POST.getlist("books")
    books = list(Book.objects.filter(owner=request.user, pk__in=_valid_uuids(book_ids)))
    if len(books) != len(set(book_ids)):
        return _page(request, error=DomainError("choose only books you own", field="books"), status=422)
    try:
        key, raw = api_key_create(owner=request.user, role=request.POST.get("role", ""), books=books, name=name)
    except DomainError as exc:
        return _page(request, error=exc, status=422)
    return _page(request, raw_key=raw, created=key, status=201)


@login_required
@require_POST
def key_revoke(request: HttpRequest, key_id) -> HttpResponse:
    """Revoke one of your keys (another person's key is a 404)."""
    try:
        key = ApiKey.objects.get(pk=key_id, owner=request.user)
    except ApiKey.DoesNotExist:
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
