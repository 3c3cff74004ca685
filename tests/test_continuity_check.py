"""Issue 28's done-when: a manuscript of six chapters plants one error of each offline kind, and one chapter is
clean. Through the API as the author and Luna would: the author uploads it and queues the check of each chapter,
Luna's in-app run files the findings, and the check finds every planted error with the right kind, chapter and
span, and nothing else. Then the author settles findings: fix the text, intentional (logged), change canon."""

from __future__ import annotations

import io

import pytest

from approvals.models import Approval, DecisionLogEntry
from discovery.models import KnowledgeClaim
from tests.agents_support import work_off_queue
from tests.canon_support import approved_claim, codex_entries

pytestmark = pytest.mark.django_db

MANUSCRIPT = """# Chapter 1: The Bell

Father Aubrey rang the bell at dawn on Monday. Mara Quell watched him from the quay of Greyhaven, where the tide \
clock stood.
"Nobody in Greyhaven sleeps past the bell," said Aubrey. "Not even the Bishop of Lyle."
Later the chaplain walked down to the church. The Church of the harbour town was cold.

# Chapter 2: The Pilot

Mara mended nets all morning. Everyone knew the pilot had drowned, but only she knew the rest: Mara killed the \
harbour pilot.
Aubrey blessed the boats before the storm.

# Chapter 3: The Lantern

Tova saw a lantern on the quay the night the pilot died. She told nobody.
Aubrey prayed for the drowned and then fell ill.

# Chapter 4: The Letter

Mara wrote a letter and gave it to the postman. She walked with Tova to the end of the pier, where Inspector Hale \
was waiting for the morning boat.

# Chapter 5: The Funeral

They buried the chaplain under the yew. Mara remembered how Aubrey had rung the bell.
At the wake, Aubrey poured the wine for the fishermen.

# Chapter 6: The Reveal

Tova spoke at last. Mara killed the harbour pilot, she said, and the town finally understood.
"""

PLANTED = {
    # chapter: (kind, the quoted span)
    2: (
        "reveal-too-early",
        "Everyone knew the pilot had drowned, but only she knew the rest: Mara killed the harbour pilot.",
    ),
    4: ("not-in-canon", "Hale"),
    5: ("out-of-time", "At the wake, Aubrey poured the wine for the fishermen."),
    6: ("evidence-not-shown", "Mara killed the harbour pilot, she said, and the town finally understood."),
}


def canon(author_api, sol_api, book) -> dict[str, str]:
    """The codex's entries and approved claims with their story records, as Sol proposes and the author approves."""
    codex_entries(
        author_api,
        book,
        (
            ("Father Aubrey", "person", ["Aubrey", "the chaplain"]),
            ("Mara Quell", "person", ["Mara"]),
            ("Greyhaven", "place", ["the harbour town"]),
            ("the tide clock", "object", ["the clock"]),
            ("Tova", "person", []),
        ),
    )
    claims = {}

    def claim(label, subject, predicate, value, **story):
        claims[label] = approved_claim(author_api, sol_api, book, subject, predicate, value, **story)

    claim("alive", "Father Aubrey", "is alive", "yes", true_from_chapter=1, true_until_chapter=3)
    claim("killer", "Mara", "killed", "the harbour pilot", known_by="nobody", first_shown_chapter=6, reveal="solution")
    claim("clock", "the tide clock", "was stopped at", "seven bells", decisive=True, evidence_for=claims["killer"])
    claim("lantern", "Tova", "saw", "a lantern on the quay", decisive=True, evidence_for=claims["killer"])
    return claims


def upload(api, book, name: str, text: str):
    handle = io.BytesIO(text.encode())
    handle.name = name
    done = api.client.post(
        f"/api/v1/books/{book.pk}/manuscript", {"file": handle}, HTTP_AUTHORIZATION=f"Bearer {api.key}"
    )
    assert done.status_code == 201, done.content
    return done


def check(api, book, number: int) -> dict:
    queued = api.post(f"/books/{book.pk}/chapters/{number}/check")
    assert queued.status_code == 202, queued.content
    assert queued.json()["role"] == "luna" and queued.json()["task"] == "continuity"
    work_off_queue()
    run = api.get(f"/agent-runs/{queued.json()['id']}").json()
    assert run["status"] == "done", run
    return run


@pytest.fixture
def checked(author_api, sol_api, book):
    assert author_api.post(f"/books/{book.pk}/discovery").status_code in (200, 201)
    claims = canon(author_api, sol_api, book)
    upload(author_api, book, "the-tide-clock.md", MANUSCRIPT)
    for number in range(1, 7):
        check(author_api, book, number)
    return claims


def test_the_check_finds_each_planted_error_and_nothing_else(author_api, luna_api, book, checked):
    claims = checked
    findings = author_api.get(f"/books/{book.pk}/continuity").json()["items"]
    got = {(f["chapter"], f["kind"], f["quote"]) for f in findings}
    assert got == {(chapter, kind, quote) for chapter, (kind, quote) in PLANTED.items()}
    assert len(findings) == len(PLANTED)
    for finding in findings:
        text = author_api.get(f"/books/{book.pk}/chapters/{finding['chapter']}/text").json()["text"]
        start, end = finding["span"]
        assert text[start:end] == finding["quote"]
        assert finding["status"] == "open" and finding["message"]
    by_kind = {f["kind"]: f for f in findings}
    assert by_kind["reveal-too-early"]["claim_ids"] == [claims["killer"]]
    assert by_kind["out-of-time"]["claim_ids"] == [claims["alive"]]
    assert by_kind["evidence-not-shown"]["claim_ids"] == [claims["killer"], claims["clock"]]
    assert "Add it as an entry" in by_kind["not-in-canon"]["message"]
    # The clean chapter (1) and chapter 3 give nothing; the list filters by chapter; Luna reads it too.
    assert author_api.get(f"/books/{book.pk}/continuity", chapter=1).json()["items"] == []
    fifth = luna_api.get(f"/books/{book.pk}/continuity", chapter=5).json()["items"]
    assert [f["kind"] for f in fifth] == ["out-of-time"]
    # Checking again files nothing new.
    check(author_api, book, 2)
    assert len(author_api.get(f"/books/{book.pk}/continuity").json()["items"]) == len(PLANTED)


def test_the_author_settles_findings_three_ways(author_api, sol_api, luna_api, book, checked):
    claims = checked
    url = f"/books/{book.pk}/continuity"
    findings = {f["kind"]: f for f in author_api.get(url).json()["items"]}
    # Only the author settles.
    early = findings["reveal-too-early"]
    assert (
        sol_api.post(f"{url}/{early['id']}/settle", {"resolution": "intentional", "rationale": "x"}).status_code == 403
    )
    # Fix the text: it stays open until a later revision no longer shows it.
    fixed = author_api.post(f"{url}/{early['id']}/settle", {"resolution": "fix-text"})
    assert fixed.status_code == 200 and fixed.json()["status"] == "open"
    author_api.put(f"/books/{book.pk}/chapters/2/text", {"text": "Mara mended nets all morning. She said nothing."})
    check(author_api, book, 2)
    assert [f["status"] for f in author_api.get(url, chapter=2).json()["items"]] == ["fixed"]
    # Intentional, with a rationale, which the decision log keeps.
    hale = findings["not-in-canon"]
    blank = author_api.post(f"{url}/{hale['id']}/settle", {"resolution": "intentional"})
    assert blank.status_code == 422
    kept = author_api.post(
        f"{url}/{hale['id']}/settle", {"resolution": "intentional", "rationale": "Hale is a passer-by."}
    )
    assert kept.status_code == 200 and kept.json()["status"] == "intentional"
    logged = DecisionLogEntry.objects.get(book=book, subject_type="continuity-finding")
    assert logged.rationale == "Hale is a passer-by."
    again = author_api.post(f"{url}/{hale['id']}/settle", {"resolution": "intentional", "rationale": "Again."})
    assert again.status_code == 409
    # Change canon: a revision proposal of the claim, through the normal approval flow.
    late = findings["out-of-time"]
    changed = author_api.post(f"{url}/{late['id']}/settle", {"resolution": "change-canon"})
    assert changed.status_code == 422 and changed.json()["field"] == "value"
    changed = author_api.post(f"{url}/{late['id']}/settle", {"resolution": "change-canon", "value": "until chapter 6"})
    assert changed.status_code == 200, changed.content
    proposal = KnowledgeClaim.objects.get(pk=changed.json()["proposal_id"])
    assert proposal.status == "proposed" and str(proposal.revises_id) == claims["alive"]
    # It waits in her Review as a pending approval, decided there like any proposal.
    waiting = Approval.objects.get(book=book, subject_id=str(proposal.pk))
    assert waiting.status == "pending" and waiting.kind == "canon-promotion"
    assert changed.json()["status"] == "canon-change"
    # An unknown resolution is a 422 naming it.
    assert (
        author_api.post(f"{url}/{late['id']}/settle", {"resolution": "ignore"}).json()["field"].endswith("resolution")
    )


def test_the_check_is_queued_only_by_the_author_or_sol_and_needs_text(author_api, sol_api, luna_api, book):
    assert author_api.post(f"/books/{book.pk}/discovery").status_code in (200, 201)
    author_api.post(f"/books/{book.pk}/chapters", {"title": "Empty"})
    assert author_api.post(f"/books/{book.pk}/chapters/1/check").status_code == 409
    assert author_api.post(f"/books/{book.pk}/chapters/2/check").status_code == 404
    author_api.put(f"/books/{book.pk}/chapters/1/text", {"text": "Quiet water."})
    assert luna_api.post(f"/books/{book.pk}/chapters/1/check").status_code == 403
    assert sol_api.post(f"/books/{book.pk}/chapters/1/check").status_code == 202
    refused = author_api.post(f"/books/{book.pk}/agent-runs", {"task": "continuity"})
    assert refused.status_code == 422 and refused.json()["field"] == "task"
