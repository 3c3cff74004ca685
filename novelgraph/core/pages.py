"""Pages answer a refused request the way the API does, from the same error classes.

A page's view resolves access and calls services; when a rule refuses, the domain error
carries its status (404 for a book that is not yours, 403 naming the missing capability,
409, 422). This middleware turns any error a view does not handle inline into the site's
error page with that status and message, so every page maps the one access error set the
same way.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .errors import DomainError, Forbidden, NotFound


def partial_or_page(request: HttpRequest, template: str, partial: str) -> str:
    """The template a view renders: the named partial of the page for an htmx request, the whole page otherwise
    (every link and form keeps working without JavaScript)."""
    return f"{template}#{partial}" if request.htmx else template


def error_page(request: HttpRequest, exc: DomainError) -> HttpResponse:
    if isinstance(exc, NotFound):
        return render(request, "404.html", {"exception": exc.message}, status=404)
    if isinstance(exc, Forbidden):
        return render(request, "403.html", {"exception": exc.message}, status=403)
    return render(request, "error.html", {"status": exc.status, "exception": exc.message}, status=exc.status)


class DomainErrorPages:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DomainError):
            return error_page(request, exception)
        return None
