"""A log entry is stored once, as the canonical text its hash covers (issue 19): the columns that show it
(``detail``...) are generated from that text and cannot be written, and verification hashes the text as it is."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.db import DatabaseError, connection, transaction

from approvals.chain import chain_fields, entry_text
from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_verify
from approvals.services import decision_log_append

from .log_tamper import TABLE, entry_fields, guards_lifted, rewrite_entry, write_entry

pytestmark = pytest.mark.django_db

DETAIL = {"b": 1, "a": "café", "nested": {"z": [1, 2], "y": None}}
CANONICAL_DETAIL = '{"a":"café","b":1,"nested":{"y":null,"z":[1,2]}}'
# What each database says when told a value for a generated column.
GENERATED_REFUSAL = r"cannot UPDATE generated column|can only be updated to DEFAULT"


@pytest.fixture
def entry(book, author):
    return decision_log_append(
        book=book,
        decision="approve",
        subject_type="charter",
        subject_id="c-1",
        rationale="It holds.",
        ratified_by_user=author,
        detail=DETAIL,
    )


def _stored(entry, column: str):
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {column} FROM {TABLE} WHERE id = %s",
            [entry.pk.hex if connection.vendor == "sqlite" else str(entry.pk)],
        )
        (value,) = cursor.fetchone()
    return value


@pytest.mark.skipif("connection.vendor != 'sqlite'")
def test_the_detail_is_stored_in_the_recipes_canonical_form(entry):
    assert _stored(entry, "detail") == CANONICAL_DETAIL


def test_the_entry_comes_back_from_the_database_as_the_canonical_text_it_was_hashed_as(entry, book):
    """Issue 19, on PostgreSQL too: the stored text is the recipe's bytes, and its SHA-256 is the stored hash.
    (The ``detail`` column is generated from it; on PostgreSQL it is jsonb, which respaces: not what is hashed.)"""
    stored = _stored(entry, "entry")
    fields = chain_fields(
        book_id=book.pk,
        sequence=1,
        ts=entry.ts,
        gate=None,
        decision="approve",
        subject_type="charter",
        subject_id="c-1",
        ratified_by=entry.ratified_by,
        reversibility_class=entry.reversibility_class,
        rationale="It holds.",
        detail=DETAIL,
        prev_hash=entry.prev_hash,
    )
    assert stored == entry_text(fields)
    assert f'"detail":{CANONICAL_DETAIL},' in stored
    assert hashlib.sha256(stored.encode()).hexdigest() == entry.hash
    assert json.loads(_stored(entry, "detail")) == DETAIL, "the generated column shows what the text says"


def test_the_database_refuses_to_write_the_detail_column(entry, book):
    """Replaces "an equivalent but non-canonical detail still verifies": there is no detail to store apart from
    the hashed text any more. Even with the append-only triggers dropped, the database refuses a value for the
    generated column, and the entry still shows and verifies what it was hashed as."""
    respaced = json.dumps({"nested": {"y": None, "z": [1, 2]}, "b": 1, "a": "café"}, indent=1)
    with guards_lifted() as cursor:
        for text in (respaced, json.dumps({**DETAIL, "b": 2})):
            with pytest.raises(DatabaseError, match=GENERATED_REFUSAL), transaction.atomic():
                cursor.execute(
                    f"UPDATE {TABLE} SET detail = %s WHERE id = %s",
                    [text, entry.pk.hex if connection.vendor == "sqlite" else str(entry.pk)],
                )

    assert DecisionLogEntry.objects.get(pk=entry.pk).detail == DETAIL
    assert decision_log_verify(book).ok


def test_an_equivalent_but_non_canonical_entry_text_does_not_verify(entry, book):
    """The text is hashed as it is, not re-encoded: the same fields, re-spaced, no longer match the hash."""
    with guards_lifted() as cursor:
        cursor.execute(
            f"UPDATE {TABLE} SET entry = %s WHERE id = %s",
            [
                json.dumps(entry_fields(book, 1), indent=1, ensure_ascii=False),
                entry.pk.hex if connection.vendor == "sqlite" else str(entry.pk),
            ],
        )

    assert DecisionLogEntry.objects.get(pk=entry.pk).detail == DETAIL, "it says the same"
    result = decision_log_verify(book)
    assert not result.ok
    assert result.first_bad_sequence == entry.sequence
    assert result.reason == "hash does not match the entry's content"


def test_a_changed_detail_is_named(entry, book):
    """The detail changed where it is stored, in the entry's text (hash and seal left): the detail column shows
    the change, and verification names the entry."""
    changed = {"a": "café", "b": 2, "nested": {"y": None, "z": [1, 2]}}
    with guards_lifted() as cursor:
        rewrite_entry(cursor, book, entry.sequence, detail=changed)

    assert DecisionLogEntry.objects.get(pk=entry.pk).detail == changed
    result = decision_log_verify(book)
    assert not result.ok
    assert result.first_bad_sequence == entry.sequence
    assert result.reason == "hash does not match the entry's content"


def test_a_changed_detail_rehashed_without_the_seal_key_is_named(entry, book):
    with guards_lifted() as cursor:
        write_entry(cursor, book, entry.sequence, {**entry_fields(book, 1), "detail": {"b": 2}}, rehash=True)

    result = decision_log_verify(book)
    assert not result.ok
    assert result.first_bad_sequence == entry.sequence
    assert result.reason.startswith("seal does not match")
