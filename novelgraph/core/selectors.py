"""Reads of API keys, for their owner's keys page."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from .models import ApiKey


def keys_of(owner) -> QuerySet[ApiKey]:
    """The person's keys, newest first, with the books each is limited to."""
    return ApiKey.objects.filter(owner=owner).prefetch_related("books")


def key_of(owner, key_id: Any) -> ApiKey | None:
    """One of the person's keys, or None (another person's key is never hers)."""
    return ApiKey.objects.filter(pk=key_id, owner=owner).first()
