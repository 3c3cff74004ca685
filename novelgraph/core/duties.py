"""The agent roles' duties as the MCP server offers them: one registry, filled by the apps that own them.

A duty is declared once, in the app whose service it calls (``discovery/duties.py``,
``discovery/loop/duties.py``, ``library/duties.py``), and registered from that app's
``AppConfig.ready()``. The MCP server (the roof, ``novelgraph/mcp``) reads only this registry, so
it depends on no app, and an app adds a duty without touching the server.

A tool is listed for a key when the key's role holds at least one of the capabilities the tool
``needs`` (the same any-of rule as ``BookAccess.require``), so a role's tool list is read off the
capability table (``novelgraph.core.roles.CAPABILITIES``). A tool's arguments are its REST route's
path parameters plus the route's input schema, validated by that same schema, so limits and error
messages are the REST API's. The service the tool calls enforces every rule, as the route's does.

No tool decides: a tool that needs ``decision:make`` is refused at registration.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ninja import Schema
from pydantic import BaseModel, Field, create_model

from .auth import Principal
from .errors import NotFound
from .roles import Cap, capabilities_of

# --- Arguments: the route's path parameters plus its input schema -------------------------------

PATH_PARAMETERS: dict[str, tuple[type, str]] = {
    "book_id": (uuid.UUID, "The book's id (the `book.id` of your dossier)."),
    "session_id": (uuid.UUID, "The discovery session's id (the `session_id` of your dossier)."),
    "handoff_id": (uuid.UUID, "The handoff's id (see the open-handoffs resource)."),
    "claim_id": (uuid.UUID, "The proposed claim's id."),
    "node_id": (uuid.UUID, "The plan node's id."),
    "question_id": (uuid.UUID, "The open question's id."),
}


def path_parameter(name: str, kind: type, description: str) -> None:
    """Declare a path parameter whose type an app owns (the loop's gate, for one)."""
    PATH_PARAMETERS[name] = (kind, description)


def arguments_of(name: str, payload: type[BaseModel] | None, *path: str) -> type[BaseModel]:
    """The tool's argument model: ``payload`` (the REST input schema, validators and limits
    included) with the route's path parameters added as required fields."""
    fields: dict[str, Any] = {}
    for parameter in path:
        kind, description = PATH_PARAMETERS[parameter]
        fields[parameter] = (kind, Field(description=description))
    title = "".join(part.title() for part in name.split("_")) + "Arguments"
    return create_model(title, __base__=payload or Schema, **fields)


Run = Callable[[Principal, Any, Any], Any]

# The coordinator's duties (Sol's, and the author's): what writing the discovery record needs.
CONTROLLER: tuple[Cap, ...] = (Cap.DISCOVERY_WRITE,)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what it needs, what it takes (the REST input schema), what it calls, what it answers."""

    name: str
    route: str  # the REST route it mirrors, for the reader and the twin matrix
    description: str
    needs: tuple[Cap, ...]  # listed for a role holding any of these
    run: Run  # (principal, arguments, payload) -> the service's result
    out: type[Schema]
    payload: type[BaseModel] | None = None
    path: tuple[str, ...] = ()
    read_only: bool = False

    @cached_property
    def arguments(self) -> type[BaseModel]:
        return arguments_of(self.name, self.payload, *self.path)

    @cached_property
    def input_schema(self) -> dict:
        return self.arguments.model_json_schema()

    @cached_property
    def output_schema(self) -> dict:
        return self.out.model_json_schema()

    def offered_to(self, role: str | None) -> bool:
        caps = capabilities_of(role)
        return any(cap in caps for cap in self.needs)


TOOLS_BY_NAME: dict[str, ToolSpec] = {}


def register_tools(*specs: ToolSpec) -> None:
    """Add an app's tools (from its ``ready()``). Names are unique and plain; no tool decides."""
    for spec in specs:
        if TOOLS_BY_NAME.get(spec.name, spec) is not spec:
            raise ValueError(f"two tools are named {spec.name!r}")
        if not re.fullmatch(r"[a-z_]+", spec.name):
            raise ValueError(f"tool name {spec.name!r}: lower-case letters and underscores only")
        if Cap.DECIDE in spec.needs:
            raise ValueError(f"tool {spec.name!r} needs {Cap.DECIDE.value}: no tool decides")
        unknown = set(spec.path) - set(PATH_PARAMETERS)
        if unknown:
            raise ValueError(f"tool {spec.name!r}: undeclared path parameters {sorted(unknown)}")
        TOOLS_BY_NAME[spec.name] = spec


def tools() -> list[ToolSpec]:
    """Every registered tool, in the order the apps registered them."""
    return list(TOOLS_BY_NAME.values())


def tools_for(role: str | None) -> list[ToolSpec]:
    """The tools a key of ``role`` is offered: those whose needs its capabilities meet."""
    return [tool for tool in TOOLS_BY_NAME.values() if tool.offered_to(role)]


# --- Resources: what an agent reads --------------------------------------------------------------

SCHEME = "novelgraph"
UUID = r"(?P<{}>[0-9a-fA-F-]{{32,36}})"


@dataclass(frozen=True)
class ResourceKind:
    name: str
    template: str  # RFC 6570 level 1, as MCP resource templates are written
    description: str
    read: Callable[[Principal, str], dict]
    per_book: bool = True

    @property
    def parameter(self) -> str:
        return "book_id" if self.per_book else "chunk_id"

    @property
    def pattern(self) -> re.Pattern:
        name = self.parameter
        return re.compile(re.escape(self.template).replace(re.escape("{" + name + "}"), UUID.format(name)))

    def uri(self, value: Any) -> str:
        return self.template.replace("{" + self.parameter + "}", str(value))


RESOURCES: list[ResourceKind] = []
# The books a principal may touch, for the per-book resource listing (registered by the app that owns books).
_books_of: list[Callable[[Principal], Iterable[Any]]] = []


def register_resources(*kinds: ResourceKind, books_of: Callable[[Principal], Iterable[Any]] | None = None) -> None:
    for kind in kinds:
        if any(known.name == kind.name for known in RESOURCES if known is not kind):
            raise ValueError(f"two resources are named {kind.name!r}")
        if kind not in RESOURCES:
            RESOURCES.append(kind)
    if books_of is not None and books_of not in _books_of:
        _books_of[:] = [books_of]


def resource_read(principal: Principal, uri: str) -> dict:
    """Read ``uri`` for ``principal``; an address that names no resource is "not found"."""
    for kind in RESOURCES:
        match = kind.pattern.fullmatch(uri)
        if match:
            return kind.read(principal, match.group(1))
    raise NotFound(f"no resource at {uri!r}", field="uri")


def resources_listed(principal: Principal) -> list[dict]:
    """Each book the key may touch, with its per-book resources (chunks are read by id only)."""
    books = list(_books_of[0](principal)) if _books_of else []
    return [
        {"uri": kind.uri(book.pk), "name": f"{book.title}: {kind.name}", "description": kind.description}
        for book in books
        for kind in RESOURCES
        if kind.per_book
    ]
