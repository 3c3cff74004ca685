"""Template helpers of the review flow: the nav link with its pending count, and value display."""

from __future__ import annotations

import json
from typing import Any

from django import template

from approvals.selectors import pending_count_for

register = template.Library()


@register.inclusion_tag("approvals/nav_item.html", takes_context=True)
def review_nav_item(context: template.Context) -> dict:
    """The "Review" nav link; one COUNT query for the decisions waiting on this author."""
    request = context.get("request")
    user = getattr(request, "user", None)
    count = pending_count_for(user) if user is not None and user.is_authenticated else 0
    path = getattr(request, "path", "")
    return {"pending": count, "current": path.startswith("/review/")}


@register.filter
def is_structured(value: Any) -> bool:
    return isinstance(value, dict | list | tuple)


@register.filter
def pretty(value: Any) -> str:
    """A dict or list as indented JSON; anything else as text."""
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return "" if value is None else str(value)


@register.filter
def humanise(key: Any) -> str:
    return str(key).replace("_", " ").replace("-", " ").capitalize()
