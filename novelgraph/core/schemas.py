"""Input types and error schemas shared by every app's ``schemas.py``.

Input is validated once, by the app's input schemas: the API parses request bodies
with them, the HTMX forms go through :func:`parse_form`, and commands and agents build
them too; services receive the validated value. Limits come from the model fields (see
:func:`limit`), so a number is written in one place.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, TypeVar

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db.models import FloatField, Model
from ninja import Schema
from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import PydanticCustomError

from .db import AboveValidator
from .errors import Invalid

# Lengths of free text that has no model column of its own (JSON content: charter fields,
# list items). Column lengths come from the models through ``limit``.
LONG_TEXT = 10_000
LIST_ITEM_TEXT = 2_000
MAX_LIST_ITEMS = 50
MAX_JSON_CHARS = 20_000


def limit(model: type[Model], field: str) -> int:
    """The ``max_length`` of ``model.field``: the one place a column's limit is written."""
    return model._meta.get_field(field).max_length


def bounded(model: type[Model], field: str) -> Any:
    """The number ``model.field`` holds, within the range its validators declare (``MinValueValidator``,
    ``MaxValueValidator``, ``AboveValidator``): the one place a bound's range is written. Strict: a number,
    never a string or a boolean; a float is finite."""
    model_field = model._meta.get_field(field)
    kind = float if isinstance(model_field, FloatField) else int
    # ``validators`` also holds the column's own integer range; the tightest of each kind wins.
    ge = [v.limit_value for v in model_field.validators if isinstance(v, MinValueValidator)]
    le = [v.limit_value for v in model_field.validators if isinstance(v, MaxValueValidator)]
    gt = [v.limit_value for v in model_field.validators if isinstance(v, AboveValidator)]
    return Annotated[
        kind,
        Field(
            strict=True,
            ge=max(ge) if ge else None,
            le=min(le) if le else None,
            gt=max(gt) if gt else None,
            **({"allow_inf_nan": False} if kind is float else {}),
        ),
    ]


def default(model: type[Model], field: str) -> Any:
    """The default of ``model.field``, for an input that may leave it out."""
    return model._meta.get_field(field).get_default()


def input_error(message: str) -> PydanticCustomError:
    """A validation error worded as the API words errors: ``"<field>: <message>"``, with no prefix."""
    return PydanticCustomError("invalid", message)


def text_fault(value: str) -> str | None:
    """Why ``value`` is text the store refuses, or None: the one input rule for text, shared by the API's
    parser, the MCP tools, the forms, imports and the agents' replies.

    Refused: NUL (PostgreSQL cannot store it) and any lone UTF-16 surrogate U+D800..U+DFFF (a JSON
    escape such as ``"\\ud800"`` decodes to one): it is not Unicode text, UTF-8 cannot encode it and
    PostgreSQL refuses it. Allowed: every Unicode scalar value, the non-characters (U+FFFE, U+FFFF,
    U+FDD0..U+FDEF...) included: Unicode permits them in interchange (Corrigendum #9) and both databases
    store them."""
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate (U+{ord(value[exc.start]):04X}), which is not valid Unicode text"
    return None


def first_text_fault(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first string anywhere in a decoded JSON value (keys included) that :func:`text_fault` refuses,
    as ``(path, reason)``; the path names the value as the API names fields (``statements.0``)."""
    if isinstance(value, str):
        fault = text_fault(value)
        return (path or "body", fault) if fault else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = first_text_fault(key, path) if isinstance(key, str) else None
            found = found or first_text_fault(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = first_text_fault(item, f"{path}.{index}" if path else str(index))
            if found:
                return found
    return None


def refuse_invalid_text(value: Any, path: str = "") -> None:
    """A 422 naming the first string in ``value`` that :func:`text_fault` refuses."""
    found = first_text_fault(value, path)
    if found:
        field, reason = found
        raise Invalid(f"{field}: {reason}", field=field)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_invalid_text(value: Any) -> Any:
    """``value`` (text, or a JSON value) with every lone surrogate replaced by U+FFFD: for text that was stored
    before the input rule (:func:`text_fault`) and is now written on, into an approval or the decision log,
    so that reading or deciding on it never fails. Valid text comes back unchanged (the same object)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _LONE_SURROGATE.sub("\ufffd", value)
        return value
    if isinstance(value, dict):
        return {replace_invalid_text(key): replace_invalid_text(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [replace_invalid_text(item) for item in value]
    return value


def _valid_text(value: str) -> str:
    fault = text_fault(value)
    if fault:
        raise input_error(fault)
    return value


def Text(max_length: int, *, required: bool = True) -> Any:
    """Stripped, valid text (see :func:`text_fault`); blank is refused when ``required``."""
    return Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1 if required else 0, max_length=max_length),
        AfterValidator(_valid_text),
    ]


def TextList(*, item_length: int = LIST_ITEM_TEXT, max_items: int = MAX_LIST_ITEMS, min_items: int = 0) -> Any:
    """A list of non-blank texts."""
    return Annotated[list[Text(item_length)], Field(min_length=min_items, max_length=max_items)]


def _json_checked(value: Any) -> Any:
    import json

    try:
        encoded = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise input_error("must be JSON") from None
    if len(encoded) > MAX_JSON_CHARS:
        raise input_error(f"is larger than {MAX_JSON_CHARS} characters of JSON")
    found = first_text_fault(value)  # json.dumps escapes a surrogate, so the decoded strings are checked
    if found:
        raise input_error(found[1] if found[0] == "body" else f"{found[0]} {found[1]}")
    return value


JsonValue = Annotated[Any, AfterValidator(_json_checked)]


def _comma_list(value: Any) -> Any:
    return value.split(",") if isinstance(value, str) else value


def _labels(values: list[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        label = " ".join(value.split())
        if label and label not in out:
            out.append(label)
    return out


# Short labels (topics, applicability): a list or a comma-separated string; blanks dropped, deduplicated.
Labels = Annotated[
    list[Text(100, required=False)],
    BeforeValidator(_comma_list),
    Field(max_length=MAX_LIST_ITEMS),
    AfterValidator(_labels),
]


class Error(Schema):
    """The JSON error shape of every non-2xx answer."""

    detail: str
    code: str
    field: str | None = None


class FieldError(Schema):
    field: str
    message: str


class ValidationErrorOut(Error):
    errors: list[FieldError] = []


# Declare on routes: response={200: Out, **ERRORS}. 413: any request whose body is over the limit
# (novelgraph.core.security.RequestSizeLimitMiddleware answers it before the route runs).
ERRORS = {401: Error, 403: Error, 404: Error, 409: Error, 413: Error, 422: ValidationErrorOut}


def field_of(loc: tuple | list) -> str:
    """A pydantic error location as the API names fields: ``observations.0.key``."""
    return ".".join(str(part) for part in loc) or "body"


S = TypeVar("S", bound=Schema)


def parse_input(schema: type[S], data: dict, *, at: str = "", field_prefix: str = "") -> S:
    """Validate raw input (browser form data, an imported record...) with an input schema; the first
    problem is a 422 naming its field, worded as the API words it. ``at`` places the field inside a larger
    document (``blackboard.artifacts[0]``); ``field_prefix`` marks where that document came from (``file:``)."""
    found = first_text_fault(data)
    if found:
        field = f"{at}.{found[0]}" if at else found[0]
        raise Invalid(f"{field}: {found[1]}", field=f"{field_prefix}{field}")
    try:
        return schema.model_validate(data)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        field = field_of(first.get("loc", ()))
        field = f"{at}.{field}" if at else field
        message = first.get("msg", "invalid")
        raise Invalid(f"{field}: {message}", field=f"{field_prefix}{field}") from None


def parse_form(schema: type[S], data: dict) -> S:
    """Validate browser form data with an input schema (see :func:`parse_input`)."""
    return parse_input(schema, data)


class ApiKeyIn(Schema):
    """A key as its owner asks for it on the keys page (the API never creates keys)."""

    role: str
    name: Text(100, required=False) = ""
