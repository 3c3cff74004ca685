"""Nothing half-written: a failure in the middle of a multi-row write leaves nothing of it.

The failure is injected in the database itself, not by mocking our code: a temporary trigger
refuses inserts into the SECOND table the write touches (observations after the turn, the approval
after the charter, the log row after the verdict's cascade, the chunks after the source). The
trigger is created with raw SQL in the test and dropped after it.
"""

from __future__ import annotations

import contextlib

import pytest
from django.db import DatabaseError, connection
from django.test import Client

from approvals.models import Approval, DecisionLogEntry
from discovery.models import Observation, StoryCharter, Turn
from library.models import KnowledgeChunk, KnowledgeSource
from library.schemas import SourceImportIn
from library.services import source_import
from novelgraph.core.auth import principal_for_user

from .approval_subjects import propose_charter
from .factories import DiscoverySessionFactory


def import_document(principal, progress=None, **fields):
    """Import a document as the admin and the command do: fields through the import schema."""
    return source_import(principal=principal, payload=SourceImportIn(**fields), progress=progress)


@contextlib.contextmanager
def inserts_into(table: str) -> None:
    """While inside, any INSERT into ``table`` fails in the database."""
    name = f"sec_inject_{table}"
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                f'CREATE TRIGGER "{name}" BEFORE INSERT ON "{table}" '
                f"BEGIN SELECT RAISE(ABORT, 'injected failure in {table}'); END;"
            )
        else:
            cursor.execute(
                f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger AS $$ BEGIN "
                f"RAISE EXCEPTION 'injected failure in {table}'; END; $$ LANGUAGE plpgsql;"
            )
            cursor.execute(
                f'CREATE TRIGGER "{name}" BEFORE INSERT ON "{table}" FOR EACH ROW EXECUTE FUNCTION {name}();'
            )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute(f'DROP TRIGGER IF EXISTS "{name}"')
            else:
                cursor.execute(f'DROP TRIGGER IF EXISTS "{name}" ON "{table}"')
                cursor.execute(f"DROP FUNCTION IF EXISTS {name}()")


def post(client: Client, key: str, path: str, body: dict):
    import json

    return client.post(
        f"/api/v1{path}", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )


@pytest.fixture
def server():
    """A client that answers a failure as the server would (a 500), instead of raising it in the test."""
    return Client(raise_request_exception=False)


def test_a_turn_whose_observations_fail_leaves_no_turn(author_api, book, server):
    session = DiscoverySessionFactory(book=book)
    body = {
        "role": "author",
        "content": "The keeper lies to everyone, herself first.",
        "observations": [{"key": "engine", "value": "self-deception", "provenance": "author-stated"}],
    }

    with inserts_into("discovery_observation"):
        response = post(server, author_api.key, f"/sessions/{session.pk}/turns", body)

    assert response.status_code == 500
    assert response.json()["code"] == "server_error"
    assert not Turn.objects.filter(session=session).exists()
    assert not Observation.objects.exists()
    # and the same write succeeds once the database accepts it again
    assert post(server, author_api.key, f"/sessions/{session.pk}/turns", body).status_code == 201
    assert Turn.objects.filter(session=session).count() == 1
    assert Observation.objects.count() == 1


def test_a_charter_whose_approval_fails_leaves_no_charter(book):
    with inserts_into("approvals_approval"), pytest.raises(DatabaseError):
        propose_charter(book)

    assert not StoryCharter.objects.filter(book=book).exists()
    assert not Approval.objects.filter(book=book).exists()


def test_a_verdict_whose_log_row_fails_leaves_the_approval_and_the_charter_as_they_were(author_api, book, server):
    charter = propose_charter(book)
    approval = charter.approval
    status_before = charter.status

    with inserts_into("approvals_decisionlogentry"):
        response = post(
            server,
            author_api.key,
            f"/approvals/{approval.pk}/verdict",
            {"verdict": "approve", "rationale": "This is the book I want to write."},
        )

    assert response.status_code == 500
    approval.refresh_from_db()
    charter.refresh_from_db()
    assert approval.status == "pending" and approval.verdict is None and approval.decided_by is None
    assert charter.status == status_before
    assert not DecisionLogEntry.objects.filter(book=book).exists()


def test_an_import_whose_chunks_fail_leaves_no_source(author, book):
    document = "# Tension\n\nGoals meet opposition.\n\n# Pace\n\nShort scenes run fast.\n"
    before = KnowledgeSource.objects.count()

    with inserts_into("library_knowledgechunk"), pytest.raises(DatabaseError):
        import_document(
            principal_for_user(author),
            title="Half-written craft notes",
            origin="test",
            license_note="CC BY 4.0",
            version="1",
            text=document,
        )

    assert KnowledgeSource.objects.count() == before
    assert not KnowledgeSource.objects.filter(title="Half-written craft notes").exists()
    assert not KnowledgeChunk.objects.filter(source__title="Half-written craft notes").exists()
