"""Helpers shared by the discovery services: finding what a principal may touch, and checks of input."""

from __future__ import annotations

import json
import math
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

from novelgraph.errors import Forbidden, Invalid, NotFound

from ..access import Cap, Principal, require
from ..models import DiscoverySession


def session_for(principal: Principal, session_id: Any, *caps: Cap, lock: bool = False) -> DiscoverySession:
    """The session, if its book is the principal's and it holds one of ``caps`` (404 / 403 otherwise).

    ``lock`` takes the session row's write lock (call inside ``transaction.atomic``): the per-session
    counters (turn ordinals, scratchpad sequences) are computed under it.
    """
    sessions = DiscoverySession.objects.select_related("book", "book__series", "book__owner")
    if lock:
        sessions = sessions.select_for_update(of=("self",))
    try:
        session = sessions.get(pk=session_id)
    except (DiscoverySession.DoesNotExist, ValidationError, ValueError, TypeError):
        raise NotFound("session not found") from None
    if principal.role_for(session.book) is None:
        raise NotFound("session not found")
    if caps:
        require(principal, *caps, book=session.book)
    return session


def refuse(role: str | None, cap: Cap, why: str = "") -> Forbidden:
    message = f"{role} lacks {cap.value}" + (f": {why}" if why else "")
    return Forbidden(message, code="missing_capability")


def check_confidence(value: Any, field: str = "confidence") -> float | None:
    """None or a number from 0 through 1 (422 naming ``field`` otherwise)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise Invalid(f"{field} must be a number from 0 through 1", field=field)
    if not 0 <= value <= 1:
        raise Invalid(f"{field} must be from 0 through 1, not {value}", field=field)
    return float(value)


def check_choice(value: Any, choices: type[models.TextChoices], field: str) -> str:
    if value not in choices.values:
        raise Invalid(f"{field} must be one of {', '.join(choices.values)}", field=field)
    return value


def check_text(value: Any, field: str, *, max_length: int, required: bool = True) -> str:
    text = (value or "").strip() if isinstance(value, str) or value is None else None
    if text is None:
        raise Invalid(f"{field} must be text", field=field)
    if required and not text:
        raise Invalid(f"{field} must not be blank", field=field)
    if "\x00" in text:
        raise Invalid(f"{field} contains a NUL character", field=field)
    if len(text) > max_length:
        raise Invalid(f"{field} is longer than {max_length} characters", field=field)
    return text


def check_text_list(value: Any, field: str, *, min_items: int = 0, max_items: int = 50, max_length: int = 2000) -> list:
    if value is None:
        value = []
    if not isinstance(value, list):
        raise Invalid(f"{field} must be a list of texts", field=field)
    if len(value) < min_items:
        raise Invalid(f"{field} needs at least {min_items} item(s)", field=field)
    if len(value) > max_items:
        raise Invalid(f"{field} takes at most {max_items} items", field=field)
    return [check_text(item, f"{field}[{i}]", max_length=max_length) for i, item in enumerate(value)]


MAX_JSON_CHARS = 20_000


def check_json(value: Any, field: str, *, max_chars: int = MAX_JSON_CHARS) -> Any:
    """A JSON value of bounded size without NUL characters (PostgreSQL refuses them)."""
    try:
        encoded = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise Invalid(f"{field} must be JSON", field=field) from None
    if len(encoded) > max_chars:
        raise Invalid(f"{field} is larger than {max_chars} characters of JSON", field=field)
    if "\\u0000" in encoded:
        raise Invalid(f"{field} contains a NUL character", field=field)
    return value
