"""Issue 28, reopening discovery: when the draft changes direction, the author reopens her handed-off discovery at a
gate. She sees what it touches first; the reopen is her logged decision; nothing is deleted; the agents work again;
the next hand-off goes through G3 and updates the chapters from the new brief, their text kept."""

from __future__ import annotations

import html as html_lib

import pytest

from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.loop.models import BlackboardArtifact, LoopMeta, OptionCard
from discovery.models import Chapter, ChapterRevision, DiscoverySession

from .agents_support import start_run, work_off_queue
from .dbstate import rows_written
from .loop_scenes import (
    ask_gate,
    at_g3,
    decide,
    started_book,  # noqa: F401 (the book, its discovery started)
)
from .test_plain_words import internal_words

pytestmark = pytest.mark.django_db

BRIEF = {
    "charter": {"main_thrust": "A keeper learns the drowning was no accident"},
    "success_metrics": ["the culprit is deducible from on-page clues by chapter 2"],
    "chapters": [
        {"number": 1, "title": "The Bell", "spec": "Mara hears the bell at dawn."},
        {"number": 2, "title": "The Pilot", "spec": "The pilot is found drowned."},
    ],
}
TEXT = {1: "Mara rang the bell at dawn.", 2: "The pilot lay on the quay, drowned."}


def reopen_url(book) -> str:
    return f"/books/{book.pk}/reopen"


def hand_off(book, sol_api, author_api, luna_api, terra_api) -> None:
    """The quickest way to a handed-off book (the loop tests' scene), with text in both planned chapters."""
    at_g3(book, sol_api, author_api, luna_api, terra_api, brief=BRIEF)
    r = ask_gate(sol_api, book, "G3", summary="hand off to drafting")
    assert r.status_code == 200 and r.json()["outcome"] == "handed-off", r.json()
    for number, text in TEXT.items():
        assert author_api.put(f"/books/{book.pk}/chapters/{number}/text", {"text": text}).status_code == 201


def test_the_preview_lists_what_a_reopen_touches_and_changes_nothing(
    book, sol_api, author_api, luna_api, terra_api, editor_api
):
    hand_off(book, sol_api, author_api, luna_api, terra_api)
    assert editor_api.get(f"/books/{book.pk}").status_code == 200  # her key's first use is recorded before we count
    written = rows_written()
    r = author_api.get(reopen_url(book), gate="G2")
    assert r.status_code == 200, r.json()
    impact = r.json()
    assert [g["gate"] for g in impact["gates"]] == ["G2", "G3"]
    g3_row = DecisionLogEntry.objects.filter(book=book, gate="G3").order_by("-sequence").first()
    assert impact["gates"][1]["passed_by"]["sequence"] == g3_row.sequence
    assert impact["gates"][0]["passed_by"]["ratified_by"].startswith("author:")
    brief = next(a for a in impact["artifacts"] if a["slug"] == "decision-brief")
    assert "set aside" in brief["effect"]
    assert impact["charter"]["version"] >= 1 and impact["thrust"] is None  # G1.5 is not reopened
    assert [(c["number"], c["title"], c["revisions"]) for c in impact["chapters"]] == [
        (1, "The Bell", 1),
        (2, "The Pilot", 1),
    ]
    assert impact["chapters"][0]["words"] == 6
    # From G0 the premise's downstream is previewed: the trace drawn from it (premise -> story question -> chapter).
    from_g0 = author_api.get(reopen_url(book), gate="G0").json()
    assert from_g0["downstream"]["seeds"] == ["premise"]
    assert {"sq", "ch1"} <= {a["node_id"] for a in from_g0["downstream"]["affected"]}
    assert from_g0["thrust"] is not None and from_g0["gates"][0]["gate"] == "G0"
    # Without confirming, the reopen is a 409 carrying the same impact; only the author may look or reopen.
    r = author_api.post(reopen_url(book), {"gate": "G2", "rationale": "The draft turned into a romance."})
    assert r.status_code == 409 and r.json()["code"] == "reopens_discovery"
    assert r.json()["impact"] == impact
    for api in (editor_api, sol_api, terra_api, luna_api):
        assert api.get(reopen_url(book), gate="G2").status_code == 403
        body = {"gate": "G2", "rationale": "Mine.", "confirm": True}
        assert api.post(reopen_url(book), body).status_code == 403
    assert rows_written() == written
    assert LoopMeta.objects.get(book=book).status == "handed-off"


def test_reopened_at_g3_the_agents_draft_a_new_brief_and_the_second_hand_off_keeps_the_text(
    book, sol_api, author_api, luna_api, terra_api, author_browser
):
    hand_off(book, sol_api, author_api, luna_api, terra_api)
    first_brief = BlackboardArtifact.objects.get(book=book, slug="decision-brief")
    entries_before = list(DecisionLogEntry.objects.filter(book=book).values_list("sequence", "hash"))
    r = author_api.post(reopen_url(book), {"gate": "G3", "rationale": "Chapter 2 changed the plan.", "confirm": True})
    assert r.status_code == 200, r.json()
    assert r.json()["gate"] == "G3" and r.json()["status"] in ("working", "converged")  # saturation still holds
    # Her decision is logged; nothing before it changed, and the handed-off brief is kept, readable.
    row = DecisionLogEntry.objects.get(book=book, sequence=r.json()["decision_sequence"])
    assert (row.decision, row.gate, row.subject_type) == ("redirect", "G3", "discovery-reopen")
    assert row.ratified_by == f"author:{book.owner.get_username()}" and row.rationale == "Chapter 2 changed the plan."
    assert row.detail["brief"]["kept_as"] == "earlier-brief-1"
    assert (
        list(DecisionLogEntry.objects.filter(book=book, sequence__lt=row.sequence).values_list("sequence", "hash"))
        == entries_before
    )
    kept = BlackboardArtifact.objects.get(book=book, slug="earlier-brief-1")
    assert (kept.content, kept.version, kept.status) == (first_brief.content, first_brief.version, "stale")
    assert BlackboardArtifact.objects.get(book=book, slug="decision-brief").status == "stale"
    assert DiscoverySession.objects.filter(book=book).latest("created_at").status == "active"
    assert decision_log_verify(book).ok
    # The loop listing and the decision log show it.
    log = author_api.get(f"/books/{book.pk}/decision-log").json()
    assert any(e["subject_type"] == "discovery-reopen" and e["gate"] == "G3" for e in log["items"])
    log_page = _text(author_browser.get(f"/review/books/{book.pk}/log/"))
    assert "Discovery reopened at G3 after the hand-off" in log_page and "Chapter 2 changed the plan." in log_page

    # The agents work again in-app: Terra drafts the new brief, Sol puts it on the G3 card.
    start_run(author_api, book, "brief")
    work_off_queue()
    brief = BlackboardArtifact.objects.get(book=book, slug="decision-brief")
    assert brief.status == "proposed" and brief.version == first_brief.version + 2
    start_run(author_api, book, "next-question")
    work_off_queue()
    card = OptionCard.objects.get(book=book, gate="G3", status="pending")
    assert card.artifacts == ["decision-brief"]
    d = decide(author_api, book, card.approval_id, "approve", rationale="The new brief carries the draft.")
    assert d.status_code == 200, d.json()
    assert LoopMeta.objects.get(book=book).status == "handed-off"
    # The chapters follow the new brief's plan; every text revision survives.
    chapter_1 = Chapter.objects.get(book=book, number=1)
    assert chapter_1.title == "Chapter 1" and chapter_1.spec == brief.content["chapter_1"]
    assert Chapter.objects.get(book=book, number=2).title == "The Pilot"  # not in the new plan: kept as it was
    for number, text in TEXT.items():
        got = author_api.get(f"/books/{book.pk}/chapters/{number}/text").json()
        assert got["text"] == text, got
    assert ChapterRevision.objects.filter(chapter__book=book).count() == 2
    handoff = DecisionLogEntry.objects.filter(book=book, gate="G3").order_by("-sequence").first()
    assert handoff.detail["effect"]["handoff"]["chapters_replanned"][0]["title_before"] == "The Bell"
    assert decision_log_verify(book).ok


def test_a_reopen_is_refused_before_hand_off_at_no_gate_and_without_a_rationale(book, author_api):
    r = author_api.post(reopen_url(book), {"gate": "G2", "rationale": "Early.", "confirm": True})
    assert r.status_code == 409 and r.json()["code"] == "not_handed_off"
    assert author_api.get(reopen_url(book), gate="G2").status_code == 409
    r = author_api.post(reopen_url(book), {"gate": "G4", "rationale": "No such gate.", "confirm": True})
    assert r.status_code == 422 and r.json()["field"] == "gate", r.json()
    r = author_api.get(reopen_url(book), gate="G4")
    assert r.status_code == 422 and r.json()["field"] == "gate", r.json()
    for rationale in ("", "   "):
        r = author_api.post(reopen_url(book), {"gate": "G2", "rationale": rationale, "confirm": True})
        assert r.status_code == 422 and r.json()["field"] == "rationale", r.json()
    r = author_api.post(reopen_url(book), {"gate": "G2", "confirm": True})
    assert r.status_code == 422 and r.json()["field"] == "rationale", r.json()
    assert not DecisionLogEntry.objects.filter(book=book, subject_type="discovery-reopen").exists()


def _text(response) -> str:
    return html_lib.unescape(response.content.decode())


def test_the_author_reopens_from_the_book_page_and_the_discovery_buttons_come_back(
    book, sol_api, author_api, luna_api, terra_api, author_browser, editor_browser
):
    hand_off(book, sol_api, author_api, luna_api, terra_api)
    page = _text(author_browser.get(f"/books/{book.pk}/"))
    assert "Reopen discovery" in page and "Ask Sol for the next question" not in page
    assert "Reopen discovery" not in _text(editor_browser.get(f"/books/{book.pk}/"))
    assert "Reopen discovery" in _text(author_browser.get(f"/books/{book.pk}/chapters/"))
    preview = author_browser.get(f"/books/{book.pk}/reopen/", {"gate": "G2"})
    assert preview.status_code == 200
    shown = _text(preview)
    assert internal_words(preview.content.decode()) == []
    assert "What reopening at G2 touches" in shown and "1. The Bell" in shown and "Reopen discovery at G2" in shown
    assert editor_browser.get(f"/books/{book.pk}/reopen/", {"gate": "G2"}).status_code == 403
    # No rationale: the form says so inline, and nothing changes.
    refused = author_browser.post(f"/books/{book.pk}/reopen/", {"gate": "G2", "rationale": " "})
    assert refused.status_code == 422 and 'id="reopen-error"' in refused.content.decode()
    assert LoopMeta.objects.get(book=book).status == "handed-off"
    done = author_browser.post(f"/books/{book.pk}/reopen/", {"gate": "G2", "rationale": "A new charter."})
    assert done.status_code == 302
    meta = LoopMeta.objects.get(book=book)
    assert (meta.gate, meta.status) != ("G2", "handed-off") and meta.gate == "G2"
    page = _text(author_browser.get(f"/books/{book.pk}/"))
    assert "Ask Sol for the next question" in page and "Current question" in page
    assert "Handed off to drafting: no more questions." not in page
    assert "earlier-brief-1" in _text(author_browser.get(f"/books/{book.pk}/loop/"))  # the handed-off brief, kept


@pytest.mark.agents_act
def test_reopened_at_g2_sol_picks_up_on_his_own_and_the_book_is_handed_off_again_through_g3(
    book, sol_api, author_api, luna_api, terra_api
):
    hand_off(book, sol_api, author_api, luna_api, terra_api)
    r = author_api.post(
        reopen_url(book), {"gate": "G2", "rationale": "The charter needs a new ending.", "confirm": True}
    )
    assert r.status_code == 200, r.json()
    # Her decision is an act: Sol takes the next step at G2 (Terra drafts a new brief), then raises G2.
    work_off_queue()
    card = OptionCard.objects.get(book=book, status="pending")
    assert card.gate == "G2", card.summary
    assert BlackboardArtifact.objects.get(book=book, slug="decision-brief").status == "proposed"
    assert decide(author_api, book, card.approval_id, "approve", rationale="Still this charter.").status_code == 200
    work_off_queue()
    card = OptionCard.objects.get(book=book, status="pending")
    assert (card.gate, card.artifacts) == ("G3", ["decision-brief"])
    assert decide(author_api, book, card.approval_id, "approve", rationale="Hand it off again.").status_code == 200
    assert LoopMeta.objects.get(book=book).status == "handed-off"
    # The log reads in order: the first hand-off, her reopen at G2, G2 passed again, the second hand-off.
    rows = list(
        DecisionLogEntry.objects.filter(book=book).order_by("sequence").values_list("gate", "decision", "subject_type")
    )
    steps = [("G3", "approve", "loop-option-card"), ("G2", "redirect", "discovery-reopen"),
             ("G2", "approve", "loop-option-card"), ("G3", "approve", "loop-option-card")]  # fmt: skip
    found = iter(rows)
    assert all(step in found for step in steps), rows
    assert decision_log_verify(book).ok


@pytest.mark.agents_act
def test_reopened_at_g3_terra_drafts_the_new_brief_without_being_asked(book, sol_api, author_api, luna_api, terra_api):
    hand_off(book, sol_api, author_api, luna_api, terra_api)
    r = author_api.post(reopen_url(book), {"gate": "G3", "rationale": "The ending moved.", "confirm": True})
    assert r.status_code == 200, r.json()
    # Her reopen is an act: Sol hands Terra the brief (the handed-off one was set aside), then raises G3 with it.
    work_off_queue()
    assert BlackboardArtifact.objects.get(book=book, slug="decision-brief").status == "proposed"
    card = OptionCard.objects.get(book=book, status="pending")
    assert (card.gate, card.artifacts) == ("G3", ["decision-brief"])


@pytest.mark.agents_act
def test_reopened_at_g15_terra_drafts_new_thrusts_and_sol_raises_g15(book, sol_api, author_api, luna_api, terra_api):
    hand_off(book, sol_api, author_api, luna_api, terra_api)
    body = {"gate": "G1.5", "rationale": "The draft found a new spine.", "confirm": True}
    r = author_api.post(reopen_url(book), body)
    assert r.status_code == 200, r.json()
    # Only the chosen thrust is left: Sol hands Terra new candidates and raises G1.5 over them, unasked.
    work_off_queue()
    card = OptionCard.objects.get(book=book, status="pending")
    assert card.gate == "G1.5", card.summary
