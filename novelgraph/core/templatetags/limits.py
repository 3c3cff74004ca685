"""A form's ``maxlength`` read from the input schema that validates it (one limit, one place).

``{% input_limit "discovery.schemas.TurnIn" "content" %}`` is the ``max_length`` of that schema field's text,
which the schema itself takes from the model field (``novelgraph.core.schemas.limit``). The browser's limit, the
server's 422 and the column then cannot drift apart.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, get_args, get_origin

from django import template
from django.utils.module_loading import import_string
from pydantic.types import StringConstraints

register = template.Library()


def _max_length(annotation, metadata=()) -> int | None:
    for item in metadata:
        if isinstance(item, StringConstraints) and item.max_length is not None:
            return item.max_length
    if get_origin(annotation) is Annotated:
        base, *extra = get_args(annotation)
        return _max_length(base, extra)
    if get_origin(annotation) in (list, tuple, set):
        return None  # a list's limit is per item: no one box holds it
    for arg in get_args(annotation):  # Optional[...], or dict[key, text] (one box per value)
        found = _max_length(arg)
        if found is not None:
            return found
    return None


@cache
def schema_limit(schema_path: str, field: str) -> int:
    schema = import_string(schema_path)
    info = schema.model_fields[field]
    found = _max_length(info.annotation, info.metadata)
    if found is None:
        raise ValueError(f"{schema_path}.{field} declares no text limit")
    return found


@register.simple_tag
def input_limit(schema_path: str, field: str) -> int:
    return schema_limit(schema_path, field)
