"""Discovery routes (seed 000). Thin: authenticate, validate, call a service."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Schema

from novelgraph.api import principal_of

from .access import capabilities_of

router = Router(tags=["discovery"])


class WhoAmI(Schema):
    username: str
    role: str
    capabilities: list[str]
    book_ids: list[str]


@router.get("/me", response=WhoAmI, summary="Who the caller is and what its role may do")
def whoami(request: HttpRequest):
    principal = principal_of(request)
    return {
        "username": principal.user.get_username(),
        "role": principal.key_role,
        "capabilities": sorted(c.value for c in capabilities_of(principal.key_role)),
        "book_ids": [str(pk) for pk in principal.visible_books().values_list("pk", flat=True)],
    }
