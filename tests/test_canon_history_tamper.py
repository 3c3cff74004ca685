"""Canon changed in the database behind the log's back (issue 24, family 3): verification replays the log's canon
history. Every subject the log ever decided must still exist, in the state the log's last decision on it left
(approved, retracted, revised, superseded, rejected), with the content its approval digested, story record
included. Each test builds the canon through the API, edits rows with raw SQL as someone holding the database
file would, and asserts that the verify route and ``manage.py verify_decision_log`` both report it, naming the
subject.
"""

from __future__ import annotations

import uuid
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from approvals.canon_record import CANON, canon_digest, canon_verify
from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_verify
from approvals.services import approval_request, decision_log_append
from discovery.models import KnowledgeClaim, StoryCharter
from discovery.services.knowledge import book_base, ensure_knowledge_bases

from .discovery_support import charter_body, start
from .factories import BookFactory, KnowledgeClaimFactory

pytestmark = pytest.mark.django_db(transaction=True)

RATIONALE = "Seen, weighed and agreed."


def _id(value) -> str:
    """A UUID as the database stores it (SQLite: 32 hex digits)."""
    value = uuid.UUID(str(value))
    return value.hex if connection.vendor == "sqlite" else str(value)


def _sql(statement: str, params: list) -> None:
    """Raw SQL on the subjects' tables, as someone holding the database file would (the log itself is not
    touched: its triggers stay)."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        assert cursor.rowcount >= 1


def _claim(sol_api, book, subject: str, **story) -> str:
    body = {
        "scope": "book",
        "scope_id": str(book.pk),
        "subject": subject,
        "predicate": "fears",
        "value": f"what {subject} fears",
        "provenance": "agent-proposed",
        **story,
    }
    response = sol_api.post("/claims", body)
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _approved_claim(sol_api, author_api, book, subject: str, **story) -> str:
    claim = _claim(sol_api, book, subject, **story)
    promoted = author_api.post(f"/claims/{claim}/promote", {"book_id": str(book.pk), "rationale": RATIONALE})
    assert promoted.status_code == 200, promoted.content
    return claim


def _approved_charter(sol_api, author_api, book, **overrides) -> str:
    charter = sol_api.post(f"/books/{book.pk}/charters", charter_body(**overrides))
    assert charter.status_code == 201, charter.content
    resolved = author_api.post(f"/charters/{charter.json()['id']}/resolve", {"approved": True, "rationale": RATIONALE})
    assert resolved.status_code == 200, resolved.content
    return charter.json()["id"]


@pytest.fixture
def canon(book, sol_api, author_api) -> dict:
    """A book whose log approved, superseded, retracted and rejected canon, all through the API."""
    start(author_api, book)
    story = {"known_by": "characters", "known_by_characters": ["Mara"], "first_shown_chapter": 4, "reveal": "twist"}
    ids = {"storied": _approved_claim(sol_api, author_api, book, "Ines", **story)}
    ids["old"] = _approved_claim(sol_api, author_api, book, "Tova")
    revised = author_api.post(
        f"/claims/{ids['old']}/supersede", {"book_id": str(book.pk), "value": "open water", "rationale": RATIONALE}
    )
    assert revised.status_code == 200, revised.content
    ids["new"] = revised.json()["id"]
    ids["retracted"] = _approved_claim(sol_api, author_api, book, "Oren")
    retracted = author_api.post(f"/claims/{ids['retracted']}/retract", {"book_id": str(book.pk), "rationale": "No."})
    assert retracted.status_code == 200, retracted.content
    ids["rejected"] = _claim(sol_api, book, "Pell")
    rejected = author_api.post(f"/claims/{ids['rejected']}/reject", {"book_id": str(book.pk), "rationale": "No."})
    assert rejected.status_code == 200, rejected.content
    ids["charter_v1"] = _approved_charter(sol_api, author_api, book)
    ids["charter"] = _approved_charter(sol_api, author_api, book, main_thrust="A keeper proves it was murder.")
    assert KnowledgeClaim.objects.get(pk=ids["old"]).status == "revised"
    assert KnowledgeClaim.objects.get(pk=ids["retracted"]).status == "retracted"
    assert StoryCharter.objects.get(pk=ids["charter_v1"]).status == "superseded"
    return ids


def _entry_of(book, subject_id, decision: str) -> int:
    return (
        DecisionLogEntry.objects.filter(book=book, subject_id=str(subject_id), decision=decision)
        .values_list("sequence", flat=True)
        .get()
    )


def _verified(author_api, book) -> dict:
    response = author_api.get(f"/books/{book.pk}/decision-log/verify")
    assert response.status_code == 200
    return response.json()


def _command(book) -> tuple[bool, str]:
    out = StringIO()
    try:
        call_command("verify_decision_log", "--book", str(book.pk), stdout=out)
    except CommandError as exc:
        return False, out.getvalue() + str(exc)
    return True, out.getvalue()


def _assert_broken(author_api, book, reason: str) -> None:
    result = _verified(author_api, book)
    assert result["ok"] is False, result
    assert result["reason"] == reason, result
    ok, text = _command(book)
    assert not ok and "BROKEN" in text and reason in text, text


def test_untampered_canon_with_retractions_revisions_story_records_and_superseded_charters_verifies(
    book, author_api, canon
):
    result = _verified(author_api, book)

    # Seven subjects the log decided, each checked against its last decision: two claims approved now, one
    # revised, one retracted, one rejected; two charters, one superseded.
    assert (result["ok"], result["reason"], result["canon_checked"]) == (True, None, 7), result
    assert _command(book)[0]
    # The same history read from the log itself (not collected by the chain's pass) says the same.
    assert canon_verify(book) == (7, None)
    # The claim approval records the canon recipe that covers the story record.
    record = DecisionLogEntry.objects.get(book=book, subject_id=canon["storied"], decision="approve").detail["canon"]
    assert record["recipe"] == 2


def test_a_retracted_claim_set_back_to_approved_is_seen(book, author_api, canon):
    claim = canon["retracted"]

    _sql("UPDATE discovery_knowledgeclaim SET status = 'approved' WHERE id = %s", [_id(claim)])

    entry = _entry_of(book, claim, "abandon")
    reason = f"claim {claim} is approved, but the log's last decision on it (entry #{entry}) left it retracted"
    _assert_broken(author_api, book, reason)


@pytest.mark.parametrize("successor", ["revised", "proposed", "approved"])
def test_a_superseded_claim_restored_over_its_successor_is_seen(book, author_api, canon, successor):
    old, new = canon["old"], canon["new"]

    _sql("UPDATE discovery_knowledgeclaim SET status = 'approved' WHERE id = %s", [_id(old)])
    _sql("UPDATE discovery_knowledgeclaim SET status = %s WHERE id = %s", [successor, _id(new)])

    entry = _entry_of(book, new, "approve")  # the successor's approval revised the old claim
    _assert_broken(
        author_api, book, f"claim {old} is approved, but the log's last decision on it (entry #{entry}) left it revised"
    )


def test_a_superseded_charter_restored_over_its_successor_is_seen(book, author_api, canon):
    old, new = canon["charter_v1"], canon["charter"]

    _sql("UPDATE discovery_storycharter SET status = 'approved' WHERE id = %s", [_id(old)])
    _sql("UPDATE discovery_storycharter SET status = 'superseded' WHERE id = %s", [_id(new)])

    entry = _entry_of(book, new, "approve")
    _assert_broken(
        author_api,
        book,
        f"charter {old} is approved, but the log's last decision on it (entry #{entry}) left it superseded",
    )


def test_a_rejected_claim_set_to_approved_is_seen(book, author_api, canon):
    claim = canon["rejected"]

    _sql("UPDATE discovery_knowledgeclaim SET status = 'approved' WHERE id = %s", [_id(claim)])

    entry = _entry_of(book, claim, "reject")
    reason = f"claim {claim} is approved, but the log's last decision on it (entry #{entry}) left it rejected"
    _assert_broken(author_api, book, reason)


@pytest.mark.parametrize(
    "column, value",
    [
        ("known_by", "reader"),  # who knows it
        ("known_by_characters", '["Mara", "Oren"]'),
        ("first_shown_chapter", 9),  # the chapter it is first shown
        ("reveal", "solution"),  # the reveal
        ("true_from_chapter", 2),
    ],
)
def test_an_approved_claims_rewritten_story_record_is_seen(book, author_api, canon, column, value):
    claim = canon["storied"]

    _sql(f"UPDATE discovery_knowledgeclaim SET {column} = %s WHERE id = %s", [value, _id(claim)])

    _assert_broken(author_api, book, f"claim {claim} differs from what its log entry approved")


def test_a_deleted_approved_claim_is_seen(book, author_api, canon):
    claim = canon["storied"]

    _sql("DELETE FROM discovery_knowledgeclaim WHERE id = %s", [_id(claim)])

    entry = _entry_of(book, claim, "approve")
    _assert_broken(
        author_api,
        book,
        f"claim {claim} is gone from the database, but the log's last decision on it (entry #{entry}) left it approved",
    )


def test_a_deleted_approved_charter_is_seen(book, author_api, canon):
    charter = canon["charter"]

    _sql("DELETE FROM discovery_storycharter WHERE id = %s", [_id(charter)])

    entry = _entry_of(book, charter, "approve")
    _assert_broken(
        author_api,
        book,
        f"charter {charter} is gone from the database, but the log's last decision on it (entry #{entry}) "
        "left it approved",
    )


def test_a_deleted_approved_charter_with_the_one_before_restored_is_seen(book, author_api, canon):
    """The old check looked only at what is approved now: with the newest charter gone and its predecessor
    approved again, one charter was approved, and the latest approved one no longer existed."""
    _sql("DELETE FROM discovery_storycharter WHERE id = %s", [_id(canon["charter"])])
    _sql("UPDATE discovery_storycharter SET status = 'approved' WHERE id = %s", [_id(canon["charter_v1"])])

    result = _verified(author_api, book)

    assert result["ok"] is False and canon["charter_v1"] in result["reason"], result
    assert not _command(book)[0]


# --- Claims shared by a series: decided through any book of the series, each log verifies on its own --------


def test_a_series_claim_approved_through_one_book_and_retracted_or_revised_through_another_verifies(
    author, book, sol_api, author_api
):
    sibling = BookFactory(owner=author, series=book.series, title="The Second Tide")
    for each in (book, sibling):
        ensure_knowledge_bases(each)  # both link the series' canon, as a started discovery does
    made = []
    for subject in ("Ines", "Tova"):
        response = sol_api.post(
            "/claims",
            {"scope": "series", "scope_id": str(book.series_id), "subject": subject, "predicate": "is",
             "value": "the pilot's daughter", "provenance": "agent-proposed"},
        )  # fmt: skip
        assert response.status_code == 201, response.content
        made.append(response.json()["id"])
        promoted = author_api.post(f"/claims/{made[-1]}/promote", {"book_id": str(book.pk), "rationale": RATIONALE})
        assert promoted.status_code == 200, promoted.content
    retract = author_api.post(f"/claims/{made[0]}/retract", {"book_id": str(sibling.pk), "rationale": "Not so."})
    revise = author_api.post(
        f"/claims/{made[1]}/supersede", {"book_id": str(sibling.pk), "value": "a foundling", "rationale": "Better."}
    )
    assert retract.status_code == 200 and revise.status_code == 200, (retract.content, revise.content)

    for each in (book, sibling):
        result = decision_log_verify(each)
        assert result.ok, (each.title, result)

    # And set back behind the sibling's log, the first book's log does not explain it either.
    _sql("UPDATE discovery_knowledgeclaim SET status = 'approved' WHERE id = %s", [_id(made[0])])
    for each in (book, sibling):
        result = decision_log_verify(each)
        assert not result.ok and made[0] in result.reason, (each.title, result)


# --- Entries written with the first canon recipe (no story record) still verify -----------------------------


def test_an_approval_written_with_the_first_canon_recipe_still_verifies(book, author):
    """Before issue 24 a claim's canon digest left the story record out, and the record named no recipe."""
    claim = KnowledgeClaimFactory(
        base=book_base(book), subject="Ines", predicate="knows", value="the tide", first_shown_chapter=3,
        known_by="nobody",
    )  # fmt: skip
    approval = approval_request(
        book=book, kind="canon-promotion", subject_type="claim", subject_id=claim.pk, summary="s",
        requested_by_role="sol",
    )  # fmt: skip
    _sql(
        "UPDATE discovery_knowledgeclaim SET status = 'approved', approval_id = %s WHERE id = %s",
        [_id(approval.pk), _id(claim.pk)],
    )
    _sql(
        "UPDATE approvals_approval SET status = 'decided', verdict = 'approve', rationale = %s, decided_by_id = %s "
        "WHERE id = %s",
        [RATIONALE, author.pk, _id(approval.pk)],
    )
    first_recipe = {
        key: value
        for key, value in next(iter(CANON["claim"].rows(None, [claim.pk])))[1].items()
        if key in ("base_id", "subject", "predicate", "value", "provenance", "evidence", "source_refs")
    }
    decision_log_append(
        book=book, decision="approve", subject_type="claim", subject_id=claim.pk, rationale=RATIONALE,
        ratified_by_user=author, approval=approval,
        detail={"claim": {"subject": "Ines"}, "canon": {"digest": canon_digest(first_recipe), "value": "the tide"}},
    )  # fmt: skip

    assert decision_log_verify(book).ok, decision_log_verify(book)

    _sql("UPDATE discovery_knowledgeclaim SET value = %s WHERE id = %s", ['"the moon"', _id(claim.pk)])
    result = decision_log_verify(book)
    assert not result.ok and result.reason == f"claim {claim.pk} differs from what its log entry approved"
