"""The MCP server, built on the official SDK's low-level ``Server`` from the kernel's registry of duties
(``novelgraph.core.duties``: the tools and resources each app declares beside its services).

Whoever calls is resolved on every request, through a *principal source*: over stdio from the key
the command was started with, over HTTP from the request's bearer key (``novelgraph.mcp.http``).
Nothing is cached, so a revoked key is refused at its next request. Only agent keys are served: a
personal key acts as the person who owns it, and an AI client holding it would speak in the
conversation as the author herself; the author uses the browser or the REST API.

Errors are MCP tool errors whose structured content is the REST API's JSON error body
(``{"detail", "code", "field"?, ...}``, plus the HTTP ``status`` the REST API would answer), so the
message and the field are the same; validation errors are worded as the REST API words them.
Resource reads fail with an MCP error carrying the same body as its data.

The services are synchronous: every request runs as one unit of work in Django's thread-sensitive
executor (``sync_to_async``), with the connection housekeeping Django does around a request.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import close_old_connections, connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError as PydanticValidationError

from novelgraph.core.auth import Principal, principal_for_key
from novelgraph.core.duties import (
    RESOURCES,
    ROLE_BRIEFS,
    TOOLS_BY_NAME,
    ToolSpec,
    resource_read,
    resources_listed,
    role_prompt,
    tools_for,
)
from novelgraph.core.errors import DomainError, Forbidden, Invalid, NotAuthenticated
from novelgraph.core.schemas import field_of, refuse_invalid_text

logger = logging.getLogger(__name__)

SERVER_NAME = "novelgraph"
KEY_REFUSED = "authentication required: send an agent key (sol, terra or luna) that is neither unknown nor revoked"
PERSONAL_KEY_REFUSED = (
    "this is a personal key: it acts as its owner, and the MCP server serves agent keys only (sol, terra, luna); "
    "create one with `python manage.py create_api_key --role luna` or on the /keys/ page"
)
INSTRUCTIONS = (
    "NovelGraph: the discovery of a book with three agent roles. Your key carries one role (Sol the coordinator, "
    "Terra the structural specialist or Luna the bounded worker) and the tools listed are exactly what that role "
    "may do. Start from your dossier (the dossier_take tool, or the novelgraph://books/{book_id}/dossier "
    "resource): it names the book, the session and what your role may read. Provisional thinking goes into the "
    "append-only scratchpad; nothing you propose becomes canon until the author decides, with a rationale. "
    "Your role's prompt (act_as_<role>) hands you your duties and the rules you work under."
)
RESOURCE_NOT_FOUND = -32002

PrincipalSource = Callable[[ServerRequestContext], Principal]


def agent_principal(raw_key: str | None) -> Principal:
    """The principal of an agent key, or the refusal: 401 for no, unknown or revoked key, 403 for a personal key."""
    principal = principal_for_key(raw_key) if raw_key else None
    if principal is None:
        raise NotAuthenticated(KEY_REFUSED)
    if not principal.is_agent:
        raise Forbidden(PERSONAL_KEY_REFUSED, code="personal_key")
    return principal


def key_source(raw_key: str | None) -> PrincipalSource:
    """The principal source of a connection opened with one key (stdio, or in-process)."""
    return lambda _ctx: agent_principal(raw_key)


# --- Errors: the REST API's JSON error body ------------------------------------------------------


def error_body(exc: DomainError | PydanticValidationError) -> dict:
    if isinstance(exc, DomainError):
        return {**exc.as_dict(), "status": exc.status}
    errors = [{"field": field_of(e.get("loc", ())), "message": e.get("msg", "invalid")} for e in exc.errors()]
    first = errors[0] if errors else {"field": "body", "message": "invalid input"}
    return {
        "detail": f"{first['field']}: {first['message']}",
        "code": "invalid",
        "field": first["field"],
        "errors": errors,
        "status": 422,
    }


def _refuse_non_finite(value: Any) -> None:
    """As the REST API's parser: NaN and Infinity are not numbers it accepts."""
    if isinstance(value, float) and not math.isfinite(value):
        raise Invalid(f"body: {value} is not a number the API accepts", field="body")
    if isinstance(value, dict):
        for item in value.values():
            _refuse_non_finite(item)
    elif isinstance(value, list):
        for item in value:
            _refuse_non_finite(item)


def _as_mcp_error(exc: DomainError) -> MCPError:
    body = error_body(exc)
    code = {404: RESOURCE_NOT_FOUND, 422: types.INVALID_PARAMS}.get(exc.status, types.INVALID_REQUEST)
    return MCPError(code, exc.message, body)


def _text(data: Any) -> list[types.TextContent]:
    return [types.TextContent(text=json.dumps(data, ensure_ascii=False, sort_keys=True))]


# --- One request, one unit of work in the database -------------------------------------------------


def _unit_of_work(fn: Callable, *args: Any) -> Any:
    # Django's request boundary: drop a connection that errored or outlived CONN_MAX_AGE. Never
    # inside someone else's transaction (an in-process caller, a test).
    fresh = not connection.in_atomic_block
    if fresh:
        close_old_connections()
    try:
        return fn(*args)
    except (MCPError, DomainError):
        raise
    except Exception:
        logger.exception("MCP request failed")
        raise MCPError(types.INTERNAL_ERROR, "internal error") from None
    finally:
        if fresh:
            close_old_connections()


async def in_db(fn: Callable, *args: Any) -> Any:
    return await sync_to_async(_unit_of_work, thread_sensitive=True)(fn, *args)


# --- Tools ---------------------------------------------------------------------------------------


def tool_listing(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.name.replace("_", " ").capitalize(),
        description=f"{spec.description} (REST: {spec.route})",
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(**spec.annotations),
    )


def tool_call(principal: Principal, spec: ToolSpec, arguments: dict) -> dict:
    """Validate ``arguments`` with the tool's schema and run it; the answer is the REST response body."""
    refuse_invalid_text(arguments, "")
    _refuse_non_finite(arguments)
    return spec.answer(principal, arguments)


def _call_tool(source: PrincipalSource, ctx: ServerRequestContext, name: str, arguments: Any) -> types.CallToolResult:
    try:
        principal = source(ctx)
        spec = TOOLS_BY_NAME.get(name)
        if spec is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {name!r}")
        data = tool_call(principal, spec, arguments if isinstance(arguments, dict) else {})
    except (DomainError, PydanticValidationError) as exc:
        body = error_body(exc)
        return types.CallToolResult(content=_text(body), structured_content=body, is_error=True)
    return types.CallToolResult(content=_text(data), structured_content=data)


def _principal_or_mcp_error(source: PrincipalSource, ctx: ServerRequestContext) -> Principal:
    try:
        return source(ctx)
    except DomainError as exc:
        raise _as_mcp_error(exc) from None


def _read(source: PrincipalSource, ctx: ServerRequestContext, uri: str) -> dict:
    principal = _principal_or_mcp_error(source, ctx)
    try:
        return resource_read(principal, uri)
    except DomainError as exc:
        raise _as_mcp_error(exc) from None


def _listed(source: PrincipalSource, ctx: ServerRequestContext) -> list[dict]:
    return resources_listed(_principal_or_mcp_error(source, ctx))


# --- Prompts: one per role, listed to that role's key -------------------------------------------

PROMPT_ARGUMENTS = [
    types.PromptArgument(name="book_id", description="The book's id.", required=True),
    types.PromptArgument(name="handoff_id", description="A handoff to your role, to work on.", required=False),
]


def prompt_name(role: str) -> str:
    return f"act_as_{role}"


def _prompt_listing(role: str) -> types.Prompt:
    return types.Prompt(
        name=prompt_name(role),
        title=f"Act as {role.title()}",
        description=f"Act as {role.title()} on a book (or on one handoff): your duties and the rules you work under.",
        arguments=PROMPT_ARGUMENTS,
    )


def _prompt(source: PrincipalSource, ctx: ServerRequestContext, name: str, arguments: dict | None) -> dict:
    role = _principal_or_mcp_error(source, ctx).key_role
    if name != prompt_name(role):
        raise MCPError(types.INVALID_PARAMS, f"unknown prompt {name!r}: your key's prompt is {prompt_name(role)!r}")
    arguments = arguments or {}
    if not arguments.get("book_id"):
        raise MCPError(types.INVALID_PARAMS, "book_id: the prompt needs the book's id")
    text = role_prompt(role, str(arguments["book_id"]), arguments.get("handoff_id") or None)
    return {"description": _prompt_listing(role).description, "text": text}


def build_server(source: PrincipalSource) -> Server:
    """The MCP server; ``source`` says who is calling, per request."""

    async def list_tools(ctx: ServerRequestContext, _params) -> types.ListToolsResult:
        principal = await in_db(_principal_or_mcp_error, source, ctx)
        return types.ListToolsResult(tools=[tool_listing(spec) for spec in tools_for(principal.key_role)])

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await in_db(_call_tool, source, ctx, params.name, params.arguments)

    async def list_resources(ctx: ServerRequestContext, _params) -> types.ListResourcesResult:
        listed = await in_db(_listed, source, ctx)
        return types.ListResourcesResult(
            resources=[types.Resource(mime_type="application/json", **item) for item in listed]
        )

    async def list_resource_templates(ctx: ServerRequestContext, _params) -> types.ListResourceTemplatesResult:
        await in_db(_principal_or_mcp_error, source, ctx)
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=kind.template,
                    name=kind.name,
                    description=kind.description,
                    mime_type="application/json",
                )
                for kind in RESOURCES
            ]
        )

    async def read_resource(ctx: ServerRequestContext, params: types.ReadResourceRequestParams):
        data = await in_db(_read, source, ctx, params.uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type="application/json", text=json.dumps(data))]
        )

    async def list_prompts(ctx: ServerRequestContext, _params) -> types.ListPromptsResult:
        principal = await in_db(_principal_or_mcp_error, source, ctx)
        role = principal.key_role
        return types.ListPromptsResult(prompts=[_prompt_listing(role)] if role in ROLE_BRIEFS else [])

    async def get_prompt(ctx: ServerRequestContext, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        got = await in_db(_prompt, source, ctx, params.name, params.arguments)
        message = types.PromptMessage(role="user", content=types.TextContent(text=got["text"]))
        return types.GetPromptResult(description=got["description"], messages=[message])

    def input_schema(name: str) -> dict | None:
        spec = TOOLS_BY_NAME.get(name)
        return spec.input_schema if spec else None

    return Server(
        SERVER_NAME,
        version="1",
        title="NovelGraph",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
