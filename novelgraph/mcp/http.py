"""The MCP server over streamable HTTP, mounted at ``/mcp`` beside Django (``novelgraph/asgi.py``).

Every HTTP request carries the same bearer keys as the REST API (``Authorization: Bearer <key>``)
and is authenticated before the SDK sees it: no, unknown or revoked key is a 401, a personal key a
403, both as the REST API's JSON error (``{"detail", "code"}``). The Host header is checked
against ``DJANGO_ALLOWED_HOSTS`` as Django checks it, and the body is limited like the REST API's.

Against DNS rebinding (the MCP specification asks a streamable-HTTP server to validate ``Origin``), a
request whose ``Origin`` is foreign is refused with a 403 before its key is looked at. Allowed: no
``Origin`` at all (the SDK's clients and every non-browser client send none), the site's own origin (an
``Origin`` naming the very host and port of the request's Host header, itself one of
``DJANGO_ALLOWED_HOSTS``), and the origins listed in ``NOVELGRAPH_MCP_ALLOWED_ORIGINS``.

The transport is stateless (every POST stands alone, answered with JSON): nothing an agent does
needs a server-to-client request, the key is re-checked on every request, and any number of worker
processes or hosts can serve ``/mcp`` behind one database, as they serve the REST API.
"""

from __future__ import annotations

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.context import ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from novelgraph.core.auth import Principal
from novelgraph.core.errors import DomainError, NotAuthenticated
from novelgraph.core.security import CONTENT_SECURITY_POLICY

from .server import KEY_REFUSED, agent_principal, build_server, in_db

MCP_PATH = "/mcp"
PRINCIPAL = "novelgraph_principal"
RESPONSE_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
]


def request_principal(ctx: ServerRequestContext) -> Principal:
    """The principal :class:`BearerKeyAuth` resolved for this HTTP request."""
    request = ctx.request
    principal = request.scope.get("state", {}).get(PRINCIPAL) if request is not None else None
    if principal is None:
        raise NotAuthenticated(KEY_REFUSED)
    return principal


def _bearer(headers: Headers) -> str | None:
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


def _host_allowed(headers: Headers) -> bool:
    domain, _port = split_domain_port(headers.get("host", ""))
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


def _normal_origin(origin: str) -> str:
    return origin.strip().lower().rstrip("/")


def _origin_allowed(headers: Headers) -> bool:
    """No ``Origin``, the request's own origin, or one listed in ``NOVELGRAPH_MCP_ALLOWED_ORIGINS``
    (``null``, sent by sandboxed pages and local files, is foreign)."""
    origin = headers.get("origin")
    if origin is None:
        return True
    origin = _normal_origin(origin)
    scheme, separator, netloc = origin.partition("://")
    if separator and scheme in {"http", "https"} and netloc and netloc == headers.get("host", "").strip().lower():
        return True
    return origin in {_normal_origin(allowed) for allowed in settings.NOVELGRAPH_MCP_ALLOWED_ORIGINS}


class BearerKeyAuth:
    """ASGI middleware: resolve the bearer key once per request, refuse as the REST API refuses."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *RESPONSE_HEADERS]}
            await send(message)

        headers = Headers(scope=scope)
        if not _host_allowed(headers):
            body = {"detail": "invalid Host header: not in DJANGO_ALLOWED_HOSTS", "code": "bad_request"}
            await JSONResponse(body, status_code=400)(scope, receive, send_with_headers)
            return
        if not _origin_allowed(headers):
            body = {
                "detail": "foreign Origin header: not this site's origin nor in NOVELGRAPH_MCP_ALLOWED_ORIGINS",
                "code": "forbidden",
                "field": "Origin",
            }
            await JSONResponse(body, status_code=403)(scope, receive, send_with_headers)
            return
        try:
            principal = await in_db(agent_principal, _bearer(headers))
        except DomainError as exc:
            extra = {"WWW-Authenticate": 'Bearer realm="novelgraph"'} if exc.status == 401 else None
            await JSONResponse(exc.as_dict(), status_code=exc.status, headers=extra)(scope, receive, send_with_headers)
            return
        scope = {**scope, "state": {**scope.get("state", {}), PRINCIPAL: principal}}
        await self.app(scope, receive, send_with_headers)


def mcp_http_app() -> ASGIApp:
    """The SDK's streamable-HTTP app at ``/mcp``, behind :class:`BearerKeyAuth`. Its lifespan runs the
    SDK's session manager, so the server that mounts it must run ASGI lifespan (uvicorn does)."""
    server = build_server(request_principal)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        # Hosts are checked above against DJANGO_ALLOWED_HOSTS, the rule every Django page follows.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
    )
    return BearerKeyAuth(app)


def with_mcp(django_app: ASGIApp, mcp_app: ASGIApp) -> ASGIApp:
    """One ASGI application: ``/mcp`` (and ``/mcp/``) to the MCP app, everything else to Django.

    ASGI lifespan goes to the MCP app (Django has none)."""

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await mcp_app(scope, receive, send)
        elif scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH:
            await mcp_app({**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode()}, receive, send)
        else:
            await django_app(scope, receive, send)

    return application
