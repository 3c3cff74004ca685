"""The caller's own notifications for a book (issue 29): how she hears of what waits and what was decided.
People only (a browser session or a personal key); an agent key has no inbox."""

import uuid
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Router, Schema

from novelgraph.core.auth import principal_of
from novelgraph.core.schemas import ERRORS

from .access import book_access
from .notifications import notification_get, notification_set

router = Router(tags=["notifications"])

Mode = Literal["at-once", "digest", "never"]


class NotificationIn(Schema):
    mode: Mode = Field(description="at-once (a mail for each event), digest (one mail a day) or never")


class NotificationOut(Schema):
    book_id: uuid.UUID
    mode: Mode
    chosen: bool = Field(description="False while the caller's role's default applies")
    default: Mode = Field(description="The default of the caller's role on the book: digest for its author, never "
                          "for an editor")  # fmt: skip


@router.get(
    "/books/{book_id}/notifications",
    response={200: NotificationOut, **ERRORS},
    summary="How you hear about this book by e-mail",
)
def notifications_get(request: HttpRequest, book_id: uuid.UUID):
    return notification_get(book_access(principal_of(request), book_id))


@router.put(
    "/books/{book_id}/notifications",
    response={200: NotificationOut, **ERRORS},
    summary="Choose how you hear about this book by e-mail",
)
def notifications_put(request: HttpRequest, book_id: uuid.UUID, payload: NotificationIn):
    return notification_set(access=book_access(principal_of(request), book_id), mode=payload.mode)
