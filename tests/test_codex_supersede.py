"""Canon as a place: the author supersedes an approved claim from the codex (or the API) through a logged
decision with her rationale; the old claim stays in history as revised. Nobody else changes canon."""

from __future__ import annotations

import pytest

from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.models import KnowledgeClaim

pytestmark = pytest.mark.django_db


def approved_claim(sol_api, author_api, book) -> str:
    made = sol_api.post(
        "/claims",
        {
            "scope": "book",
            "scope_id": str(book.pk),
            "subject": "Tova",
            "predicate": "is the daughter of",
            "value": "the harbour pilot",
            "provenance": "agent-inferred",
            "true_from_chapter": 2,
        },
    )
    assert made.status_code == 201, made.content
    promoted = author_api.post(f"/claims/{made.json()['id']}/promote", {"book_id": str(book.pk), "rationale": "Yes."})
    assert promoted.status_code == 200, promoted.content
    return made.json()["id"]


def test_the_author_supersedes_a_claim_from_the_codex_with_a_logged_rationale(
    sol_api, author_api, author_browser, book
):
    old = approved_claim(sol_api, author_api, book)
    page = author_browser.get(f"/books/{book.pk}/codex/")
    assert b"Supersede with this value" in page.content
    url = f"/books/{book.pk}/codex/claims/{old}/supersede/"

    blank = author_browser.post(url, {"value": "the lighthouse keeper", "rationale": "  "})
    assert blank.status_code == 422 and b"rationale" in blank.content
    assert KnowledgeClaim.objects.get(pk=old).status == "approved", "nothing changed"

    done = author_browser.post(url, {"value": "the lighthouse keeper", "rationale": "The pilot raised her."})
    assert done.status_code == 302
    new = KnowledgeClaim.objects.get(revises_id=old)
    assert done["Location"].endswith(f"#claim-{new.pk}")
    assert (new.status, new.value, new.provenance, new.proposed_by) == (
        "approved",
        "the lighthouse keeper",
        "author-stated",
        "author",
    )
    assert new.true_from_chapter == 2, "the story record is kept"
    assert KnowledgeClaim.objects.get(pk=old).status == "revised"
    entry = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    assert entry.rationale == "The pilot raised her."
    assert decision_log_verify(book).ok
    codex = author_browser.get(f"/books/{book.pk}/codex/").content.decode()
    assert "the lighthouse keeper" in codex
    # Its history: the value it replaced and the decisions, both linked; its provenance.
    assert "replaces “the harbour pilot”" in codex and "author-stated" in codex
    assert f"/review/{new.approval_id}/" in codex
    assert f"/review/{KnowledgeClaim.objects.get(pk=old).approval_id}/" in codex

    again = author_browser.post(url, {"value": "a stranger", "rationale": "Again."})
    assert again.status_code == 409 and b"only approved canon" in again.content


def test_only_the_author_supersedes_canon_and_the_api_route_does_it_too(sol_api, author_api, editor_browser, book):
    old = approved_claim(sol_api, author_api, book)
    assert b"Supersede with this value" not in editor_browser.get(f"/books/{book.pk}/codex/").content
    refused = editor_browser.post(
        f"/books/{book.pk}/codex/claims/{old}/supersede/", {"value": "x", "rationale": "Mine."}
    )
    assert refused.status_code == 403
    body = {"book_id": str(book.pk), "value": "the keeper", "rationale": "Agents never decide."}
    assert sol_api.post(f"/claims/{old}/supersede", body).status_code == 403
    missing = author_api.post(f"/claims/{old}/supersede", {"book_id": str(book.pk), "value": "the keeper"})
    assert missing.status_code == 422 and missing.json()["field"] == "rationale"
    assert KnowledgeClaim.objects.get(pk=old).status == "approved"
    done = author_api.post(f"/claims/{old}/supersede", {**body, "rationale": "The keeper raised her."})
    assert done.status_code == 200, done.content
    assert (done.json()["status"], done.json()["value"]) == ("approved", "the keeper")
    assert KnowledgeClaim.objects.get(pk=old).status == "revised"


def test_the_author_retracts_a_claim_from_the_codex_only_through_a_logged_decision(
    sol_api, author_api, author_browser, editor_browser, book
):
    old = approved_claim(sol_api, author_api, book)
    url = f"/books/{book.pk}/codex/claims/{old}/retract/"
    assert b"Retract this claim" in author_browser.get(f"/books/{book.pk}/codex/").content
    assert b"Retract this claim" not in editor_browser.get(f"/books/{book.pk}/codex/").content
    assert editor_browser.post(url, {"rationale": "Mine."}).status_code == 403
    body = {"book_id": str(book.pk), "rationale": "An agent never decides."}
    assert sol_api.post(f"/claims/{old}/retract", body).status_code == 403
    blank = author_browser.post(url, {"rationale": " "})
    assert blank.status_code == 422 and b"rationale" in blank.content
    entries = DecisionLogEntry.objects.filter(book=book).count()
    assert KnowledgeClaim.objects.get(pk=old).status == "approved", "refused: nothing changed"

    done = author_browser.post(url, {"rationale": "Her father was never a pilot."})
    assert done.status_code == 302
    assert KnowledgeClaim.objects.get(pk=old).status == "retracted"
    entry = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    assert DecisionLogEntry.objects.filter(book=book).count() == entries + 1
    assert (entry.subject_type, entry.subject_id, entry.rationale) == ("claim", old, "Her father was never a pilot.")
    assert entry.ratified_by_user is not None and entry.ratified_by_user.pk == book.owner_id
    assert decision_log_verify(book).ok
    codex = author_browser.get(f"/books/{book.pk}/codex/").content.decode()
    canon_part, retracted = codex.split('data-testid="codex-retracted"')
    assert "the harbour pilot" not in canon_part, "no longer canon"
    assert "the harbour pilot" in retracted and f"/codex/claims/{old}/" in retracted, "listed as retracted"
    again = author_api.post(f"/claims/{old}/retract", {"book_id": str(book.pk), "rationale": "Again."})
    assert again.status_code == 409 and "only approved canon" in again.json()["detail"]


def test_the_api_retracts_approved_canon_for_the_author(sol_api, author_api, book):
    old = approved_claim(sol_api, author_api, book)
    missing = author_api.post(f"/claims/{old}/retract", {"book_id": str(book.pk)})
    assert missing.status_code == 422 and missing.json()["field"] == "rationale"
    done = author_api.post(f"/claims/{old}/retract", {"book_id": str(book.pk), "rationale": "Not true after all."})
    assert done.status_code == 200, done.content
    assert done.json()["status"] == "retracted"
