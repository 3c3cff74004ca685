"""Reading a model's reply as one JSON object, repairing the almost-JSON small models write where that is safe.

Safe repairs change how the object is wrapped or punctuated, never what it says:

- a code fence around it (```json ... ```), and prose before or after it ("Here is the plan: {...} Hope this helps");
- trailing commas before a closing brace or bracket (``{"a": [1, 2,],}``), outside strings.

Everything else is refused with a reason, because reading it would mean guessing what the model meant: an object
that is not finished (a reply cut off), two or more objects (which one is the answer?), single quotes, comments,
unquoted keys, Python's ``True``/``None``, ``NaN`` or ``Infinity``, a JSON value that is not an object. The run then
fails with that reason and writes nothing.
"""

from __future__ import annotations

import json
from typing import Any

from .base import ProviderError

OPEN, CLOSE = "{[", "}]"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_refuse_constant)


def _spans(text: str) -> tuple[list[tuple[int, int]], bool]:
    """The top-level ``{...}`` spans of ``text`` (braces and brackets balanced, strings skipped), and whether an
    object was left unfinished at the end. Outside an object, quotes are prose and are not read as strings."""
    spans: list[tuple[int, int]] = []
    stack: list[str] = []
    start = 0
    in_string = escaped = False
    for i, ch in enumerate(text):
        if not stack:
            if ch == "{":
                stack, start = ["}"], i
            continue
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in OPEN:
            stack.append(CLOSE[OPEN.index(ch)])
        elif ch in CLOSE:
            if ch != stack[-1]:
                stack = []  # mismatched: not an object; look for the next one
                continue
            stack.pop()
            if not stack:
                spans.append((start, i + 1))
    return spans, bool(stack)


def without_trailing_commas(text: str) -> tuple[str, int]:
    """``text`` with each comma that is followed (after white space) by ``}`` or ``]`` removed, outside strings;
    and how many were removed."""
    out: list[str] = []
    removed = 0
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == ",":
            rest = text[i + 1 :].lstrip()
            if rest[:1] in ("}", "]"):
                removed += 1
                continue
        out.append(ch)
    return "".join(out), removed


def _read_span(body: str) -> tuple[dict | None, int, str]:
    """The object in one span (with its trailing commas removed when it needs that), how many were removed, and
    why it could not be read."""
    try:
        data = _loads(body)
        return (data if isinstance(data, dict) else None), 0, ""
    except ValueError as exc:
        first = _why(exc)
    fixed, removed = without_trailing_commas(body)
    if removed:
        try:
            data = _loads(fixed)
            return (data if isinstance(data, dict) else None), removed, ""
        except ValueError as exc:
            first = _why(exc)
    return None, 0, first


def _why(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at character {exc.pos}"
    return str(exc)


def read_object(text: str) -> tuple[dict, list[str]]:
    """The one JSON object in a model's reply, and the repairs made to read it (empty when it was JSON as sent);
    or a :class:`ProviderError` saying why the reply cannot be read safely."""
    body = text.strip()
    try:
        data = _loads(body)
    except ValueError as exc:
        strict_error = _why(exc)
    else:
        if not isinstance(data, dict):
            raise ProviderError("the model's reply is JSON but not an object")
        return data, []
    spans, unfinished = _spans(body)
    found: list[tuple[dict, int, tuple[int, int]]] = []
    errors: list[str] = []
    for start, end in spans:
        data, removed, why = _read_span(body[start:end])
        if data is not None:
            found.append((data, removed, (start, end)))
        elif why:
            errors.append(why)
    if len(found) > 1:
        raise ProviderError(
            f"the model's reply holds {len(found)} JSON objects; which one is the answer cannot be told, "
            "so none was read"
        )
    if not found:
        if errors:
            raise ProviderError(f"the model's reply is not JSON ({errors[0]})")
        if unfinished:
            raise ProviderError("the model's reply is not JSON (its object is not finished: the reply was cut off)")
        raise ProviderError(f"the model's reply is not JSON ({strict_error})")
    data, removed, (start, end) = found[0]
    repairs: list[str] = []
    outside = body[:start] + body[end:]
    if "```" in outside:
        repairs.append("a code fence removed")
        outside = outside.replace("```json", "").replace("```JSON", "").replace("```", "")
    if outside.strip():
        repairs.append("the prose around the object removed")
    if removed:
        repairs.append(f"{removed} trailing comma{'s' if removed != 1 else ''} removed")
    return data, repairs


def repaired_note(repairs: list[str]) -> str:
    """The run's note for a reply that was repaired before it was read."""
    return "The model's reply was repaired before it was read: " + "; ".join(repairs) + "."
