"""Safe defaults that sit in front of every view.

- ``CONTENT_SECURITY_POLICY``: the policy django-csp puts on every response (settings.py):
  only the site's own scripts, styles and images (no inline script or style).
- :class:`RequestSizeLimitMiddleware`: a body larger than the limit is refused with 413
  before anything reads it (JSON for the API, a page for the browser).
- :class:`ThrottledModelBackend` and :class:`ThrottledLoginView`: after too many failed
  logins for one username from one address, logins are refused for a while (HTTP 429 on
  the login page). Each attempt reserves its slot in the database (an atomic count-and-insert
  under a lock on the pair) before its password is checked, so every server worker and
  process sees them and no burst of simultaneous attempts checks more than the limit.
"""

from __future__ import annotations

import io
import logging
import math
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.views import LoginView
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db import DatabaseError, connections, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.defaults import bad_request as django_bad_request

from .models import LoginFailure

logger = logging.getLogger(__name__)

# --- Content-Security-Policy ------------------------------------------------
# Sent by django-csp (``csp.middleware.CSPMiddleware``) from ``settings.CONTENT_SECURITY_POLICY``;
# this is the policy it sends, as one header value (django-csp may order the directives differently).

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'"
)


# --- Request size ---------------------------------------------------------------


def body_limit_for(request: HttpRequest) -> int:
    """The largest body accepted: file uploads (multipart) get the upload limit, everything else the data limit."""
    return _limit_for_environ(request.META)


def _limit_for_environ(environ: dict) -> int:
    if environ.get("CONTENT_TYPE", "").startswith("multipart/"):
        return settings.NOVELGRAPH_MAX_UPLOAD_BYTES
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def too_large_response(request: HttpRequest, limit: int, size: int | None = None) -> HttpResponse:
    """413: JSON on the API, a friendly page elsewhere."""
    said = f"{size} bytes" if size is not None else "too large"
    detail = f"request body is {said}; the limit is {limit} bytes"
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": detail, "code": "too_large", "field": "body"}, status=413)
    return render(request, "413.html", {"limit": limit, "size": size}, status=413)


CHUNKED_TOO_LARGE = "novelgraph.chunked_body_too_large"


class ChunkedBodyMiddleware:
    """WSGI middleware: give Django a chunked request body (``Transfer-Encoding: chunked``).

    Django reads exactly ``CONTENT_LENGTH`` bytes of a body, and a chunked request has none, so
    under gunicorn (which decodes the chunks) Django saw an empty body: a valid small body was
    refused and an oversized one answered 422 "body: Field required". Here the decoded body is
    read up to the limit plus one byte: within the limit it is handed on with its real length;
    beyond it nothing more is read and :class:`RequestSizeLimitMiddleware` answers 413.
    """

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not environ.get("CONTENT_LENGTH"):
            limit = _limit_for_environ(environ)
            body = environ["wsgi.input"].read(limit + 1)
            if len(body) > limit:
                environ[CHUNKED_TOO_LARGE] = True
                body = b""
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return self.application(environ, start_response)


class RequestSizeLimitMiddleware:
    """Refuse a body whose declared length exceeds the limit, before any view or middleware reads it.

    A chunked body over the limit was flagged by :class:`ChunkedBodyMiddleware` (the WSGI entry
    point); any other body without a declared length is still capped by Django while reading,
    which raises ``RequestDataTooBig``: :func:`bad_request` and the API's handler make that a 413.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            size = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            size = 0
        limit = body_limit_for(request)
        if request.META.get(CHUNKED_TOO_LARGE):
            return too_large_response(request, limit)
        if size > limit:
            return too_large_response(request, limit, size)
        return self.get_response(request)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: a body over the limit is a 413, anything else Django's 400."""
    if isinstance(exception, RequestDataTooBig):
        return too_large_response(request, body_limit_for(request))
    return django_bad_request(request, exception)


# --- Login throttling ---------------------------------------------------------


def client_ip(request: HttpRequest) -> str:
    """The peer address. Behind a reverse proxy this is the proxy's address (see SECURITY.md)."""
    return (request.META.get("REMOTE_ADDR") or "unknown")[:45]


def _normal(username: str) -> str:
    """The throttle's key for a username: case-folded, trimmed, without NUL characters.

    A NUL cannot be stored (or even looked up) on PostgreSQL; dropping it also means
    ``"ada\x00"`` counts against ``ada`` rather than being a fresh name.
    """
    return (username or "").replace("\x00", "").strip().lower()[:150]


def _window_start():
    return timezone.now() - timedelta(seconds=settings.NOVELGRAPH_LOGIN_FAILURE_WINDOW)


def login_retry_after(*, username: str, ip: str) -> int:
    """Seconds until ``username`` may try again from ``ip``; 0 when not throttled.

    Rule: ``NOVELGRAPH_LOGIN_FAILURE_LIMIT`` failures within ``NOVELGRAPH_LOGIN_FAILURE_WINDOW``
    seconds block further attempts until the oldest of them leaves the window.
    """
    window = timedelta(seconds=settings.NOVELGRAPH_LOGIN_FAILURE_WINDOW)
    now = timezone.now()
    recent = list(
        LoginFailure.objects.filter(username=_normal(username), ip=ip, at__gt=now - window)
        .order_by("-at")
        .values_list("at", flat=True)[: settings.NOVELGRAPH_LOGIN_FAILURE_LIMIT]
    )
    if len(recent) < settings.NOVELGRAPH_LOGIN_FAILURE_LIMIT:
        return 0
    return max(1, math.ceil((recent[-1] + window - now).total_seconds()))


def _lock_pair(username: str, ip: str) -> None:
    """Serialise attempts on one username+address until the end of the current transaction.

    PostgreSQL: a transaction-level advisory lock on the pair (other pairs are not held up).
    SQLite: nothing to do; every write transaction here is ``BEGIN IMMEDIATE`` (settings), which
    takes the database's single write lock before the count, so count-and-reserve is already atomic.
    """
    connection = connections[LoginFailure.objects.db]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            pair = f"novelgraph-login:{username}|{ip}"
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [pair])


def login_attempt_reserve(*, username: str, ip: str) -> bool:
    """Take one of the pair's attempts before its password is checked; False when none is left.

    Counting the recent failures and recording this attempt happen in one transaction under a
    lock on the pair, so however many attempts arrive at once (threads, processes, hosts), at most
    ``NOVELGRAPH_LOGIN_FAILURE_LIMIT`` passwords are checked per window. The reservation is recorded
    as a failure up front: an attempt whose check never finishes (a killed worker) still counts.
    A successful login then forgets the pair's failures (:func:`login_failures_clear`).
    """
    key = _normal(username)
    with transaction.atomic(using=LoginFailure.objects.db):
        _lock_pair(key, ip)
        recent = LoginFailure.objects.filter(username=key, ip=ip, at__gt=_window_start()).count()
        if recent >= settings.NOVELGRAPH_LOGIN_FAILURE_LIMIT:
            return False
        LoginFailure.objects.create(username=key, ip=ip)
    _prune_old_failures()
    return True


def _prune_old_failures() -> None:
    """Forget failures that left the window (every pair's), outside the pair's lock.

    Best effort: two prunes racing over the same old rows may make one of them lose a lock
    conflict; the rows go on the next attempt, and the attempt itself is unaffected.
    """
    try:
        with transaction.atomic(using=LoginFailure.objects.db):
            LoginFailure.objects.filter(at__lte=_window_start()).delete()
    except DatabaseError:
        logger.warning("pruning old login failures failed; they are pruned on a later attempt", exc_info=True)


def login_failures_clear(*, username: str, ip: str) -> None:
    """A successful login forgets that pair's failures."""
    LoginFailure.objects.filter(username=_normal(username), ip=ip).delete()


class ThrottledModelBackend(ModelBackend):
    """Django's username/password backend, refusing a throttled username+address without checking the password.

    Because it is the authentication backend, every login form (the site's and the admin's) is throttled.
    Calls without a request (tests' ``Client.login``, shells) are not throttled.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if request is None or not username:
            return super().authenticate(request, username=username, password=password, **kwargs)
        ip = client_ip(request)
        if "\x00" in username:
            return None  # no user has one (the forms refuse it first; PostgreSQL cannot even look it up)
        if not login_attempt_reserve(username=username, ip=ip):
            raise PermissionDenied("too many failed logins")
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None:
            login_failures_clear(username=username, ip=ip)
        return user


class ThrottledLoginView(LoginView):
    """The login page; answers 429 with a clear message while the username+address is throttled."""

    def form_invalid(self, form):
        username = self.request.POST.get("username", "")
        retry = login_retry_after(username=username, ip=client_ip(self.request)) if username else 0
        if not retry:
            return super().form_invalid(form)
        minutes = max(1, math.ceil(retry / 60))
        message = (
            f"Too many failed attempts to log in as “{username[:150]}” from your address. "
            f"Try again in {minutes} minute{'s' if minutes != 1 else ''}."
        )
        response = self.render_to_response(self.get_context_data(form=form, throttle_message=message), status=429)
        response["Retry-After"] = str(retry)
        return response


# --- The API answers errors in JSON, always --------------------------------------

_STATUS_CODES = {404: "not_found", 405: "method_not_allowed", 413: "too_large", 500: "server_error"}


class ApiJsonErrorsMiddleware:
    """Under /api/, an error Django or ninja answered in plain text or HTML (405, an unknown path,
    a 500 page) becomes the API's JSON error shape ``{"detail", "code"}``, keeping its status and headers."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code >= 400
            and request.path.startswith("/api/")
            and not response.get("Content-Type", "").startswith("application/json")
            and not getattr(response, "streaming", False)
        ):
            status = response.status_code
            detail = {
                404: "not found: no such API route",
                405: f"method {request.method} not allowed here",
                500: "internal error: the failure was logged",
            }.get(status, response.reason_phrase or "error")
            if status == 405 and response.get("Allow"):
                detail += f" (allowed: {response['Allow']})"
            converted = JsonResponse({"detail": detail, "code": _STATUS_CODES.get(status, "error")}, status=status)
            for header in ("Allow", "Retry-After"):
                if header in response:
                    converted[header] = response[header]
            return converted
        return response
