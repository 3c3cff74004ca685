"""The statement counter of tests/sqltrace.py sees what Django's query capture cannot, and counts each
statement once."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from library.search import resolve_mode, search

from .factories import KnowledgeChunkFactory
from .sqltrace import sql_trace

pytestmark = pytest.mark.django_db


def test_a_search_on_the_raw_connection_is_counted_where_django_sees_nothing():
    KnowledgeChunkFactory(content="The quillwort bellbuoy struck thirteen.")  # words no curated passage holds
    resolve_mode()  # the mode is checked once per database, not per search

    with sql_trace() as trace, CaptureQueriesContext(connection) as captured:
        result = search("quillwort bellbuoy")

    assert [r["content"] for r in result.results] == ["The quillwort bellbuoy struck thirteen."]
    assert len(captured) == 0
    assert len(trace) == 1, trace
    assert "library_knowledgechunk" in trace.statements[0]


def test_a_write_that_fires_the_search_index_triggers_is_one_statement():
    chunk = KnowledgeChunkFactory(content="first")

    with sql_trace() as trace, connection.cursor() as cursor:
        cursor.execute(
            "UPDATE library_knowledgechunk SET content = %s WHERE id = %s",
            ["second", chunk.pk.hex if connection.vendor == "sqlite" else chunk.pk],
        )

    assert len(trace) == 1, trace


def test_statements_issued_through_the_orm_are_counted_in_order_with_their_transaction():
    from django.db import transaction

    from library.models import KnowledgeSource

    with sql_trace() as trace, transaction.atomic():
        KnowledgeSource.objects.filter(pk=uuid.uuid4()).exists()
        KnowledgeSource.objects.filter(pk=uuid.uuid4()).update(title="x")

    kinds = [statement.split()[0].upper() for statement in trace]
    assert kinds == ["SAVEPOINT", "SELECT", "UPDATE", "RELEASE"], trace
