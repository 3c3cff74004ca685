"""Plain words for values people read: one place, used by the pages and by the summaries services write."""

from __future__ import annotations

from typing import Any

AGENT_NAMES = {"sol": "Sol", "terra": "Terra", "luna": "Luna"}


def label_of(key: Any) -> str:
    """A field's key as a label: ``reader_promise`` → "Reader promise"."""
    return str(key).replace("_", " ").replace("-", " ").strip().capitalize()


def inline(value: Any) -> str:
    """A value on one line: a list joined with semicolons, an object as "Key: value" pairs (never JSON)."""
    if isinstance(value, dict):
        return "; ".join(f"{label_of(k)}: {inline(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "; ".join(inline(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return "" if value is None else str(value)
