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
from pydantic import BaseModel, Field, TypeAdapter, create_model

from .auth import Principal
from .errors import NotFound
from .roles import Cap, capabilities_of

# --- Arguments: the route's path parameters plus its input schema -------------------------------

PATH_PARAMETERS: dict[str, tuple[type, str]] = {
    "book_id": (uuid.UUID, "The book's id (the `book.id` of your dossier)."),
    "session_id": (uuid.UUID, "The discovery session's id (the `session_id` of your dossier)."),
    "handoff_id": (uuid.UUID, "The handoff's id (see the open-handoffs resource)."),
    "claim_id": (uuid.UUID, "The proposed claim's id."),
    "turn_id": (uuid.UUID, "The turn's id (a person's turn of the book's conversation)."),
    "node_id": (uuid.UUID, "The plan node's id."),
    "question_id": (uuid.UUID, "The open question's id."),
    "item_id": (uuid.UUID, "The validation-plan item's id."),
    "rerun_id": (uuid.UUID, "The queued re-run's id."),
    "trace_node": (str, "The traceability node's id (its `node_id`, e.g. `scene-3`)."),
    "observation_id": (uuid.UUID, "The observation's id."),
    "dossier_id": (uuid.UUID, "The dossier snapshot's id."),
    "run_id": (uuid.UUID, "The agent run's id."),
    "source_id": (uuid.UUID, "The library source's id."),
}


def path_parameter(name: str, kind: type, description: str) -> None:
    """Declare a path parameter whose type an app owns (the loop's gate, for one)."""
    PATH_PARAMETERS[name] = (kind, description)


PAGE_LIMIT = 50  # as the REST API's pages (NINJA_PAGINATION_PER_PAGE)
PAGE_MAX = 200  # NINJA_PAGINATION_MAX_LIMIT


def arguments_of(name: str, payload: type[BaseModel] | None, *path: str, many: bool = False) -> type[BaseModel]:
    """The tool's argument model: ``payload`` (the REST input schema, validators and limits
    included) with the route's path parameters added as required fields (and, for a list, the
    REST page's ``limit`` and ``offset``)."""
    fields: dict[str, Any] = {}
    for parameter in path:
        kind, description = PATH_PARAMETERS[parameter]
        fields[parameter] = (kind, Field(description=description))
    if many:
        fields["limit"] = (int, Field(PAGE_LIMIT, ge=1, le=PAGE_MAX, description="Rows in this page."))
        fields["offset"] = (int, Field(0, ge=0, description="Rows skipped (the next page: offset + limit)."))
    title = "".join(part.title() for part in name.split("_")) + "Arguments"
    return create_model(title, __base__=payload or Schema, **fields)


Run = Callable[[Principal, Any, Any], Any]


@dataclass(frozen=True)
class Answer:
    """What a tool's ``run`` returns when its output schema needs more than the rows: ``context``, which the
    schema's resolvers read (what the route carries on its request: the subjects the caller's role may not
    read, for the approvals' and the log's answers)."""

    value: Any
    context: dict[str, Any]


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
    out: type[Schema] | type  # a schema; for a list the REST route answers as plain JSON: dict, str or int
    payload: type[BaseModel] | None = None
    path: tuple[str, ...] = ()
    read_only: bool = False
    # Calling it twice with the same arguments leaves what calling it once left (a read; a setting).
    idempotent: bool = False
    many: bool = False  # a paged list, as its REST route pages it: {"items", "count", "limit", "offset"}

    @cached_property
    def arguments(self) -> type[BaseModel]:
        return arguments_of(self.name, self.payload, *self.path, many=self.many)

    @cached_property
    def answer_model(self) -> type[BaseModel]:
        if not self.many:
            return self.out
        title = "".join(part.title() for part in self.name.split("_")) + "Page"
        return create_model(
            title,
            __base__=Schema,
            items=(list[self.out], ...),
            count=(int, Field(description="Rows in the whole list.")),
            limit=(int, ...),
            offset=(int, ...),
        )

    @cached_property
    def input_schema(self) -> dict:
        return self.arguments.model_json_schema()

    @cached_property
    def output_schema(self) -> dict:
        return self.answer_model.model_json_schema()

    @property
    def method(self) -> str:
        return self.route.split(" ", 1)[0]

    @property
    def annotations(self) -> dict[str, bool]:
        """The MCP tool annotations, read off the declaration: a read changes nothing, and no tool
        destroys anything (nothing an agent writes deletes or overwrites a record: it proposes,
        appends or withdraws what it proposed, and the history stays)."""
        return {
            "read_only_hint": self.read_only,
            "destructive_hint": False,
            "idempotent_hint": self.read_only or self.idempotent,
            "open_world_hint": False,
        }

    def answer(self, principal: Principal, arguments: dict) -> dict:
        """Validate ``arguments`` with the tool's schema and run it; the answer is the REST response body
        (for a list: the page, as the REST route pages it)."""
        args = self.arguments.model_validate(arguments)
        payload = self.payload.model_validate(arguments) if self.payload else None
        result = self.run(principal, args, payload)
        context = None
        if isinstance(result, Answer):
            result, context = result.value, result.context
        if self.many:
            rows = result
            count = rows.count() if hasattr(rows, "count") and not isinstance(rows, list) else len(rows)
            # Each row through the route's own schema (its resolvers included), then the page around them.
            page = [self._row(row, context) for row in rows[args.offset : args.offset + args.limit]]
            return {"items": page, "count": count, "limit": args.limit, "offset": args.offset}
        return self.out.from_orm(result, context=context).model_dump(mode="json")

    def _row(self, row: Any, context: dict | None = None) -> Any:
        # A row of a list the REST route answers as plain JSON (``list[dict]``, ``list[str]``) is itself.
        if isinstance(self.out, type) and issubclass(self.out, BaseModel):
            return self.out.from_orm(row, context=context).model_dump(mode="json")
        return TypeAdapter(self.out).dump_python(row, mode="json")

    def offered_to(self, role: str | None) -> bool:
        caps = capabilities_of(role)
        return any(cap in caps for cap in self.needs)


def read_tool(
    name, route, description, run, out, path=(), needs=(Cap.DISCOVERY_READ,), payload=None, many=False
) -> ToolSpec:
    """A read: the tool of a GET route (``payload``: the route's query schema; ``many``: a paged list;
    ``needs``: the capability the route reads with, discovery:read unless named)."""
    return ToolSpec(
        name=name,
        route=route,
        description=description,
        needs=needs,
        run=run,
        out=out,
        payload=payload,
        path=path,
        read_only=True,
        many=many,
    )


TOOLS_BY_NAME: dict[str, ToolSpec] = {}


def register_tools(*specs: ToolSpec) -> None:
    """Add an app's tools (from its ``ready()``). Names are unique and plain; no tool decides."""
    for spec in specs:
        if TOOLS_BY_NAME.get(spec.name, spec) is not spec:
            raise ValueError(f"two tools are named {spec.name!r}")
        if not re.fullmatch(r"[a-z_]+", spec.name):
            raise ValueError(f"tool name {spec.name!r}: lower-case letters and underscores only")
        if spec.read_only and spec.method != "GET":
            raise ValueError(f"tool {spec.name!r}: a read mirrors a GET route")
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
UUID = r"[0-9a-fA-F-]{32,36}"
# What each template parameter matches (an id, unless named here).
TEMPLATE_VALUES: dict[str, str] = {"as_of_chapter": r"[0-9]{1,6}"}


@dataclass(frozen=True)
class ResourceKind:
    """What an agent reads at an address: ``template`` (RFC 6570 level 1, as MCP resource templates are
    written) names its parameters, which ``read`` takes in order, after the principal."""

    name: str
    template: str
    description: str
    read: Callable[..., dict]
    per_book: bool = True  # listed for each book the key may touch (when ``book_id`` is its only parameter)

    @property
    def parameters(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.template)

    @property
    def pattern(self) -> re.Pattern:
        pattern = re.escape(self.template)
        for name in self.parameters:
            value = TEMPLATE_VALUES.get(name, UUID)
            pattern = pattern.replace(re.escape("{" + name + "}"), f"(?P<{name}>{value})")
        return re.compile(pattern)

    def uri(self, value: Any) -> str:
        return self.template.replace("{book_id}", str(value))


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
            return kind.read(principal, *match.groups())
    raise NotFound(f"no resource at {uri!r}", field="uri")


def resources_listed(principal: Principal) -> list[dict]:
    """Each book the key may touch, with its per-book resources (chunks are read by id only)."""
    books = list(_books_of[0](principal)) if _books_of else []
    return [
        {"uri": kind.uri(book.pk), "name": f"{book.title}: {kind.name}", "description": kind.description}
        for book in books
        for kind in RESOURCES
        if kind.per_book and kind.parameters == ["book_id"]
    ]


# --- The REST routes no tool mirrors, each with why: the one list ------------------------------------
#
# Every other route of the REST API is a duty some agent role may do, so it has a tool (its
# ``route``); the duty-table test (tests/test_mcp_duty_table.py) walks the API's operations and fails
# on a route that is neither a tool's nor listed here, on a tool whose route the API lacks, and on an
# entry here that names no route. A person's route is one no agent key may call: it needs a
# capability no agent role holds (checked against ``roles.CAPABILITIES``), or a person.

PERSON_ONLY: dict[str, Cap | str] = {
    # Deciding: the author's verdicts, with a rationale (decision:make).
    "POST /approvals/{approval_id}/verdict": Cap.DECIDE,
    "POST /books/{book_id}/loop/approvals/{approval_id}/verdict": Cap.DECIDE,
    "POST /charters/{charter_id}/resolve": Cap.DECIDE,
    "POST /claims/{claim_id}/promote": Cap.DECIDE,
    "POST /claims/{claim_id}/reject": Cap.DECIDE,
    "POST /claims/{claim_id}/supersede": Cap.DECIDE,
    "POST /claims/{claim_id}/retract": Cap.DECIDE,
    "POST /observations/{observation_id}/resolve": "the author confirms, corrects or retires an observation",
    "POST /research/{research_id}/admit": Cap.DECIDE,
    "POST /research/{research_id}/reject": Cap.DECIDE,
    # Where a book's events are posted, and its signing secret: the author's setting, never an agent's.
    "PUT /books/{book_id}/webhook": "the author registers where the book's events are posted",
    "GET /books/{book_id}/webhook": "the webhook's secret and delivery log are the author's",
    # The loop's own bounds and a whole loop's import are the author's (loop:write).
    "POST /books/{book_id}/loop/import": Cap.LOOP_WRITE,
    # Curating the library (literary:write).
    "POST /library/sources": Cap.LITERARY_WRITE,
    "POST /library/sources/{source_id}/chunks": Cap.LITERARY_WRITE,
    # What only a person does: own books and series, invite editors, start the built-in agents.
    "POST /series": "a person creates a series",
    "POST /books": "a person creates a book and becomes its author",
    "PATCH /books/{book_id}": "the book's author changes her book (title, premise, genre)",
    "POST /books/{book_id}/editors": "the book's author invites an editor",
    "DELETE /books/{book_id}/editors/{user_id}": "the book's author removes an editor",
    # The manuscript (issue 28) is the author's: her chapters, their text, her codex entries, how she settles
    # a continuity finding (agents propose entries and canon changes through the approval flow instead).
    "POST /books/{book_id}/chapters": "the author adds her chapters",
    "PATCH /books/{book_id}/chapters/{number}": "the author retitles and moves her chapters",
    "PUT /books/{book_id}/chapters/{number}/text": "the author writes her chapter's text",
    "POST /books/{book_id}/manuscript": "the author uploads her manuscript",
    "PATCH /books/{book_id}/codex/entries/{entry_id}": "the author keeps the codex's entries",
    "POST /books/{book_id}/continuity/{finding_id}/settle": "the author settles a continuity finding",
    # Reopening a handed-off discovery is the author's decision, and so is looking at what it would touch first.
    "GET /books/{book_id}/reopen": "the author sees what reopening her handed-off discovery touches",
    "POST /books/{book_id}/reopen": Cap.DECIDE,
    # The story bible's share links (issue 29): handing the book to a reader outside it is the author's.
    "GET /books/{book_id}/bible/links": "the author's share links to the story bible",
    "POST /books/{book_id}/bible/links": "the author hands the story bible to an editor or a beta reader",
    "DELETE /books/{book_id}/bible/links/{link_id}": "the author revokes a share link to the story bible",
    # Notifications (issue 29) are a person's own inbox: an agent key has none.
    "GET /books/{book_id}/notifications": "how a person hears about a book by e-mail is her own setting",
    "PUT /books/{book_id}/notifications": "a person chooses how she hears about a book by e-mail",
    "GET /series/{series_id}/bible/links": "the series' author's share links to the series bible",
    "POST /series/{series_id}/bible/links": "the series' author hands the series bible to an editor or a beta reader",
    "DELETE /series/{series_id}/bible/links/{link_id}": "the series' author revokes a share link to the series bible",
}

# The reads an agent key may make over REST that no tool mirrors, each with why. A new GET route is either a
# tool's or listed here, so a gap is visible, not silent.
READS_WITHOUT_TOOL: dict[str, str] = {
    "GET /books/{book_id}/decision-log/export": "a file download (JSON Lines streamed for an outside verifier), "
    "not a JSON answer; the same entries, withheld as the route withholds them, are read through the "
    "decision_log_read tool, and the chain is checked through decision_log_verify",
    "GET /books/{book_id}/loop/export": "a file download (a zip of the loop's state files), not a JSON answer; "
    "the same state is read through the loop's read tools",
}


# --- Prompts: "act as <role>", the duties and the rules an outside model works under ---------------

ROLE_BRIEFS: dict[str, str] = {
    "sol": "You are Sol, the coordinator of the book's discovery. You converse with the author (her turns, "
    "your turns with the observations they make), put the next question to her, hand bounded tasks to "
    "Terra and Luna, run the loop (gates, rounds, cost, the plan tree) and propose canon; you never approve.",
    "terra": "You are Terra, the structural specialist. You propose story thrusts and charter versions, "
    "divergence candidates, traceability nodes and edges and blackboard slots, and you file the "
    "canon-integrity review at G2.",
    "luna": "You are Luna, the bounded worker. You work on what is handed to you: you read the library and the "
    "book (never series canon), return handoffs with facts, inferences, options and questions, and file "
    "the reader-trust review at G2.",
}
RULES: tuple[str, ...] = (
    "Nothing you write is canon: claims, charters, slots, candidates and research enter as proposed, and only "
    "the author decides, with a rationale, through her own pages. No tool decides, and none is offered to you.",
    "Provisional thinking goes into the append-only scratchpad; mark each statement a fact, an inference, an "
    "option or a question, and cite the turn, entry, claim or chunk it rests on.",
    "Read before you write: take your dossier first (the dossier_take tool, or the dossier resource); what "
    "your role may not read is named under `withheld`, and you do not guess at it.",
    "A refusal is an answer: a tool error carries the REST API's body (`detail`, `code`, `field`, `status`); "
    "fix the input or leave the decision to the author, never retry around a rule.",
    "Withdraw only your own unratified work; a ratified slot changes only through the cascade and a verdict.",
)


def role_prompt(role: str, book_id: str, handoff_id: str | None = None) -> str:
    """The prompt that hands an outside model role ``role`` on a book: who it is, its duties (the tools its
    capabilities meet, as listed to its key) and the rules it works under."""
    duties = "\n".join(f"- {tool.name}: {tool.description}" for tool in tools_for(role) if not tool.read_only)
    reads = ", ".join(tool.name for tool in tools_for(role) if tool.read_only)
    task = (
        f"Work on the handoff {handoff_id} (read it at {SCHEME}://handoffs/{handoff_id}) and return its result "
        "with the handoff_return tool, once."
        if handoff_id
        else f"Start from your dossier of the book (the dossier_take tool, or {SCHEME}://books/{book_id}/dossier)."
    )
    rules = "\n".join(f"- {rule}" for rule in RULES)
    return (
        f"{ROLE_BRIEFS.get(role, '')}\n\nThe book: {book_id}. {task}\n\n"
        f"Your duties (tools):\n{duties}\n\nWhat you read (tools): {reads}; and the resources listed to you.\n\n"
        f"The rules you work under:\n{rules}\n"
    )
