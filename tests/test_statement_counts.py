"""The main API routes run a pinned number of SQL statements, counted by the database's own trace.

Counted with ``tests.sqltrace`` (SQLite's trace callback, libpq's protocol trace), so statements run on the
DB-API connection itself (library search) count like any other. Statements, never times.

Every route runs twice in the same scene: first on a twin book (it warms the key's once-a-minute
``last_used_at`` write and the process's caches), then on the book, and only that second call is counted.

When a change moves a count on purpose, edit its row in ``STATEMENTS`` and say why in the commit.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.db import connection
from django.test import Client

from approvals.models import Approval

from .approval_subjects import propose_charter
from .conftest import Api, _key
from .discovery_support import charter_body, start
from .factories import BookFactory
from .sqltrace import sql_trace

pytestmark = pytest.mark.django_db

# route -> statements per request (SQLite, PostgreSQL). Bearer-key requests; a service's transaction counts
# as its BEGIN and COMMIT (here a SAVEPOINT and RELEASE: the test runs inside a transaction).
# Re-pinned at the merge of main (canon, loop, find) into bounded, as measured on both SQLite and PostgreSQL:
# bounded's one-statement key lookup and main's (canon) contradiction check on promote meet here; the merged
# counts equal main's: both branches cut the key lookup to one statement, so that saving is not counted twice.
STATEMENTS: dict[str, tuple[int, int]] = {
    "GET /me": (2, 2),  # the key (one statement: key, owner and book list), visible books
    "GET /books/{id}": (2, 2),  # the key, the book
    "GET /library/search": (2, 2),  # the key, the search statement on the raw connection
    "GET /books/{id}/discovery": (12, 12),  # + the book's sessions (every session is one record)
    # PostgreSQL locks the book row (SELECT ... FOR UPDATE); +1: the loop's meta row (a version proposed after G2
    # raises a card that reopens convergence).
    "POST /books/{id}/charters": (11, 12),
    # +4: the canon it contradicts (bases, claims), for the log; +1 since the log records what became canon
    # (approvals/canon_record.py reads the approved subject's content); PostgreSQL also locks the book before the
    # handler.
    "POST /claims/{id}/promote": (28, 30),
    # + the question the turn answers; PostgreSQL +1: the book row before the session's (one lock order)
    "POST /sessions/{id}/turns": (9, 10),
    "POST /sessions/{id}/scratchpad": (7, 8),
    # likewise, twice, and +1 for the canon record; +1: the pending option cards (a charter-reopen card goes with
    # the charter's decision)
    "POST /approvals/{id}/verdict": (21, 23),
    # the key, the book, its bases (3), the claim's versions (one recursive query), their decisions
    "GET /books/{id}/codex/claims/{id}/history": (7, 7),
}


@dataclass
class Twin:
    """One book in mid-discovery: a session, a turn, a claim Sol proposed, a pending charter approval."""

    book: object
    session: object
    claim_id: str
    approval: Approval


@pytest.fixture
def keys(author, book):
    client = Client()
    return {role: Api(client, _key(author, role)) for role in ("author", "sol", "luna")}


def _twin(keys, book) -> Twin:
    session = start(keys["author"], book)
    turn = keys["author"].post(f"/sessions/{session.pk}/turns", {"role": "author", "content": "Mara lies."})
    assert turn.status_code == 201, turn.content
    claim = keys["sol"].post(
        "/claims",
        {
            "scope": "book",
            "scope_id": str(book.pk),
            "subject": "Mara",
            "predicate": "fears",
            "value": "deep water",
            "provenance": "agent-proposed",
        },
    )
    assert claim.status_code == 201, claim.content
    approval = Approval.objects.get(pk=propose_charter(book).approval_id)
    return Twin(book=book, session=session, claim_id=claim.json()["id"], approval=approval)


def _request(route: str, keys, twin: Twin):
    book, session = twin.book, twin.session
    author, sol, luna = keys["author"], keys["sol"], keys["luna"]
    if route == "GET /me":
        return author.get("/me")
    if route == "GET /books/{id}":
        return author.get(f"/books/{book.pk}")
    if route == "GET /library/search":
        return sol.get("/library/search", q="tension scene")
    if route == "GET /books/{id}/discovery":
        return author.get(f"/books/{book.pk}/discovery")
    if route == "POST /books/{id}/charters":
        return sol.post(f"/books/{book.pk}/charters", charter_body())
    if route == "POST /claims/{id}/promote":
        return author.post(f"/claims/{twin.claim_id}/promote", {"book_id": str(book.pk), "rationale": "Chapter one."})
    if route == "POST /sessions/{id}/turns":
        return author.post(f"/sessions/{session.pk}/turns", {"role": "author", "content": "The tide was early."})
    if route == "POST /sessions/{id}/scratchpad":
        body = {"kind": "observation", "content": "The tide tables disagree.", "confidence": 0.6}
        return luna.post(f"/sessions/{session.pk}/scratchpad", body)
    if route == "POST /approvals/{id}/verdict":
        body = {"verdict": "approve", "rationale": "The murder plot gives her lies a cost."}
        return author.post(f"/approvals/{twin.approval.pk}/verdict", body)
    if route == "GET /books/{id}/codex/claims/{id}/history":
        return luna.get(f"/books/{book.pk}/codex/claims/{twin.claim_id}/history")
    raise AssertionError(f"no request for {route}")


@pytest.mark.parametrize("route", list(STATEMENTS))
def test_the_route_runs_its_pinned_number_of_statements(route, keys, author, book):
    twin = _twin(keys, BookFactory(owner=author, title="The twin"))
    scene = _twin(keys, book)
    warm = _request(route, keys, twin)
    assert warm.status_code in (200, 201), warm.content

    with sql_trace() as trace:
        response = _request(route, keys, scene)

    assert response.status_code in (200, 201), response.content
    expected = STATEMENTS[route][0 if connection.vendor == "sqlite" else 1]
    assert len(trace) == expected, f"{route}: pinned {expected}, ran {trace}"
