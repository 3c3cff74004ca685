"""Template helpers of the review flow: the nav link with its pending count, and value display."""

from __future__ import annotations

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
def humanise(key: Any) -> str:
    return str(key).replace("_", " ").replace("-", " ").capitalize()
