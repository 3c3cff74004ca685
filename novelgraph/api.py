"""The NinjaAPI instance: it mounts the apps' routers and turns every error into the JSON error shape.

Every error the API returns is JSON: ``{"detail": str, "code": str, "field"?: str}``
(422 adds ``errors``: one ``{"field", "message"}`` per problem).
"""

from __future__ import annotations

import json

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.parser import Parser

from novelgraph.core.auth import ApiKeyAuth, BrowserSessionAuth
from novelgraph.core.errors import DomainError, Invalid
from novelgraph.core.schemas import refuse_invalid_text
from novelgraph.core.security import body_limit_for


def _refuse_constant(name: str):
    raise Invalid(f"body: {name} is not a number the API accepts", field="body")


class InputParser(Parser):
    """Input as the API accepts it, for every route at once: only valid text (no NUL, no lone surrogate:
    see ``text_fault``) and no NaN or Infinity in JSON (not JSON, and not storable)."""

    def parse_body(self, request: HttpRequest):
        data = json.loads(request.body, parse_constant=_refuse_constant)
        refuse_invalid_text(data, "")
        return data

    def parse_querydict(self, data, list_fields, request: HttpRequest):
        for key, values in data.lists():
            for value in values:
                if isinstance(value, str):
                    refuse_invalid_text(value, key)
        return super().parse_querydict(data, list_fields, request)


api = NinjaAPI(
    title="NovelGraph API",
    version="1",
    description=(
        "Discovery of a book with Sol, Terra and Luna. Agents authenticate with a Bearer key that "
        "carries their role; people use a personal `author` key or their browser session. Errors are "
        'JSON: `{"detail", "code", "field"?}`.'
    ),
    auth=[ApiKeyAuth(), BrowserSessionAuth()],
    parser=InputParser(),
    urls_namespace="api",
)


def error_response(request: HttpRequest, status: int, body: dict) -> HttpResponse:
    return api.create_response(request, body, status=status)


@api.exception_handler(DomainError)
def on_domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
    return error_response(request, exc.status, exc.as_dict())


def _field_of(loc: list) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] == "body":
        parts = parts[2:] if len(parts) > 2 else parts[1:]
    elif parts and parts[0] in {"query", "path", "header", "cookie", "form", "file"}:
        parts = parts[1:]
    return ".".join(parts) or "body"


@api.exception_handler(NinjaValidationError)
def on_validation_error(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    errors = [{"field": _field_of(e.get("loc", [])), "message": e.get("msg", "invalid")} for e in exc.errors]
    first = errors[0] if errors else {"field": "body", "message": "invalid input"}
    body = {
        "detail": f"{first['field']}: {first['message']}",
        "code": "invalid",
        "field": first["field"],
        "errors": errors,
    }
    return error_response(request, 422, body)


@api.exception_handler(AuthenticationError)
def on_auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    body = {
        "detail": "authentication required: send 'Authorization: Bearer <key>' or log in",
        "code": "not_authenticated",
    }
    return error_response(request, 401, body)


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(request, 404, {"detail": str(exc) or "not found", "code": "not_found"})


@api.exception_handler(PermissionDenied)
def on_permission_denied(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    return error_response(request, 403, {"detail": str(exc) or "forbidden", "code": "forbidden"})


@api.exception_handler(RequestDataTooBig)
def on_body_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    limit = body_limit_for(request)
    return error_response(
        request, 413, {"detail": f"request body is too large; the limit is {limit} bytes", "code": "too_large"}
    )


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, DomainError):  # refused by InputParser while parsing the body
        return on_domain_error(request, exc.__cause__)
    if exc.status_code == 400:
        # ninja's "Cannot parse request body": bad input, answered like every other bad input (422, documented).
        body = {"detail": f"body: {exc} (send a JSON object)", "code": "invalid", "field": "body", "errors": []}
        return error_response(request, 422, body)
    return error_response(request, exc.status_code, {"detail": str(exc), "code": "error"})


# The apps' routers, named by path: the roof mounts them and imports none of them itself.
_ROUTERS = (
    "discovery.api",
    "discovery.manuscript_api",
    "discovery.bible_api",
    "discovery.notifications_api",
    "discovery.loop.api",
    "discovery.agents.api",
    "library.api",
    "approvals.api",
)
for _router in _ROUTERS:
    api.add_router("", f"{_router}.router")
