"""Plain words on every page: structured values as readable lists, internal labels as people's words.

``{{ value|readable }}`` shows a string as text, a list as a bulleted list and an object as a
definition list (nested as deep as it goes, without its ids), never as a JSON block. ``{{ "author:ada"|who }}``
shows who ratified a decision ("ada, the author").
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from novelgraph.core.words import AGENT_NAMES, inline, label_of, plain, short_title

register = template.Library()


def _html(value: Any, depth: int = 0) -> SafeString:
    if value is None or value == "" or value == [] or value == {}:
        return format_html('<span class="muted">{}</span>', "—")
    if isinstance(value, bool):
        return format_html("{}", "yes" if value else "no")
    if isinstance(value, dict):
        if depth > 6:
            return format_html("{}", str(value))
        # Ids are for links, not for reading: a nested record is shown by its words (issue 26).
        shown = ((k, v) for k, v in value.items() if not (str(k) == "id" or str(k).endswith("_id")))
        rows = format_html_join("", "<dt>{}</dt><dd>{}</dd>", ((label_of(k), _html(v, depth + 1)) for k, v in shown))
        return format_html('<dl class="facts readable">{}</dl>', rows)
    if isinstance(value, list | tuple):
        if len(value) == 1 and not isinstance(value[0], dict | list | tuple):
            return _html(value[0], depth + 1)
        items = format_html_join("", "<li>{}</li>", ((_html(v, depth + 1),) for v in value))
        return format_html('<ul class="readable">{}</ul>', items)
    if isinstance(value, float):
        return format_html("{}", f"{value:g}")
    text = str(value)
    if "\n" in text:
        return mark_safe("<br>".join(format_html("{}", line) for line in text.split("\n")))
    return format_html("{}", text)


@register.filter
def readable(value: Any) -> SafeString:
    """A value as people read it: text, a list as a list, an object as a definition list (escaped)."""
    return _html(value)


register.filter("inline", inline)
register.filter("plain", plain)
register.filter("label_of", label_of)
register.filter("short_title", short_title)


@register.filter
def who(ratified_by: Any) -> str:
    """``author:ada`` → "ada, the author"; ``controller:sol`` → "Sol, automatically (the controller)"."""
    kind, _, name = str(ratified_by or "").partition(":")
    if not name:
        return AGENT_NAMES.get(kind, kind)
    if kind == "author":
        return f"{name}, the author"
    if kind == "controller":
        return f"{AGENT_NAMES.get(name, name)}, automatically (the controller)"
    return f"{name} ({kind})"


@register.filter
def role_name(role: Any) -> str:
    """An agent role by its name (Sol, Terra, Luna); a person's role as it is."""
    return AGENT_NAMES.get(str(role), str(role or ""))
