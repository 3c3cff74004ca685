"""Middleware that serves browsers only: an API request carrying a bearer key skips it.

Sessions, CSRF, authentication by session cookie and messages exist for the browser. A request to ``/api/``
with ``Authorization: Bearer <key>`` is authenticated by its key alone (``novelgraph.api.ApiKeyAuth``): it
loads no session, sets no cookie, and needs no CSRF token, because a browser never adds that header on its
own to a cross-site request. Its ``request.user`` is anonymous, so an unknown key cannot fall back to the
session cookie sent alongside it: the answer is 401. An API call that rides the session cookie goes
through all four, and ninja checks its CSRF token on unsafe methods.

``settings.MIDDLEWARE`` names these subclasses in place of Django's own (so the admin's checks still find them).
"""

from __future__ import annotations

from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.auth.models import AnonymousUser
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware

API_PREFIX = "/api/"


def is_bearer_api_request(request: HttpRequest) -> bool:
    """An API request whose Authorization header uses the Bearer scheme (as ninja's HttpBearer reads it)."""
    if not request.path_info.startswith(API_PREFIX):
        return False
    return request.META.get("HTTP_AUTHORIZATION", "").split(" ", 1)[0].lower() == "bearer"


class BrowserOnly:
    """Mixed into one of Django's middleware: every request but a bearer-key API request goes through it."""

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_bearer_api_request(request):
            self.skipped(request)
            return self.get_response(request)
        return super().__call__(request)

    def skipped(self, request: HttpRequest) -> None:
        """What a skipped request gets instead (nothing, unless a subclass says otherwise)."""


class BrowserSessionMiddleware(BrowserOnly, SessionMiddleware):
    pass


class BrowserCsrfViewMiddleware(BrowserOnly, CsrfViewMiddleware):
    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> HttpResponse | None:
        if is_bearer_api_request(request):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class BrowserAuthenticationMiddleware(BrowserOnly, AuthenticationMiddleware):
    def skipped(self, request: HttpRequest) -> None:
        request.user = AnonymousUser()


class BrowserMessageMiddleware(BrowserOnly, MessageMiddleware):
    pass
