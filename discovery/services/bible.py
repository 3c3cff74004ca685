"""Share links to the story bible (issue 29): the author makes a read-only link fixed at a chapter for an editor or
a beta reader, lists and revokes them. Editors read the bible but make no link: handing the book out is the
author's. The token is shown once; only its SHA-256 is stored (as for API keys)."""

from __future__ import annotations

import secrets
from typing import Any

from django.db import transaction
from django.utils import timezone

from novelgraph.core.errors import NotFound
from novelgraph.core.models import hash_api_key

from ..access import BookAccess
from ..models import BibleShareLink


def bible_link_create(*, access: BookAccess, chapter: int, label: str = "") -> tuple[BibleShareLink, str]:
    """The author makes a share link to the bible as of ``chapter`` (validated by ``BibleLinkIn``); it returns the
    link with its token, which is never stored (only its hash)."""
    access.require_author()
    return share_link_make(by=access.user, chapter=chapter, label=label, book=access.book)


def share_link_make(*, by, chapter: int, label: str, **opens) -> tuple[BibleShareLink, str]:
    """A share link made by ``by`` that opens ``opens`` (a book, or a series with its book) as of ``chapter``,
    with its token (only the hash is stored); the caller has checked that ``by`` may hand the bible out."""
    token, token_hash = new_token()
    with transaction.atomic():
        link = BibleShareLink.objects.create(
            chapter=chapter, label=label, prefix=token[:10], token_hash=token_hash, created_by=by, **opens
        )
    return link, token


def new_token() -> tuple[str, str]:
    """A share link's token and the hash stored for it (the token itself never is)."""
    token = f"bb_{secrets.token_urlsafe(32)}"
    return token, hash_api_key(token)


def bible_links(access: BookAccess) -> list[BibleShareLink]:
    """The book's share links that still open, newest first (the author's only)."""
    access.require_author()
    return list(BibleShareLink.objects.filter(book=access.book, revoked_at__isnull=True))


def bible_link_revoke(*, access: BookAccess, link_id: Any) -> BibleShareLink:
    """The author revokes a share link: from then on it answers 404, like one never made."""
    access.require_author()
    return share_link_revoke(link_id, book=access.book)


def share_link_revoke(link_id: Any, **opens) -> BibleShareLink:
    """Revoke the share link ``link_id`` among those that open ``opens`` (404 when it is none of them)."""
    with transaction.atomic():
        link = BibleShareLink.objects.select_for_update().filter(pk=link_id, **opens).first()
        if link is None:
            raise NotFound("share link not found", field="link_id")
        if link.revoked_at is None:
            link.revoked_at = timezone.now()
            link.save(update_fields=["revoked_at", "updated_at"])
    return link


def bible_link_open(token: str) -> BibleShareLink:
    """The share link a token opens (a book's or a series'), or 404 (an unknown token and a revoked link answer
    alike)."""
    link = (
        BibleShareLink.objects.select_related("book", "series", "series_book")
        .filter(token_hash=hash_api_key(token or ""), revoked_at__isnull=True)
        .first()
    )
    if link is None:
        raise NotFound("not found")
    return link


__all__ = ["bible_link_create", "bible_link_open", "bible_link_revoke", "bible_links", "new_token"]
