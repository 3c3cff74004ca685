"""Plain words for values people read: one place, used by the pages and by the summaries services write."""

from __future__ import annotations

from typing import Any

AGENT_NAMES = {"sol": "Sol", "terra": "Terra", "luna": "Luna"}

# The method's own names for things (seed 002), as people say them, for text the agents write.
PLAIN_PHRASES = (
    (" as the value seed", ""),
    ("the value seed", "the book's reason to exist"),
    ("value seed", "reason to exist"),
)
TITLE_LIMIT = 80


def plain(text: Any) -> str:
    """Agent-written text with the method's internal names said plainly ("value seed")."""
    out = "" if text is None else str(text)
    for internal, words in PLAIN_PHRASES:
        out = out.replace(internal, words)
    return out


def short_title(text: Any, limit: int = TITLE_LIMIT) -> str:
    """A card's or a decision's title: plain words, short. When a long text says its ask before a colon
    ("Ratify the premise: <the whole premise>"), the ask is the title; otherwise it is cut at a word, never
    in the middle of one, with an ellipsis."""
    out = " ".join(plain(text).split())
    head, sep, rest = out.partition(": ")
    if sep and len(head) >= 8 and (len(out) > limit or len(rest) > 40):
        out = head
    if len(out) <= limit:
        return out
    cut = out[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:·-")
    return f"{cut}…"


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
