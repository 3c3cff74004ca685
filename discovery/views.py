"""Browser pages for books and their discovery (server-rendered, HTMX partials)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .access import principal_for_user


@login_required
def home(request: HttpRequest) -> HttpResponse:
    books = principal_for_user(request.user).visible_books().select_related("series")
    return render(request, "discovery/home.html", {"books": books})
