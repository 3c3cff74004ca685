"""The MCP resources: what an agent reads, filtered by its role exactly as the REST API filters it.

- ``novelgraph://books/{book_id}/dossier``: the role's latest dossier of the book (a snapshot is
  role-scoped when it is taken: Luna's carries no series canon and says so under ``withheld``);
  ``GET /books/{book_id}/dossiers`` shows an agent only its own role's dossiers too.
- ``novelgraph://books/{book_id}/question``: the question the book's discovery is asking the
  author now, and the latest one Sol put with what prompted it (discovery:read).
- ``novelgraph://books/{book_id}/handoffs``: the open handoffs addressed to the role (discovery:read).
- ``novelgraph://chunks/{chunk_id}``: one library chunk with its source (literary:read).

Reading changes nothing: a book without a dossier for the role answers "not found" and points at
the ``dossier_take`` tool.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from discovery import services
from discovery.access import Cap, book_access, books_visible_to, principal_capabilities, refusal
from discovery.schemas import DossierOut, HandoffOut, SessionQuestionOut, handoff_out
from discovery.selectors import current_session, handoffs_open_to
from library.schemas import ChunkOut, SourceOut
from library.selectors import chunk_get
from novelgraph.core.auth import Principal
from novelgraph.core.errors import NotFound

SCHEME = "novelgraph"
UUID = r"(?P<{}>[0-9a-fA-F-]{{32,36}})"


def _json(schema, obj) -> dict:
    return schema.from_orm(obj).model_dump(mode="json")


def dossier_latest(principal: Principal, book_id: str) -> dict:
    access = book_access(principal, book_id, Cap.BOOK_READ)
    dossier = services.dossiers_for(access).first()
    if dossier is None:
        raise NotFound(f"no {access.role} dossier of this book yet; take one with the dossier_take tool")
    return _json(DossierOut, dossier)


def question_current(principal: Principal, book_id: str) -> dict:
    access = book_access(principal, book_id, Cap.DISCOVERY_READ)
    session = current_session(access.book)
    if session is None:
        raise NotFound("this book has no discovery session yet")
    asked = session.questions.order_by("-sequence").first()
    return {
        "book_id": str(access.book.pk),
        "session_id": str(session.pk),
        "session_status": session.status,
        "current_question": session.current_question,
        "asked": _json(SessionQuestionOut, asked) if asked else None,
    }


def handoffs_open(principal: Principal, book_id: str) -> dict:
    access = book_access(principal, book_id, Cap.DISCOVERY_READ)
    return {
        "book_id": str(access.book.pk),
        "to_role": access.role,
        "handoffs": [
            HandoffOut.model_validate(handoff_out(h)).model_dump(mode="json") for h in handoffs_open_to(access)
        ],
    }


def chunk_read(principal: Principal, chunk_id: str) -> dict:
    if Cap.LITERARY_READ not in principal_capabilities(principal):
        raise refusal(principal.key_role, Cap.LITERARY_READ)
    chunk = chunk_get(chunk_id)
    return {"chunk": _json(ChunkOut, chunk), "source": _json(SourceOut, chunk.source)}


@dataclass(frozen=True)
class ResourceKind:
    name: str
    template: str  # RFC 6570 level 1, as MCP resource templates are written
    description: str
    read: Callable[[Principal, str], dict]
    per_book: bool = True

    @property
    def pattern(self) -> re.Pattern:
        parameter = "book_id" if self.per_book else "chunk_id"
        return re.compile(re.escape(self.template).replace(re.escape("{" + parameter + "}"), UUID.format(parameter)))

    def uri(self, value: Any) -> str:
        return self.template.replace("{book_id}" if self.per_book else "{chunk_id}", str(value))


RESOURCES: tuple[ResourceKind, ...] = (
    ResourceKind(
        name="dossier",
        template=f"{SCHEME}://books/{{book_id}}/dossier",
        description="Your role's latest dossier of the book: what it was given and what was withheld.",
        read=dossier_latest,
    ),
    ResourceKind(
        name="question",
        template=f"{SCHEME}://books/{{book_id}}/question",
        description="The question the book's discovery is asking the author now, and what prompted it.",
        read=question_current,
    ),
    ResourceKind(
        name="handoffs",
        template=f"{SCHEME}://books/{{book_id}}/handoffs",
        description="The open handoffs addressed to your role on the book.",
        read=handoffs_open,
    ),
    ResourceKind(
        name="chunk",
        template=f"{SCHEME}://chunks/{{chunk_id}}",
        description="One cited chunk of the literary library, with its source.",
        read=chunk_read,
        per_book=False,
    ),
)


def resource_read(principal: Principal, uri: str) -> dict:
    """Read ``uri`` for ``principal``; an address that names no resource is "not found"."""
    for kind in RESOURCES:
        match = kind.pattern.fullmatch(uri)
        if match:
            return kind.read(principal, match.group(1))
    raise NotFound(f"no resource at {uri!r}", field="uri")


def resources_listed(principal: Principal) -> list[dict]:
    """Each book the key may touch, with its per-book resources (chunks are read by id only)."""
    listed = []
    for book in books_visible_to(principal).order_by("title", "id"):
        for kind in RESOURCES:
            if kind.per_book:
                listed.append(
                    {
                        "uri": kind.uri(book.pk),
                        "name": f"{book.title}: {kind.name}",
                        "description": kind.description,
                    }
                )
    return listed
