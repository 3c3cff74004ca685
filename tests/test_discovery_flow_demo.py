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
from novelgraph.services import api_key_create

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
    assert DiscoverySession.objects.filter(book=book).count() == 1
