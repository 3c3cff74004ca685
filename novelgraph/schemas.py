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


# Declare on routes: response={200: Out, **ERRORS}
ERRORS = {401: Error, 403: Error, 404: Error, 409: Error, 422: ValidationErrorOut}
