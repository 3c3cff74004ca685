"""Tamper evidence end to end: a rewritten decision log is named by `manage.py check` at every start."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.checks import run_checks
from django.core.management import call_command

from approvals.checks import decision_log_check
from approvals.services import decision_log_append

from .log_tamper import guards_lifted, rewrite_entry


def _log(book, author, n: int = 3) -> None:
    for i in range(n):
        decision_log_append(
            book=book,
            decision="approve",
            subject_type="charter",
            subject_id=f"subject-{i}",
            rationale=f"Reason {i}",
            ratified_by_user=author,
        )


def _tamper(book, sequence: int, rationale: str) -> None:
    with guards_lifted() as cursor:
        rewrite_entry(cursor, book, sequence, rationale=rationale)


def test_an_intact_log_raises_no_warning(book, author):
    _log(book, author)
    assert decision_log_check() == []
    assert [m for m in run_checks() if m.id == "novelgraph.W001"] == []


def test_an_empty_database_is_checked_without_complaint(db):
    assert decision_log_check() == []


def test_a_rewritten_rationale_is_a_warning_naming_the_book_and_the_first_bad_entry(book, author, outsider, other_book):
    _log(book, author)
    _log(other_book, outsider, 2)
    _tamper(book, 2, "Reason rewritten after the fact")

    warnings = [m for m in run_checks() if m.id == "novelgraph.W001"]

    assert len(warnings) == 1, "only the tampered book is named"
    assert warnings[0].level == 30  # WARNING, not an error: the site still starts
    assert "The Tide Clock" in warnings[0].msg
    assert str(book.pk) in warnings[0].msg
    assert "entry #2" in warnings[0].msg
    assert "hash does not match" in warnings[0].msg


def test_manage_py_check_prints_the_warning_but_does_not_fail(book, author):
    _log(book, author)
    _tamper(book, 1, "Forged")
    out, err = StringIO(), StringIO()

    call_command("check", stdout=out, stderr=err)  # a warning does not raise SystemCheckError

    text = out.getvalue() + err.getvalue()
    assert "novelgraph.W001" in text
    assert "The Tide Clock" in text and "entry #1" in text


@pytest.mark.django_db(transaction=True)
def test_the_check_is_silent_when_the_tables_do_not_exist_yet(monkeypatch):
    # Before `migrate` the table is missing: the check must return nothing rather than fail.
    monkeypatch.setattr("approvals.checks.DECISION_LOG_TABLE", "no_such_table_yet")
    assert decision_log_check() == []
