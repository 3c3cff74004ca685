"""Reads never fail on stored text (issue 30, item 2): a store that already holds a lone surrogate from before the
input rule (inserted raw, on SQLite: PostgreSQL never stored one) still answers the book's search, its export and the
author's decisions on the item."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.db import connection

from approvals.selectors import decision_log_verify
from discovery.loop.models import BlackboardArtifact
from discovery.models import KnowledgeClaim

from .discovery_support import start

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif("connection.vendor != 'sqlite'", reason="PostgreSQL cannot store a lone surrogate"),
]


def _store_raw(table: str, column: str, pk, json_text: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f'UPDATE "{table}" SET "{column}" = %s WHERE id = %s', [json_text, pk.hex])


def _claim(api, book, value="The keeper lies about the lamp.") -> KnowledgeClaim:
    body = {
        "scope": "book",
        "scope_id": str(book.pk),
        "subject": "The keeper",
        "predicate": "says",
        "value": value,
        "provenance": "agent-inferred",
    }
    response = api.post("/claims", body)
    assert response.status_code == 201, response.content
    return KnowledgeClaim.objects.get(pk=response.json()["id"])


@pytest.fixture
def broken_book(author_api, sol_api, book):
    start(author_api, book)
    claims = [_claim(sol_api, book) for _ in range(3)]
    for claim in claims:
        _store_raw(KnowledgeClaim._meta.db_table, "value", claim.pk, '"The keeper \\ud800 lies about the lamp."')
    made = sol_api.post(
        f"/books/{book.pk}/loop/artifacts", {"slug": "lamp", "type": "note", "content": {"text": "lamp"}}
    )
    assert made.status_code == 201, made.content
    artifact = BlackboardArtifact.objects.get(book=book, slug="lamp")
    _store_raw(BlackboardArtifact._meta.db_table, "content", artifact.pk, '{"text": "the lamp \\udc00 room"}')
    claims[0].refresh_from_db()
    assert "\ud800" in claims[0].value
    return book, claims


def test_the_books_search_still_answers_on_the_api_and_the_page(broken_book, author_api, author_browser):
    book, _claims = broken_book
    api = author_api.get(f"/books/{book.pk}/search", q="keeper")
    assert api.status_code == 200, api.content
    page = author_browser.get(f"/books/{book.pk}/search/", {"q": "keeper"})
    assert page.status_code == 200
    assert api.json()["results"], "the claims are still found"


def test_the_loop_export_still_answers(broken_book, author_api):
    book, _claims = broken_book
    response = author_api.get(f"/books/{book.pk}/loop/export")
    assert response.status_code == 200, response.content
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    blackboard = next(name for name in archive.namelist() if name.endswith("_state/blackboard.json"))
    assert "the lamp \\udc00 room" in archive.read(blackboard).decode(), "written as its JSON escape"


def test_the_author_still_decides_on_the_item(broken_book, author_api, sol_api):
    book, claims = broken_book
    promoted = author_api.post(f"/claims/{claims[0].pk}/promote", {"book_id": str(book.pk), "rationale": "Canon."})
    assert promoted.status_code == 200, promoted.content
    rejected = author_api.post(f"/claims/{claims[1].pk}/reject", {"book_id": str(book.pk), "rationale": "No."})
    assert rejected.status_code == 200, rejected.content
    asked = sol_api.post(f"/claims/{claims[2].pk}/request-approval", {"book_id": str(book.pk)})
    assert asked.status_code == 201, asked.content
    assert decision_log_verify(book).ok, decision_log_verify(book).reason
