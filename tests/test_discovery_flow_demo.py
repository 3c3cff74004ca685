"""Issue 13, done when: the demo book goes from where `manage.py demo` leaves it (loop at G1.5, charter v1
pending) to hand-off at G3 through the one flow, through the real routes, and the discovery cannot then be
started again."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.loop.models import LoopMeta
from discovery.models import Book, Chapter, DiscoverySession, StoryCharter
from novelgraph.core.services import api_key_create

from .conftest import Api
from .loop_scenes import ask_gate, decide, review

pytestmark = pytest.mark.django_db


def _api(user, role: str) -> Api:
    return Api(Client(), api_key_create(owner=user, role=role)[1])


def test_the_demo_book_goes_from_where_the_demo_leaves_it_to_hand_off_through_one_flow():
    call_command("demo", stdout=StringIO())
    book = Book.objects.get(title="The Lighthouse Letter")
    author_api, sol_api = _api(book.owner, "author"), _api(book.owner, "sol")
    terra_api, luna_api = _api(book.owner, "terra"), _api(book.owner, "luna")
    base = f"/books/{book.pk}/loop"
    assert LoopMeta.objects.get(book=book).gate == "G1.5"

    # Starting discovery again resumes the demo's conversation.
    resumed = author_api.post(f"/books/{book.pk}/discovery")
    assert resumed.status_code == 200, resumed.content
    session = DiscoverySession.objects.get(pk=resumed.json()["session_id"])

    # G1.5 ratifies the thrust the author chooses among Terra's three.
    view = author_api.get(f"/books/{book.pk}/discovery").json()
    thrusts = {t["title"]: t["id"] for t in view["thrusts"]}
    card = ask_gate(sol_api, book, "G1.5", thrust_id=thrusts["The letter is a warning"])
    assert card.status_code == 201, card.content
    verdict = decide(author_api, book, card.json()["approval_id"], "approve", rationale="The warning drives it.")
    assert verdict.status_code == 200, verdict.content

    # The charter Sol proposed last in the demo, approved by the author; the conversation goes on.
    (pending,) = [c for c in view["charters"] if c["status"] == "proposed"]
    approved = author_api.post(
        f"/charters/{pending['id']}/resolve", {"approved": True, "rationale": "The promise I want to keep."}
    )
    assert approved.status_code == 200, approved.content
    said = author_api.post(f"/sessions/{session.pk}/turns", {"role": "author", "content": "The lamp log lies too."})
    assert said.status_code == 201, said.content

    # Convergence: the demo's open questions settled, its orphan wired in, the two lenses' reviews, a round.
    for q in author_api.get(f"{base}/questions").json()["items"]:
        if q["status"] in ("open", "routed", "surfaced"):
            settled = author_api.post(
                f"{base}/questions/{q['id']}/resolve",
                {"resolution": "Settled in the charter.", "cites": "trace:premise"},
            )
            assert settled.status_code == 200, settled.content
    for a, b in (("engine", "subplot-harbour"), ("subplot-harbour", "chapter-1")):
        assert sol_api.post(f"{base}/trace/edges", {"from_id": a, "to_id": b}).status_code == 201
    assert author_api.get(f"{base}/lint?strict=true").json()["ok"] is True
    review(terra_api, book, "canon-integrity")
    review(luna_api, book, "reader-trust")
    assert sol_api.post(f"{base}/rounds", {}).status_code == 200

    # G2 ratifies the approved charter version, naming its digest.
    card = ask_gate(sol_api, book, "G2")
    assert card.status_code == 201, card.content
    assert decide(author_api, book, card.json()["approval_id"], "approve").status_code == 200
    charter = StoryCharter.objects.get(pk=pending["id"])
    g2 = DecisionLogEntry.objects.get(book=book, gate="G2", subject_type="loop-option-card")
    assert g2.detail["effect"]["charter"]["version"] == charter.version

    # G3: Sol proposes the decision brief, the author ratifies it on the G3 card and the book is handed off.
    brief = {
        "slug": "decision-brief",
        "type": "decision-brief",
        "content": {
            "success_metrics": ["the forger is deducible from the handwriting by chapter 12"],
            "chapter_1": "Mara finds the letter in the lamp room.",
        },
    }
    assert sol_api.post(f"{base}/artifacts", brief).status_code == 201
    card = ask_gate(sol_api, book, "G3", artifacts=["decision-brief"])
    assert card.status_code == 201, card.content
    assert decide(author_api, book, card.json()["approval_id"], "approve").status_code == 200

    assert LoopMeta.objects.get(book=book).status == "handed-off"
    assert list(Chapter.objects.filter(book=book).values_list("number", "spec")) == [
        (1, "Mara finds the letter in the lamp room.")
    ]
    session.refresh_from_db()
    assert session.status == "closed"
    assert decision_log_verify(book).ok

    # After hand-off, starting the discovery again is refused and opens no new session.
    again = author_api.post(f"/books/{book.pk}/discovery")
    assert again.status_code == 409, again.content
    assert again.json()["code"] == "handed_off" and "handed off" in again.json()["detail"]
    browser = Client()
    browser.force_login(book.owner)
    page = browser.post(f"/books/{book.pk}/discovery/start/")
    assert page.status_code == 409 and "handed off" in page.content.decode()
    assert DiscoverySession.objects.filter(book=book).count() == 1


# --- A charter version proposed after G2 reopens convergence --------------------------------------------


@pytest.fixture
def at_g3(author_api, sol_api, terra_api, luna_api, book):
    """A book past G2: G2 ratified charter v1 (approved by the author), the loop at G3."""
    from .discovery_support import start
    from .loop_scenes import pass_gate, saturate

    start(author_api, book)
    for gate in ("G0", "G1", "G1.5"):
        pass_gate(sol_api, author_api, book, gate)
    saturate(sol_api, luna_api, terra_api, book)  # approves charter v1
    pass_gate(sol_api, author_api, book, "G2")
    assert LoopMeta.objects.get(book=book).gate == "G3"
    return book


def _propose_v2(sol_api, book) -> dict:
    from .discovery_support import charter_body

    made = sol_api.post(f"/books/{book.pk}/charters", charter_body(main_thrust="The keeper lied about the lamp."))
    assert made.status_code == 201, made.content
    return made.json()


def _reopen_card(author_api, book) -> dict:
    cards = [
        c
        for c in author_api.get(f"/books/{book.pk}/loop/cards").json()["items"]
        if c["status"] == "pending" and c["payload"].get("action") == "charter-reopen"
    ]
    assert len(cards) == 1, cards
    return cards[0]


def test_a_charter_proposed_after_g2_raises_a_card_with_its_impact_and_approving_it_moves_g2(
    author_api, sol_api, at_g3
):
    book = at_g3
    v1 = StoryCharter.objects.get(book=book, status="approved")
    v2 = _propose_v2(sol_api, book)
    card = _reopen_card(author_api, book)
    assert card["payload"]["charter"]["version"] == v2["version"] == v1.version + 1
    assert card["payload"]["ratified"]["version"] == v1.version
    assert card["trace_seed"] == "premise"
    # The cascade preview shows what the charter governs downstream of the trace root.
    shown = author_api.get(f"/approvals/{card['approval_id']}").json()
    assert [a["node_id"] for a in shown["impact"]["affected"]] == ["sq", "ch1"]
    assert LoopMeta.objects.get(book=book).status == "awaiting-human"
    browser = Client()
    browser.force_login(book.owner)
    for path in (f"/review/{card['approval_id']}/", f"/books/{book.pk}/loop/"):
        page = browser.get(path)
        assert page.status_code == 200 and "proposed after G2" in page.content.decode(), path
    # Convergence is reopened: G3 waits for the author.
    refused = ask_gate(sol_api, book, "G3")
    assert refused.status_code == 409 and refused.json()["code"] == "card_pending"
    # The card goes with the charter version: a verdict on the card alone is refused, nothing logged.
    before = DecisionLogEntry.objects.filter(book=book).count()
    alone = decide(author_api, book, card["approval_id"], "approve")
    assert alone.status_code == 409 and alone.json()["code"] == "decide_the_charter", alone.content
    assert DecisionLogEntry.objects.filter(book=book).count() == before

    approved = author_api.post(f"/charters/{v2['id']}/resolve", {"approved": True, "rationale": "The lie is better."})
    assert approved.status_code == 200, approved.content
    row = DecisionLogEntry.objects.filter(book=book, subject_type="charter").order_by("-sequence").first()
    from discovery.services.charters import charter_content_digest

    charter = StoryCharter.objects.get(pk=v2["id"])
    assert row.detail["g2_ratified"]["version"] == charter.version
    assert row.detail["g2_ratified"]["content_digest"] == charter_content_digest(charter.content)
    assert row.detail["g2_ratified"]["replaces"]["version"] == v1.version
    assert row.detail["reopen_cards"] == [card["id"]]
    cards = {c["id"]: c for c in author_api.get(f"/books/{book.pk}/loop/cards").json()["items"]}
    assert (cards[card["id"]]["status"], cards[card["id"]]["verdict"]) == ("decided", "approve")
    from discovery.loop.services.reopen import g2_ratification

    assert g2_ratification(book)["version"] == charter.version
    assert LoopMeta.objects.get(book=book).status != "awaiting-human"
    assert decision_log_verify(book).ok
    # Convergence closes again: G3 can be asked for.
    assert ask_gate(sol_api, book, "G3").json()["code"] == "gate_refused"  # no brief yet, but no card waits


def test_rejecting_a_charter_proposed_after_g2_keeps_the_ratified_version(author_api, sol_api, at_g3):
    book = at_g3
    v1 = StoryCharter.objects.get(book=book, status="approved")
    v2 = _propose_v2(sol_api, book)
    card = _reopen_card(author_api, book)
    rejected = author_api.post(f"/charters/{v2['id']}/resolve", {"approved": False, "rationale": "Keep v1."})
    assert rejected.status_code == 200, rejected.content
    row = DecisionLogEntry.objects.filter(book=book, subject_type="charter").order_by("-sequence").first()
    assert row.decision == "reject" and row.detail["g2_kept"]["version"] == v1.version
    assert "g2_ratified" not in row.detail
    from discovery.loop.services.reopen import g2_ratification

    assert g2_ratification(book)["id"] == str(v1.pk)
    v1.refresh_from_db()
    assert v1.status == "approved"
    cards = {c["id"]: c for c in author_api.get(f"/books/{book.pk}/loop/cards").json()["items"]}
    assert (cards[card["id"]]["status"], cards[card["id"]]["verdict"]) == ("decided", "reject")
    assert decision_log_verify(book).ok


def test_a_charter_proposed_before_g2_raises_no_card(author_api, sol_api, book):
    from .discovery_support import start

    start(author_api, book)
    _propose_v2(sol_api, book)
    assert [c for c in author_api.get(f"/books/{book.pk}/loop/cards").json()["items"] if c["status"] == "pending"] == []
