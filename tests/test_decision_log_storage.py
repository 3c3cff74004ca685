"""The detail of a log entry is stored canonically; verification trusts the recipe, not the storage."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from approvals.selectors import decision_log_verify
from approvals.services import decision_log_append
from novelgraph.db import install_append_only, remove_append_only

pytestmark = pytest.mark.django_db


@pytest.fixture
def entry(book, author):
    return decision_log_append(
        book=book,
        decision="approve",
        subject_type="charter",
        subject_id="c-1",
        rationale="It holds.",
        ratified_by_user=author,
        detail={"b": 1, "a": "café", "nested": {"z": [1, 2], "y": None}},
    )


def _rewrite_detail(entry, text: str) -> None:
    remove_append_only(connection)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE approvals_decisionlogentry SET detail = %s WHERE id = %s",
                [text, entry.pk.hex if connection.vendor == "sqlite" else str(entry.pk)],
            )
    finally:
        install_append_only(connection)


@pytest.mark.skipif("connection.vendor != 'sqlite'")
def test_the_detail_is_stored_in_the_recipes_canonical_form(entry):
    with connection.cursor() as cursor:
        cursor.execute("SELECT detail FROM approvals_decisionlogentry WHERE id = %s", [entry.pk.hex])
        (stored,) = cursor.fetchone()
    assert stored == '{"a":"café","b":1,"nested":{"y":null,"z":[1,2]}}'


def test_an_equivalent_but_non_canonical_detail_still_verifies(entry, book):
    _rewrite_detail(entry, json.dumps({"nested": {"y": None, "z": [1, 2]}, "b": 1, "a": "café"}, indent=1))
    assert decision_log_verify(book).ok


def test_a_changed_detail_is_named(entry, book):
    _rewrite_detail(entry, json.dumps({"a": "café", "b": 2, "nested": {"y": None, "z": [1, 2]}}))
    result = decision_log_verify(book)
    assert not result.ok
    assert result.first_bad_sequence == entry.sequence
    assert "hash" in result.reason


def test_detail_comes_back_from_the_database_as_the_canonical_text_it_was_hashed_as(entry):
    """Issue 19: on PostgreSQL too (a text column, not jsonb, which reorders keys and respaces)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT detail FROM approvals_decisionlogentry WHERE id = %s",
            [entry.pk.hex if connection.vendor == "sqlite" else str(entry.pk)],
        )
        (stored,) = cursor.fetchone()
    assert stored == '{"a":"café","b":1,"nested":{"y":null,"z":[1,2]}}'
