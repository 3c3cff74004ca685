"""The notifications page (issue 29): per book, how the person hears by e-mail (saved through htmx, with an inline
confirmation or error), her private feed address (made and shown once, revoked), and the Atom feed itself, which
a feed reader opens with no login."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.syndication.views import Feed
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.views.decorators.http import require_POST

from novelgraph.core.auth import Principal, principal_for_user
from novelgraph.core.errors import DomainError, Invalid, NotFound
from novelgraph.core.mail import site_url
from novelgraph.core.pages import partial_or_page
from novelgraph.core.schemas import parse_form

from .access import page_access
from .models import NotificationMode
from .notifications import (
    feed_entries,
    feed_open,
    feed_path,
    feed_token_create,
    feed_token_live,
    feed_token_revoke,
    notification_modes,
    notification_set,
)
from .notifications_api import NotificationIn

TEMPLATE = "discovery/notifications.html"


def _page(request: HttpRequest, *, made_url: str = "", error=None, error_book=None, status: int = 200):
    principal = principal_for_user(request.user)
    context = {
        "rows": notification_modes(principal),
        "modes": NotificationMode.choices,
        "feed": feed_token_live(principal),
        "made_url": made_url,
        "error": error,
        "error_book": error_book,
    }
    response = render(request, TEMPLATE, context, status=status)
    if made_url:
        response["Cache-Control"] = "no-store"  # the feed address is shown once: never cached
    return response


@login_required
def notifications(request: HttpRequest) -> HttpResponse:
    """GET: each of your books with how you hear about it, and your feed. POST ``action=feed-make`` makes a new
    feed address (shown once; the old one stops working), ``action=feed-revoke`` revokes it."""
    if request.method != "POST":
        return _page(request)
    principal = principal_for_user(request.user)
    action = request.POST.get("action", "")
    if action == "feed-make":
        _token_row, token = feed_token_create(principal=principal)
        return _page(request, made_url=request.build_absolute_uri(feed_path(token)))
    if action == "feed-revoke":
        if feed_token_revoke(principal=principal):
            messages.success(request, "Your feed address is revoked: feed readers using it get nothing from now on.")
        return redirect("notifications")
    return _page(request, error=Invalid("action: choose feed-make or feed-revoke", field="action"), status=422)


@login_required
@require_POST
def notification_mode(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """Save how you hear about one book (``services``: ``notification_set``). With htmx, the book's row answers
    with a confirmation or the error inline; without, the page."""
    access = page_access(request, book_id)
    try:
        mode = parse_form(NotificationIn, {"mode": request.POST.get("mode", "")}).mode
        saved = notification_set(access=access, mode=mode)
    except DomainError as exc:
        if exc.status != 422:
            raise
        if not request.htmx:
            return _page(request, error=exc, error_book=access.book.pk, status=422)
        row = _row_of(request, access.book.pk)
        context = {"row": row, "modes": NotificationMode.choices, "error": exc, "error_book": access.book.pk}
        return render(request, partial_or_page(request, TEMPLATE, "mode-row"), context, status=422)
    label = NotificationMode(saved["mode"]).label.lower()
    if not request.htmx:
        messages.success(request, f"Saved: “{access.book.title}”, {label}.")
        return redirect("notifications")
    row = _row_of(request, access.book.pk)
    context = {"row": row, "modes": NotificationMode.choices, "saved": label}
    return render(request, partial_or_page(request, TEMPLATE, "mode-row"), context)


def _row_of(request: HttpRequest, book_id) -> dict:
    return next(row for row in notification_modes(principal_for_user(request.user)) if row["book"].pk == book_id)


class NotificationFeed(Feed):
    """A person's Atom feed: what waits for a decision on her books, then what was decided lately."""

    feed_type = Atom1Feed

    def get_object(self, request: HttpRequest, token: str) -> Principal:
        try:
            return feed_open(token)
        except NotFound:
            raise Http404("not found") from None

    def title(self, obj: Principal) -> str:
        return f"NovelGraph: what waits for {obj.user.get_username()}"

    def subtitle(self, obj: Principal) -> str:
        return "Decisions waiting on your books, and what was decided in the last 30 days."

    def link(self, obj: Principal) -> str:
        return site_url() + reverse("approvals:inbox")

    def items(self, obj: Principal) -> list[dict]:
        return feed_entries(obj)

    def item_title(self, item: dict) -> str:
        return item["title"]

    def item_description(self, item: dict) -> str:
        return item["description"]

    def item_link(self, item: dict) -> str:
        return item["link"]

    def item_guid(self, item: dict) -> str:
        return item["id"]

    item_guid_is_permalink = False

    def item_pubdate(self, item: dict):
        return item["when"]

    def item_updateddate(self, item: dict):
        return item["when"]

    def item_categories(self, item: dict) -> tuple[str, ...]:
        return ("waiting",) if item["waiting"] else ("decided",)


_feed = NotificationFeed()


def notification_feed(request: HttpRequest, token: str) -> HttpResponse:
    """The Atom feed a token opens, with no login; an unknown or revoked token is a 404."""
    response = _feed(request, token=token)
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "private, no-cache"
    return response
