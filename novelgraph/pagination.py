"""The API's one paging scheme: ``?limit=&offset=`` with both bounded, so no input reaches the
database as a number it cannot hold (an offset of twenty digits is a 422 naming ``offset``)."""

from __future__ import annotations

from django.conf import settings
from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination

MAX_OFFSET = 1_000_000_000


class Paging(LimitOffsetPagination):
    class Input(Schema):
        limit: int = Field(settings.NINJA_PAGINATION_PER_PAGE, ge=1, le=settings.NINJA_PAGINATION_MAX_LIMIT)
        offset: int = Field(0, ge=0, le=MAX_OFFSET)
