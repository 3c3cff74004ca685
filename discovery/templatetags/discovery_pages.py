"""Small display helpers for the discovery pages."""

from __future__ import annotations

from typing import Any

from django import template

from discovery.story_rules import chapter_cues, cue_words
from novelgraph.core.words import inline

register = template.Library()

TONE = {
    # ok: settled in the author's favour; warn: waiting; bad: refused or lapsed; info: provisional
    "approved": "ok",
    "admitted": "ok",
    "selected": "ok",
    "confirmed": "ok",
    "resolved": "ok",
    "decided": "ok",
    "pending": "warn",
    "proposed": "warn",
    "charter-proposed": "warn",
    "working": "info",
    "active": "info",
    "parked": "info",
    "rejected": "bad",
    "superseded": "bad",
    "closed": "bad",
}


@register.filter
def tone(status: Any) -> str:
    """The badge colour for a status."""
    return TONE.get(str(status), "")


@register.filter
def as_text(value: Any) -> str:
    """A claim value or other JSON value as readable text on one line (never JSON)."""
    if isinstance(value, str):
        return value
    return inline(value)


@register.filter
def get(mapping: Any, key: Any) -> Any:
    """``mapping|get:key`` for dict lookups with a variable key."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def as_list(value: Any) -> list:
    if value is None or value == "":
        return []
    return value if isinstance(value, list) else [value]


@register.filter
def ago(value: Any) -> str:
    """'just now' within a minute, else 'N minutes ago' (Django's timesince)."""
    from django.utils import timezone
    from django.utils.timesince import timesince

    if not value:
        return ""
    if (timezone.now() - value).total_seconds() < 60:
        return "just now"
    return f"{timesince(value)} ago"


@register.filter
def chapter_cue(value: Any) -> str:
    """The story record an observation's words name by their chapter cues, in plain words ("secret until chapter
    12 · true until chapter 9"), or "" when they name none."""
    return " · ".join(cue_words(chapter_cues(str(value or ""))["story"]))
