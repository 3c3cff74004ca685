"""Domain errors: what services raise when a rule refuses a request.

Each carries the HTTP status the API answers with, so the one exception handler in
``novelgraph.api`` and the HTMX views can turn it into a JSON error or an inline
message without knowing which rule fired.
"""

from __future__ import annotations


class DomainError(Exception):
    status = 400
    code = "error"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        code: str | None = None,
        **extra: object,
    ):
        super().__init__(message)
        self.message = message
        self.field = field
        if code:
            self.code = code
        self.extra = extra

    def as_dict(self) -> dict:
        body: dict = {"detail": self.message, "code": self.code}
        if self.field:
            body["field"] = self.field
        body.update(self.extra)
        return body


class NotAuthenticated(DomainError):
    status = 401
    code = "not_authenticated"


class Forbidden(DomainError):
    """The principal is known but lacks a capability (the message names it)."""

    status = 403
    code = "forbidden"


class NotFound(DomainError):
    status = 404
    code = "not_found"


class Conflict(DomainError):
    """The request is well formed but the object's state does not allow it."""

    status = 409
    code = "conflict"


class Invalid(DomainError):
    """Bad input: ``field`` names the offending field."""

    status = 422
    code = "invalid"
