"""Schemas shared by every router."""

from __future__ import annotations

from ninja import Schema


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
# (novelgraph.security.RequestSizeLimitMiddleware answers it before the route runs).
ERRORS = {401: Error, 403: Error, 404: Error, 409: Error, 413: Error, 422: ValidationErrorOut}
