"""Loop routes. Thin: authenticate, validate, call a service."""

from __future__ import annotations

from ninja import Router

router = Router(tags=["loop"])
