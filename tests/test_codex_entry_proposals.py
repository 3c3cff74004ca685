"""Issue 28: agents propose codex entries through the approval flow like any proposal. Sol's entry (the API with
his key, or his MCP tool) waits, proposed, with a pending approval the author decides in her inbox with a
rationale, logged in the hash-chained decision log; only an approved entry counts for the continuity check's
names. The author's own entries stay direct, and on the chapter page she turns a not-in-canon finding into an
entry in one click."""

from __future__ import annotations

import pytest
from django.urls import reverse

from approvals.models import Approval, DecisionLogEntry
from discovery.models import CodexEntry

from .agents_support import work_off_queue

pytestmark = pytest.mark.django_db

TEXT = "Mara waited on the quay. Inspector Hale came down from the town."


@pytest.fixture
def chapter(author_api, book):
    assert author_api.post(f"/books/{book.pk}/discovery").status_code in (200, 201)
    made = author_api.post(f"/books/{book.pk}/codex/entries", {"name": "Mara Quell", "aliases": ["Mara"]})
    assert made.status_code == 201 and made.json()["status"] == "approved"
    assert author_api.post(f"/books/{book.pk}/chapters", {"title": "The Quay"}).status_code == 201
    assert author_api.put(f"/books/{book.pk}/chapters/1/text", {"text": TEXT}).status_code == 201
    return 1


def check(api, book) -> list[dict]:
    queued = api.post(f"/books/{book.pk}/chapters/1/check")
    assert queued.status_code == 202, queued.content
    work_off_queue()
    return api.get(f"/books/{book.pk}/continuity", chapter=1).json()["items"]


def decide(api, approval_id, verdict: str, rationale: str):
    return api.post(f"/approvals/{approval_id}/verdict", {"verdict": verdict, "rationale": rationale})


def test_sols_entry_is_proposed_and_counts_only_once_the_author_approves_it(
    client, author, author_api, sol_api, book, chapter
):
    [finding] = check(author_api, book)
    assert (finding["kind"], finding["quote"]) == ("not-in-canon", "Hale")
    # Sol proposes the finding's name as an entry: proposed, with a pending approval in the author's inbox.
    made = sol_api.post(
        f"/books/{book.pk}/codex/entries", {"name": "Hale", "kind": "person", "aliases": ["the inspector"]}
    )
    assert made.status_code == 201, made.content
    assert (made.json()["status"], made.json()["created_by"]) == ("proposed", "sol")
    approval = Approval.objects.get(book=book, kind="codex-entry", subject_id=made.json()["id"])
    assert approval.status == "pending" and approval.requested_by_role == "sol"
    assert any(a["id"] == str(approval.pk) for a in author_api.get("/approvals", status="pending").json()["items"])
    # Proposed, it counts for nothing: the check still finds the name.
    assert author_api.post(f"/books/{book.pk}/chapters/1/check").status_code == 202
    work_off_queue()
    assert [f["status"] for f in author_api.get(f"/books/{book.pk}/continuity", chapter=1).json()["items"]] == ["open"]
    # Her inbox and the decision page show it in plain words.
    client.force_login(author)
    assert "A codex entry: Hale (the inspector)" in client.get(reverse("approvals:inbox")).content.decode()
    page = client.get(reverse("approvals:decision", args=[approval.pk])).content.decode()
    assert "the inspector" in page and "Proposed by" in page
    # Sol cannot decide it; the author needs a rationale; she approves it, and the log keeps her verdict.
    assert decide(sol_api, approval.pk, "approve", "Mine.").status_code == 403
    assert decide(author_api, approval.pk, "approve", "").status_code == 422
    done = decide(author_api, approval.pk, "approve", "Hale is the harbour's inspector.")
    assert done.status_code == 200, done.content
    assert CodexEntry.objects.get(pk=made.json()["id"]).status == "approved"
    logged = DecisionLogEntry.objects.get(book=book, subject_type="codex-entry")
    assert (logged.decision, logged.rationale) == ("approve", "Hale is the harbour's inspector.")
    assert author_api.get(f"/books/{book.pk}/decision-log/verify").json()["ok"] is True
    # Approved, its names count: the check closes the finding as fixed.
    assert [f["status"] for f in check(author_api, book)] == ["fixed"]
    # Deciding again is a 409.
    assert decide(author_api, approval.pk, "approve", "Again.").status_code == 409


def test_a_rejected_entry_stays_in_history_and_frees_its_name(author_api, sol_api, book, chapter):
    made = sol_api.post(f"/books/{book.pk}/codex/entries", {"name": "Hale", "kind": "person"}).json()
    # While proposed, the name is taken: a second proposal of it is a 422 naming the field.
    again = sol_api.post(f"/books/{book.pk}/codex/entries", {"name": "hale"})
    assert again.status_code == 422 and again.json()["field"] == "aliases"
    approval = Approval.objects.get(book=book, kind="codex-entry", subject_id=made["id"])
    assert decide(author_api, approval.pk, "reject", "A passer-by, not a person of the story.").status_code == 200
    assert CodexEntry.objects.get(pk=made["id"]).status == "rejected"
    assert DecisionLogEntry.objects.get(book=book, subject_type="codex-entry").decision == "reject"
    assert [f["status"] for f in check(author_api, book)] == ["open"]  # a rejected entry knows no name
    # The name is free again: the author's own entry goes straight into the codex.
    mine = author_api.post(f"/books/{book.pk}/codex/entries", {"name": "Hale", "kind": "person"})
    assert mine.status_code == 201 and mine.json()["status"] == "approved"
    assert {e["status"] for e in author_api.get(f"/books/{book.pk}/codex/entries").json()["items"]} == {
        "approved",
        "rejected",
    }


def test_only_sol_proposes_entries_and_an_editor_adds_none(luna_api, terra_api, editor_api, book, chapter):
    for api in (luna_api, terra_api):
        refused = api.post(f"/books/{book.pk}/codex/entries", {"name": "Hale"})
        assert refused.status_code == 403 and "canon:propose" in refused.json()["detail"]
    assert editor_api.post(f"/books/{book.pk}/codex/entries", {"name": "Hale"}).status_code == 403
    blank = luna_api.post(f"/books/{book.pk}/codex/entries", {"name": ""})
    assert blank.status_code == 422
    assert list(CodexEntry.objects.filter(book=book).values_list("name", flat=True)) == ["Mara Quell"]


def test_the_author_turns_a_not_in_canon_finding_into_her_entry_in_one_click(client, author, author_api, book, chapter):
    [finding] = check(author_api, book)
    client.force_login(author)
    page = client.get(reverse("discovery:chapter", args=[book.pk, 1]))
    assert "Add “Hale” to the codex" in page.content.decode()
    url = reverse("discovery:finding-entry", args=[book.pk, 1, finding["id"]])
    assert client.post(url).status_code == 302
    entry = CodexEntry.objects.get(book=book, name="Hale")
    assert (entry.status, entry.created_by) == ("approved", "author")
    assert not Approval.objects.filter(book=book, kind="codex-entry").exists()  # hers: no approval to wait for
    # A second click says why, inline, and changes nothing.
    again = client.post(url)
    assert again.status_code == 422 and "already names" in again.content.decode()
    assert CodexEntry.objects.filter(book=book).count() == 2
    assert [f["status"] for f in check(author_api, book)] == ["fixed"]
