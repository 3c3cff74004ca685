"""The walking skeleton: migrations, the seed, database constraints, keys, the entry pages."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from discovery.models import KnowledgeBase
from library.models import KnowledgeChunk, KnowledgeSource
from library.seed import curated_entry_count, seed_curated_library
from novelgraph.core.models import ApiKey, hash_api_key

from .factories import (
    BookFactory,
    DiscoverySessionFactory,
    ScratchpadEntryFactory,
    StoryCharterFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def test_migrations_are_complete_and_applied():
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    tables = connection.introspection.table_names()
    for table in ["discovery_scratchpadentry", "approvals_decisionlogentry", "library_knowledgechunk"]:
        assert table in tables


def test_seed_creates_the_literary_base_and_the_curated_library():
    base = KnowledgeBase.objects.get(scope="literary", owner_id="global")
    assert base.name == "NovelGraph Literary Library"
    source = KnowledgeSource.objects.get(origin="novelgraph-curated", title="NovelGraph Curated Craft Library")
    assert source.version == "1.0.0"
    chunks = list(source.chunks.order_by("position"))
    assert [c.citation for c in chunks] == [
        "Scene causality",
        "Character agency",
        "Fair-play mystery",
        "Promise and payoff",
        "Reader expectations",
    ]
    assert all(c.applicability == ["general"] and c.topics for c in chunks)


def test_seed_is_idempotent():
    before = (KnowledgeBase.objects.count(), KnowledgeSource.objects.count(), KnowledgeChunk.objects.count())
    assert seed_curated_library(KnowledgeSource, KnowledgeChunk) is False
    call_command("seed_library", stdout=io.StringIO())
    after = (KnowledgeBase.objects.count(), KnowledgeSource.objects.count(), KnowledgeChunk.objects.count())
    assert before == after
    assert after[2] == curated_entry_count() >= 60  # the first five and the shelves (tests/test_library_curated.py)


def _raw_insert_scratchpad(session, **overrides):
    row = {"kind": "hypothesis", "confidence": 0.5, "sequence": 1, **overrides}
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO discovery_scratchpadentry (id, session_id, sequence, agent_role, kind, content, "
            "confidence, source_refs, created_at) VALUES (%s, %s, %s, 'luna', %s, 'x', %s, '[]', %s)",
            [
                "11111111111111111111111111111111"
                if connection.vendor == "sqlite"
                else "11111111-1111-1111-1111-111111111111",
                session.pk.hex if connection.vendor == "sqlite" else str(session.pk),
                row["sequence"],
                row["kind"],
                row["confidence"],
                "2026-01-01 00:00:00",
            ],
        )


def test_database_rejects_confidence_above_one():
    session = DiscoverySessionFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        _raw_insert_scratchpad(session, confidence=1.5)


def test_database_rejects_unknown_scratchpad_kind():
    session = DiscoverySessionFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        _raw_insert_scratchpad(session, kind="decision")


def test_database_accepts_a_valid_raw_entry():
    session = DiscoverySessionFactory()
    _raw_insert_scratchpad(session)
    assert session.scratchpad.count() == 1


def test_database_rejects_duplicate_turn_ordinal():
    turn = TurnFactory(ordinal=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        TurnFactory(session=turn.session, ordinal=1)


def test_database_rejects_duplicate_charter_version():
    charter = StoryCharterFactory(version=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        StoryCharterFactory(book=charter.book, version=1)


def test_database_refuses_to_update_or_delete_scratchpad_rows():
    entry = ScratchpadEntryFactory()
    with pytest.raises(Exception, match="append-only"), transaction.atomic():
        type(entry).objects.filter(pk=entry.pk).update(content="rewritten")
    with pytest.raises(Exception, match="append-only"), transaction.atomic():
        type(entry).objects.filter(pk=entry.pk).delete()
    entry.refresh_from_db()
    assert entry.content.startswith("The keeper")


def test_create_api_key_prints_the_key_once_and_stores_only_its_hash():
    user = UserFactory(username="keyholder")
    book = BookFactory(owner=user)
    out = io.StringIO()
    call_command("create_api_key", "--username", "keyholder", "--role", "luna", "--book", str(book.pk), stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]
    key = ApiKey.objects.get()
    assert raw.startswith("ng_") and len(raw) > 30
    assert key.key_hash == hash_api_key(raw)
    assert raw not in {key.key_hash, key.prefix, key.name}
    assert list(key.books.all()) == [book]


def test_api_key_authenticates_and_a_revoked_one_does_not(client):
    user = UserFactory(username="keyholder")
    out = io.StringIO()
    call_command("create_api_key", "--username", "keyholder", "--role", "sol", stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]
    response = client.get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 200
    assert response.json()["role"] == "sol"
    assert "charter:propose" in response.json()["capabilities"]
    ApiKey.objects.filter(owner=user).update(revoked_at="2026-01-01T00:00:00Z")
    response = client.get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


def test_entry_pages_are_served(client, author):
    assert client.get("/login/").status_code == 200
    assert client.get("/admin/login/").status_code == 200
    assert client.get("/api/v1/docs").status_code == 200
    assert client.get("/api/v1/openapi.json").status_code == 200
    assert client.get("/").status_code == 302
