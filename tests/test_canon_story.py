"""Canon that knows time and visibility (issue 18): story records on claims, reveal checks,
dossiers as of a chapter, contradictions that name both sides. Through the API."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from approvals.models import Approval, DecisionLogEntry
from discovery.agents.models import AgentRun
from discovery.models import Book, KnowledgeClaim, ScratchpadEntry
from novelgraph.core.services import api_key_create

from .agents_support import start_run, work_off_queue
from .conftest import Api
from .discovery_support import start
from .factories import ResearchItemFactory
from .mcp_support import agent_keys, call, outcome

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(author_api, book):
    return start(author_api, book)


def body(book, subject="Mara", predicate="fears", value="deep water", **story) -> dict:
    return {
        "scope": "book",
        "scope_id": str(book.pk),
        "subject": subject,
        "predicate": predicate,
        "value": value,
        "provenance": "agent-proposed",
        **story,
    }


def propose(api, payload) -> dict:
    response = api.post("/claims", payload)
    assert response.status_code == 201, response.content
    return response.json()


def canon(author_api, book, payload) -> dict:
    claim = propose(author_api, payload)
    promoted = author_api.post(f"/claims/{claim['id']}/promote", {"book_id": str(book.pk), "rationale": "Canon."})
    assert promoted.status_code == 200, promoted.content
    return claim


def mystery(author_api, book, *, clue_chapter: int) -> tuple[dict, dict]:
    """A solution revealed in chapter 7 and its decisive handwriting clue, first shown in ``clue_chapter``."""
    reveal = canon(
        author_api,
        book,
        body(
            book,
            "Ines",
            "forged",
            "the letter",
            true_from_chapter=1,
            known_by="nobody",
            first_shown_chapter=7,
            reveal="solution",
        ),
    )
    clue = canon(
        author_api,
        book,
        body(
            book,
            "the letter",
            "is written in",
            "a left-handed slant",
            true_from_chapter=1,
            first_shown_chapter=clue_chapter,
            decisive=True,
            evidence_for=reveal["id"],
        ),
    )
    return reveal, clue


# --- Story records ------------------------------------------------------------------


def test_a_claim_carries_its_story_record(sol_api, book, session):
    claim = propose(
        sol_api,
        body(
            book,
            true_from_chapter=2,
            true_until_chapter=5,
            known_by="characters",
            known_by_characters=["Ines"],
            first_shown_chapter=4,
        ),
    )
    assert (claim["true_from_chapter"], claim["true_until_chapter"], claim["first_shown_chapter"]) == (2, 5, 4)
    assert claim["known_by"] == "characters" and claim["known_by_characters"] == ["Ines"]
    assert (claim["decisive"], claim["reveal"], claim["evidence_for_id"]) == (False, "none", None)


@pytest.mark.parametrize(
    ("story", "field"),
    [
        ({"true_from_chapter": 5, "true_until_chapter": 3}, "true_until_chapter"),
        ({"true_from_chapter": 0}, "true_from_chapter"),
        ({"first_shown_chapter": -1}, "first_shown_chapter"),
        ({"true_until_chapter": 0}, "true_until_chapter"),
        ({"known_by": "characters"}, "known_by_characters"),
        ({"known_by": "reader", "known_by_characters": ["Ines"]}, "known_by_characters"),
        ({"known_by": "everyone"}, "known_by"),
        ({"reveal": "solution"}, "reveal"),
        ({"reveal": "cliffhanger", "first_shown_chapter": 3}, "reveal"),
        ({"decisive": "yes"}, "decisive"),
        ({"evidence_for": "00000000-0000-0000-0000-000000000001"}, "evidence_for"),
    ],
)
def test_a_bad_story_record_is_a_422_naming_the_field(sol_api, book, session, story, field):
    response = sol_api.post("/claims", body(book, **story))
    assert response.status_code == 422, response.content
    assert response.json()["field"] == field, response.json()
    assert not KnowledgeClaim.objects.exists()


def test_evidence_names_a_reveal_of_this_book(author_api, sol_api, book, session):
    plain = canon(author_api, book, body(book))
    missing = sol_api.post(
        "/claims", body(book, "x", "y", "z", decisive=True, evidence_for="00000000-0000-0000-0000-000000000001")
    )
    assert missing.status_code == 404 and missing.json()["field"] == "evidence_for"
    not_a_reveal = sol_api.post("/claims", body(book, "x", "y", "z", decisive=True, evidence_for=plain["id"]))
    assert not_a_reveal.status_code == 422 and not_a_reveal.json()["field"] == "evidence_for"


def test_changing_the_story_record_is_a_new_proposal_and_the_stale_approval_lapses(author_api, sol_api, book, session):
    claim = propose(sol_api, body(book, first_shown_chapter=3))
    requested = sol_api.post(f"/claims/{claim['id']}/request-approval", {"book_id": str(book.pk), "note": ""})
    assert requested.status_code == 201
    changed = sol_api.post(f"/claims/{claim['id']}/story", {"book_id": str(book.pk), "first_shown_chapter": 9})
    assert changed.status_code == 200 and changed.json()["first_shown_chapter"] == 9
    bad = sol_api.post(
        f"/claims/{claim['id']}/story", {"book_id": str(book.pk), "true_from_chapter": 4, "true_until_chapter": 2}
    )
    assert bad.status_code == 422 and bad.json()["field"] == "true_until_chapter"
    decided = author_api.post(f"/claims/{claim['id']}/promote", {"book_id": str(book.pk), "rationale": "Yes."})
    assert decided.status_code == 409, decided.content
    assert Approval.objects.get(pk=requested.json()["approval_id"]).status == "superseded"
    assert KnowledgeClaim.objects.get(pk=claim["id"]).status == "proposed"
    # A fresh decision approves the claim as it now stands.
    again = author_api.post(f"/claims/{claim['id']}/promote", {"book_id": str(book.pk), "rationale": "Yes."})
    assert again.status_code == 200, again.content
    # Approved canon changes only through a new claim that revises it.
    late = sol_api.post(f"/claims/{claim['id']}/story", {"book_id": str(book.pk), "first_shown_chapter": 2})
    assert late.status_code == 409 and late.json()["code"] == "not_pending"


def test_terra_and_luna_do_not_change_story_records(terra_api, luna_api, sol_api, book, session):
    claim = propose(sol_api, body(book))
    for api, who in ((terra_api, "terra"), (luna_api, "luna")):
        response = api.post(f"/claims/{claim['id']}/story", {"book_id": str(book.pk), "first_shown_chapter": 2})
        assert response.status_code == 403 and f"{who} lacks canon:propose" in response.json()["detail"]


def test_a_later_claim_supersedes_from_its_chapter(author_api, book, session):
    first = canon(author_api, book, body(book, "Mara", "lives in", "the lighthouse", true_from_chapter=1))
    second = canon(author_api, book, body(book, "Mara", "lives in", "the harbour inn", true_from_chapter=6))
    claims = {c["id"]: c for c in author_api.get(f"/books/{book.pk}/codex").json()["claims"]}
    assert claims[first["id"]]["true_until_effective"] == 5 and claims[second["id"]]["true_until_effective"] is None
    as_of_3 = [c["value"] for c in author_api.get(f"/books/{book.pk}/codex", as_of_chapter=3).json()["claims"]]
    as_of_8 = [c["value"] for c in author_api.get(f"/books/{book.pk}/codex", as_of_chapter=8).json()["claims"]]
    assert as_of_3 == ["the lighthouse"] and as_of_8 == ["the harbour inn"]


# --- Reveal checks ---------------------------------------------------------------------


def test_fair_play_reports_late_evidence_and_passes_once_it_moves_earlier(author_api, book, session):
    reveal, clue = mystery(author_api, book, clue_chapter=8)
    report = author_api.get(f"/books/{book.pk}/codex").json()["fair_play"]
    assert report["ok"] is False
    [finding] = report["findings"]
    assert finding["code"] == "FAIR-PLAY-002"
    assert finding["reveal"]["id"] == reveal["id"] and finding["reveal"]["chapter"] == 7
    assert finding["evidence"] == [
        {"id": clue["id"], "label": "the letter is written in: a left-handed slant", "first_shown_chapter": 8}
    ]
    assert "chapter 7" in finding["message"] and "chapter 8" in finding["message"]
    # Moving the evidence earlier is a new proposal that revises the approved clue.
    moved = canon(
        author_api,
        book,
        body(
            book,
            "the letter",
            "is written in",
            "a left-handed slant",
            true_from_chapter=1,
            first_shown_chapter=2,
            decisive=True,
            evidence_for=reveal["id"],
            revises=clue["id"],
        ),
    )
    assert KnowledgeClaim.objects.get(pk=clue["id"]).status == "revised"
    entry = DecisionLogEntry.objects.filter(book=book, subject_id=moved["id"]).get()
    assert entry.detail["revised_claim"] == clue["id"]
    report = author_api.get(f"/books/{book.pk}/codex").json()["fair_play"]
    assert report == {"ok": True, "findings": [], "reveals": 1}


def test_a_reveal_without_decisive_evidence_is_reported(author_api, book, session):
    canon(author_api, book, body(book, "Ines", "is", "alive", first_shown_chapter=10, reveal="twist"))
    canon(author_api, book, body(book, "the tide", "was", "high", first_shown_chapter=2))  # not decisive
    [finding] = author_api.get(f"/books/{book.pk}/codex").json()["fair_play"]["findings"]
    assert finding["code"] == "FAIR-PLAY-001" and finding["evidence"] == []
    assert "Ines is: alive" in finding["message"] and "chapter 10" in finding["message"]


def test_decisive_digital_evidence_keeps_its_admitted_research_rule(author_api, book, session):
    reveal = canon(
        author_api, book, body(book, "Ines", "forged", "the letter", first_shown_chapter=7, reveal="solution")
    )
    pending = ResearchItemFactory(book=book, status="pending")
    clue = propose(
        author_api,
        body(
            book,
            "the email",
            "was sent",
            "at 02:14",
            first_shown_chapter=3,
            decisive=True,
            evidence_for=reveal["id"],
            evidence={"kind": "digital", "research_ids": []},
        ),
    )
    refused = author_api.post(f"/claims/{clue['id']}/promote", {"book_id": str(book.pk), "rationale": "Yes."})
    assert refused.status_code == 409 and refused.json()["code"] == "DIGITAL-RESEARCH-001"
    cited = propose(
        author_api,
        body(
            book,
            "the email",
            "was sent",
            "at 02:15",
            first_shown_chapter=3,
            decisive=True,
            evidence_for=reveal["id"],
            evidence={"kind": "digital", "research_ids": [str(pending.pk)]},
        ),
    )
    refused = author_api.post(f"/claims/{cited['id']}/promote", {"book_id": str(book.pk), "rationale": "Yes."})
    assert refused.status_code == 409 and refused.json()["code"] == "DIGITAL-RESEARCH-001"
    assert KnowledgeClaim.objects.get(pk=cited["id"]).status == "proposed"


# --- Dossiers as of a chapter -------------------------------------------------------------


def test_a_dossier_as_of_chapter_3_never_carries_a_chapter_7_reveal(author_api, terra_api, book, session):
    reveal, clue = mystery(author_api, book, clue_chapter=2)
    secret = canon(author_api, book, body(book, "Ines", "hides", "a second key", first_shown_chapter=5))
    common = canon(author_api, book, body(book, "the lighthouse", "stands on", "Black Rock"))
    later = canon(author_api, book, body(book, "Mara", "inherits", "the lamp", true_from_chapter=6))
    dossier = terra_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "terra", "as_of_chapter": 3})
    assert dossier.status_code == 201, dossier.content
    content = dossier.json()["content"]
    assert content["as_of_chapter"] == 3
    text = str(content)
    assert reveal["id"] not in text and "forged" not in text
    given = {c["id"]: c for c in content["claims"]}
    assert set(given) == {clue["id"], secret["id"], common["id"]}
    assert given[clue["id"]]["evidence_for_id"] is None  # not even the id of the withheld reveal
    assert given[secret["id"]]["secret"] is True and given[secret["id"]]["visibility"] == "secret until chapter 5"
    assert given[common["id"]]["secret"] is False and given[clue["id"]]["secret"] is False
    assert later["id"] not in given
    assert "withheld: 1 reveal(s) first shown after chapter 3" in content["withheld"]
    # As of chapter 7 the reveal is given; without a chapter, the whole canon.
    as_of_7 = terra_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "terra", "as_of_chapter": 7}).json()
    assert reveal["id"] in {c["id"] for c in as_of_7["content"]["claims"]}
    whole = terra_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "terra"}).json()["content"]
    assert whole["as_of_chapter"] is None and len(whole["claims"]) == 5
    bad = terra_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "terra", "as_of_chapter": 0})
    assert bad.status_code == 422 and bad.json()["field"] == "as_of_chapter"


def test_the_codex_as_of_a_chapter_withholds_later_reveals(author_api, book, session):
    reveal, _ = mystery(author_api, book, clue_chapter=2)
    codex = author_api.get(f"/books/{book.pk}/codex", as_of_chapter=3).json()
    assert reveal["id"] not in str(codex) and codex["fair_play"]["ok"] is None
    assert author_api.get(f"/books/{book.pk}/codex", as_of_chapter=0).status_code == 422


def test_luna_never_reads_series_canon_in_the_codex_or_a_dossier(author_api, luna_api, book, session):
    series = canon(
        author_api,
        book,
        {**body(book, "the coast", "drowns", "a street a year"), "scope": "series", "scope_id": str(book.series_id)},
    )
    series_reveal = canon(
        author_api,
        book,
        {
            **body(book, "the coast", "was drowned by", "the keepers", first_shown_chapter=9, reveal="twist"),
            "scope": "series",
            "scope_id": str(book.series_id),
        },
    )
    own = canon(
        author_api,
        book,
        body(
            book, "the tide table", "is", "torn", decisive=True, evidence_for=series_reveal["id"], first_shown_chapter=2
        ),
    )
    codex = luna_api.get(f"/books/{book.pk}/codex").json()
    assert [c["id"] for c in codex["claims"]] == [own["id"]]
    assert codex["claims"][0]["evidence_for_id"] is None  # not even the id of the series reveal
    assert "withheld: series canon (luna lacks series:read)" in codex["withheld"]
    assert series["id"] not in str(codex) and series_reveal["id"] not in str(codex)
    for as_of_chapter in (None, 4, 10):
        dossier = luna_api.post(
            f"/books/{book.pk}/dossiers", {"agent_role": "luna", "as_of_chapter": as_of_chapter}
        ).json()
        assert series["id"] not in str(dossier["content"]) and series_reveal["id"] not in str(dossier["content"])
    assert series["id"] in {c["id"] for c in author_api.get(f"/books/{book.pk}/codex").json()["claims"]}


# --- Contradictions that name both sides --------------------------------------------------------


def test_a_contradiction_with_one_side_is_a_422(luna_api, author_api, book, session):
    claim = canon(author_api, book, body(book))
    one = {
        "kind": "contradiction",
        "content": "Mara cannot fear water and swim daily.",
        "source_refs": [{"type": "claim", "id": claim["id"]}],
    }
    response = luna_api.post(f"/sessions/{session.pk}/scratchpad", one)
    assert response.status_code == 422 and response.json()["field"] == "source_refs"
    same_twice = {**one, "source_refs": [{"type": "claim", "id": claim["id"]}] * 2}
    assert luna_api.post(f"/sessions/{session.pk}/scratchpad", same_twice).status_code == 422
    chunk_only = {**one, "source_refs": [{"type": "claim", "id": claim["id"]}, {"type": "other", "id": "x"}]}
    assert luna_api.post(f"/sessions/{session.pk}/scratchpad", chunk_only).status_code == 422
    assert not ScratchpadEntry.objects.exists()
    turn = author_api.post(f"/sessions/{session.pk}/turns", {"role": "author", "content": "Mara swims daily."})
    both = {**one, "source_refs": [{"type": "claim", "id": claim["id"]}, {"type": "turn", "id": turn.json()["id"]}]}
    saved = luna_api.post(f"/sessions/{session.pk}/scratchpad", both)
    assert saved.status_code == 201, saved.content


def test_a_conflicting_proposal_names_both_sides_and_the_verdict_resolves_it(author_api, sol_api, book, session):
    approved = canon(author_api, book, body(book, "Mara", "eye colour", "grey", true_from_chapter=1))
    unrelated = propose(sol_api, body(book, "Mara", "eye colour", "green", true_from_chapter=1, true_until_chapter=1))
    proposed = propose(sol_api, body(book, "Mara", "eye colour", "green", true_from_chapter=3))
    conflicts = sol_api.get(f"/books/{book.pk}/claims/{proposed['id']}/conflicts").json()["items"]
    [conflict] = conflicts
    assert conflict["kind"] == "value"
    assert [s["id"] for s in conflict["sides"]] == [proposed["id"], approved["id"]]
    assert conflict["sides"][1]["label"] == "Mara eye colour: grey"
    # Chapters that overlap only matter: grey from 1 overlaps green in chapter 1 too.
    assert sol_api.get(f"/books/{book.pk}/claims/{unrelated['id']}/conflicts").json()["count"] == 1
    decided = author_api.post(f"/claims/{proposed['id']}/reject", {"book_id": str(book.pk), "rationale": "Grey."})
    assert decided.status_code == 200
    entry = DecisionLogEntry.objects.get(subject_id=proposed["id"])
    assert entry.detail["contradictions"] == [
        {"kind": "value", "sides": [{"type": "claim", "id": proposed["id"]}, {"type": "claim", "id": approved["id"]}]}
    ]


def test_a_visibility_that_contradicts_an_earlier_reveal_is_flagged(author_api, sol_api, book, session):
    canon(author_api, book, body(book, "Ines", "forged", "the letter", first_shown_chapter=4))
    secret = propose(sol_api, body(book, "Ines", "forged", "the letter", known_by="nobody"))
    later = propose(sol_api, body(book, "Ines", "forged", "the letter", first_shown_chapter=9))
    same = propose(sol_api, body(book, "Ines", "forged", "the letter", first_shown_chapter=4))
    for claim, expected in ((secret, 1), (later, 1), (same, 0)):
        found = sol_api.get(f"/books/{book.pk}/claims/{claim['id']}/conflicts").json()["items"]
        assert len(found) == expected and all(c["kind"] == "visibility" for c in found)
        assert all("chapter 4" in c["reason"] for c in found)


# --- Pages: the codex, the review page, dossiers as of a chapter -------------------------------


def test_the_codex_page_draws_the_timeline_and_reports_fair_play(
    author_api, author_browser, editor_browser, book, session
):
    reveal, clue = mystery(author_api, book, clue_chapter=8)
    canon(author_api, book, body(book, "Ines", "hides", "a second key", known_by="nobody"))
    page = author_browser.get(f"/books/{book.pk}/codex/")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="loop-svg codex-svg" id="codex-timeline"' in html
    assert f'id="tl-{reveal["id"]}"' in html and f'id="tl-{clue["id"]}"' in html
    assert "solution · FAIR-PLAY-002" in html and "too late" in html and "secret still held" in html
    assert "<script" not in html.split('id="codex-timeline"')[1].split("</svg>")[0]
    assert editor_browser.get(f"/books/{book.pk}/codex/").status_code == 200
    # As of chapter 3 the chapter-7 reveal is not on the page at all.
    early = author_browser.get(f"/books/{book.pk}/codex/", {"as_of_chapter": 3}).content.decode()
    assert reveal["id"] not in early and "forged" not in early
    assert "withheld: 1 reveal(s) first shown after chapter 3" in early
    bad = author_browser.get(f"/books/{book.pk}/codex/", {"as_of_chapter": "zero"})
    assert bad.status_code == 422 and 'aria-invalid="true"' in bad.content.decode()
    # The evidence moved earlier: the page says fair play passes.
    canon(
        author_api,
        book,
        body(
            book,
            "the letter",
            "is written in",
            "a left-handed slant",
            first_shown_chapter=3,
            decisive=True,
            evidence_for=reveal["id"],
            revises=clue["id"],
        ),
    )
    assert "Every reveal is supported" in author_browser.get(f"/books/{book.pk}/codex/").content.decode()


def test_the_codex_page_is_404_for_an_outsider(book, other_book, author_browser):
    assert author_browser.get(f"/books/{other_book.pk}/codex/").status_code == 404


def test_a_conflicting_proposal_shows_both_sides_on_its_review_page(
    author_api, sol_api, luna_api, author_browser, book, session
):
    approved = canon(author_api, book, body(book, "Mara", "eye colour", "grey"))
    proposed = propose(sol_api, body(book, "Mara", "eye colour", "green", true_from_chapter=2))
    approval = sol_api.post(f"/claims/{proposed['id']}/request-approval", {"book_id": str(book.pk), "note": ""})
    entry = luna_api.post(
        f"/sessions/{session.pk}/scratchpad",
        {
            "kind": "contradiction",
            "content": "Green eyes contradict the grey of canon.",
            "source_refs": [{"type": "claim", "id": proposed["id"]}, {"type": "claim", "id": approved["id"]}],
        },
    )
    assert entry.status_code == 201, entry.content
    page = author_browser.get(f"/review/{approval.json()['approval_id']}/")
    html = page.content.decode()
    assert page.status_code == 200 and 'data-testid="conflicts"' in html
    assert "Mara eye colour: green" in html and "Mara eye colour: grey" in html
    assert proposed["id"] in html and approved["id"] in html
    # Her verdict resolves it; the decided page no longer flags it, the log keeps both sides.
    decided = author_browser.post(
        f"/review/{approval.json()['approval_id']}/", {"verdict": "reject", "rationale": "Grey it stays."}
    )
    assert decided.status_code == 302
    after = author_browser.get(f"/review/{approval.json()['approval_id']}/").content.decode()
    assert 'data-testid="conflicts"' not in after, "decided: no longer flagged"
    # The log keeps both sides (the page shows the record in words, without its ids).
    from approvals.models import DecisionLogEntry

    logged = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    assert approved["id"] in logged.entry
    # The contradiction entry stays in the scratchpad, and still shows beside the decided proposal.
    assert 'data-testid="contradiction-entries"' in after and "Green eyes contradict the grey" in after
    assert ScratchpadEntry.objects.filter(pk=entry.json()["id"]).exists()
    # A proposal that contradicts nothing shows no conflicts section.
    other = propose(sol_api, body(book, "Mara", "hair", "black"))
    quiet = sol_api.post(f"/claims/{other['id']}/request-approval", {"book_id": str(book.pk), "note": ""})
    assert (
        'data-testid="conflicts"' not in author_browser.get(f"/review/{quiet.json()['approval_id']}/").content.decode()
    )


def test_the_author_takes_a_dossier_as_of_a_chapter_on_the_page(author_api, author_browser, book, session):
    mystery(author_api, book, clue_chapter=2)
    response = author_browser.post(f"/books/{book.pk}/dossiers/new/", {"agent_role": "terra", "as_of_chapter": "3"})
    assert response.status_code == 302
    page = author_browser.get(response["Location"]).content.decode()
    assert 'data-testid="as-of">chapter 3' in page and "forged" not in page
    refused = author_browser.post(f"/books/{book.pk}/dossiers/new/", {"agent_role": "terra", "as_of_chapter": "-2"})
    assert refused.status_code == 422 and "as_of_chapter" in refused.content.decode()


# --- The demo mystery ---------------------------------------------------------------------------


def test_the_demo_mystery_carries_story_records_and_plays_fair_until_its_clue_comes_late():
    call_command("demo", stdout=StringIO())
    demo = Book.objects.get(title="The Lighthouse Letter")
    author = demo.owner
    api = Api(Client(), api_key_create(owner=author, role="author")[1])
    browser = Client()
    assert browser.login(username="author", password="novelgraph-author")

    codex = api.get(f"/books/{demo.pk}/codex").json()
    by_subject = {c["subject"]: c for c in codex["claims"]}
    letter, clue = by_subject["The letter"], by_subject["The letter's handwriting"]
    reveal = next(c for c in codex["claims"] if c["reveal"] == "solution")
    assert (letter["predicate"], letter["first_shown_chapter"]) == ("is found by", 1)
    assert (clue["decisive"], clue["evidence_for_id"], clue["first_shown_chapter"]) == (True, reveal["id"], 4)
    assert (reveal["first_shown_chapter"], reveal["known_by_characters"]) == (12, ["Ines"])
    assert codex["fair_play"] == {"ok": True, "findings": [], "reveals": 1}
    page = browser.get(f"/books/{demo.pk}/codex/").content.decode()
    for claim in (letter, clue, reveal):
        assert f'id="tl-{claim["id"]}"' in page
    assert "solution revealed ch 12" in page and "decisive clue, shown ch 4" in page

    def revise_clue(previous: str, chapter: int) -> str:
        moved = canon(
            api,
            demo,
            body(
                demo,
                clue["subject"],
                clue["predicate"],
                clue["value"],
                true_from_chapter=1,
                first_shown_chapter=chapter,
                decisive=True,
                evidence_for=reveal["id"],
                revises=previous,
            ),
        )
        return moved["id"]

    late = revise_clue(clue["id"], 13)
    [finding] = api.get(f"/books/{demo.pk}/codex").json()["fair_play"]["findings"]
    assert finding["code"] == "FAIR-PLAY-002" and finding["reveal"]["chapter"] == 12
    assert finding["evidence"][0]["first_shown_chapter"] == 13
    assert "FAIR-PLAY-002" in browser.get(f"/books/{demo.pk}/codex/").content.decode()
    revise_clue(late, 3)
    assert api.get(f"/books/{demo.pk}/codex").json()["fair_play"] == {"ok": True, "findings": [], "reveals": 1}
    # As of chapter 5 a role is never given the solution.
    dossier = api.post(f"/books/{demo.pk}/dossiers", {"agent_role": "terra", "as_of_chapter": 5}).json()
    assert reveal["id"] not in str(dossier["content"]) and "Ines, Mara's sister" not in str(dossier["content"])
    assert dossier["content"]["scratchpad"] == [] and dossier["content"]["observations"] == []
    assert any("whole-book discovery material" in line for line in dossier["content"]["withheld"])


# --- Agent runs as of a chapter -------------------------------------------------------------------


def test_an_agent_run_as_of_chapter_3_is_never_given_the_chapter_7_reveal(author_api, book, session):
    reveal, clue = mystery(author_api, book, clue_chapter=2)
    author_api.post(
        f"/sessions/{session.pk}/turns",
        {
            "role": "author",
            "content": "Ines forged the letter; the reader learns it in chapter 7.",
            "observations": [{"key": "forger", "value": "Ines", "provenance": "author-stated"}],
        },
    )
    data = start_run(author_api, book, "next-question", as_of_chapter=3)
    assert data["input"]["as_of_chapter"] == 3
    work_off_queue()
    runs = list(AgentRun.objects.filter(book=book).order_by("created_at"))
    assert runs and all(run.input.get("as_of_chapter") == 3 for run in runs)  # work handed on stays as of 3
    for run in runs:
        assert run.status == "done", (run.task, run.reason)
        given = str(run.dossier.content) + str(run.looked_up)
        assert reveal["id"] not in given and "forged" not in given, run.task
        assert run.dossier.content["as_of_chapter"] == 3
    sol = runs[0]
    assert clue["id"] in {c["id"] for c in sol.dossier.content["claims"]}
    assert "turns" in sol.looked_up["withheld_as_of_chapter"]
    whole = start_run(author_api, book, "next-question")
    assert "as_of_chapter" not in whole["input"]
    assert (
        author_api.post(f"/books/{book.pk}/agent-runs", {"task": "next-question", "as_of_chapter": 0}).json()["field"]
        == "as_of_chapter"
    )


def test_the_review_page_shows_the_story_record_the_author_approves(author_api, sol_api, author_browser, book, session):
    reveal = canon(author_api, book, body(book, "Ines", "forged", "the letter", first_shown_chapter=7, reveal="twist"))
    clue = propose(
        sol_api,
        body(
            book,
            "the letter",
            "slants",
            "left",
            true_from_chapter=2,
            first_shown_chapter=3,
            decisive=True,
            evidence_for=reveal["id"],
            known_by="characters",
            known_by_characters=["Ines", "Mara"],
        ),
    )
    approval = sol_api.post(f"/claims/{clue['id']}/request-approval", {"book_id": str(book.pk), "note": ""}).json()
    html = author_browser.get(f"/review/{approval['approval_id']}/").content.decode()
    for text in (
        "True from chapter",
        "First shown in chapter",
        "Named characters: Ines, Mara",
        f"yes, for the reveal {reveal['id']}",
    ):
        assert text in html, text
    assert "True until chapter" not in html  # not set, not shown


def test_the_author_asks_sol_as_of_a_chapter_on_the_agents_page(author_api, author_browser, book, session):
    response = author_browser.post(f"/books/{book.pk}/agents/start/", {"task": "next-question", "as_of_chapter": "4"})
    assert response.status_code == 302, response.content
    run = AgentRun.objects.get(book=book)
    assert run.input["as_of_chapter"] == 4
    assert "as of chapter 4" in author_browser.get(f"/books/{book.pk}/agents/").content.decode()
    refused = author_browser.post(f"/books/{book.pk}/agents/start/", {"task": "next-question", "as_of_chapter": "0"})
    assert refused.status_code == 422 and AgentRun.objects.filter(book=book).count() == 1


def test_the_codex_and_an_as_of_dossier_read_a_fixed_number_of_statements(author_api, book, session):
    """Measured: 7 statements for the codex, 12 for an as-of dossier (key, book, bases, canon, chapters;
    the dossier adds its session, charter and the insert), with 2 or 14 approved claims alike."""

    def counted(call) -> int:
        with CaptureQueriesContext(connection) as queries:
            response = call()
            assert response.status_code in (200, 201), response.content
        return len(queries)

    def measure() -> tuple[int, int]:
        return (
            counted(lambda: author_api.get(f"/books/{book.pk}/codex")),
            counted(lambda: author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "terra", "as_of_chapter": 3})),
        )

    mystery(author_api, book, clue_chapter=2)
    small = measure()
    for n in range(12):
        canon(
            author_api,
            book,
            body(book, f"fact {n}", "holds", str(n), true_from_chapter=n + 1, first_shown_chapter=n + 2),
        )
    assert measure() == small


# --- As of a chapter, nothing withheld shows through (issue 24, family 7) ----------------------------------


def a_twist_in_chapter_12(author_api, book) -> tuple[dict, dict]:
    """Mara is the keeper from chapter 1; a twist first shown in chapter 12 replaces it from there."""
    fact = canon(author_api, book, body(book, "Mara", "is", "the keeper", true_from_chapter=1))
    twist = canon(
        author_api,
        book,
        body(
            book,
            "Mara",
            "is",
            "the one who drowned Ines",
            true_from_chapter=12,
            known_by="nobody",
            first_shown_chapter=12,
            reveal="twist",
        ),
    )
    return fact, twist


def test_the_codex_as_of_chapter_3_shows_no_end_that_a_withheld_twist_makes(
    author_api, luna_api, author_browser, book, session
):
    fact, twist = a_twist_in_chapter_12(author_api, book)
    whole = {c["id"]: c for c in luna_api.get(f"/books/{book.pk}/codex").json()["claims"]}
    assert whole[fact["id"]]["true_until_effective"] == 11  # the whole book: the twist takes over in chapter 12

    codex = luna_api.get(f"/books/{book.pk}/codex", as_of_chapter=3).json()
    given = {c["id"]: c for c in codex["claims"]}
    assert set(given) == {fact["id"]} and twist["id"] not in str(codex)
    assert given[fact["id"]]["true_until_effective"] is None, "the withheld twist's chapter shows through"
    listed = luna_api.get(f"/books/{book.pk}/codex/claims", as_of_chapter=3).json()["items"]
    assert [(c["id"], c["true_until_effective"]) for c in listed] == [(fact["id"], None)]
    page = author_browser.get(f"/books/{book.pk}/codex/", {"as_of_chapter": 3}).content.decode()
    assert "drowned Ines" not in page and "to 11" not in page and "ch 1–11" not in page
    assert "ch 1–end" in page
    # As of chapter 12 the twist is given, and the fact ends where it begins.
    later = {c["id"]: c for c in luna_api.get(f"/books/{book.pk}/codex", as_of_chapter=11).json()["claims"]}
    assert later[fact["id"]]["true_until_effective"] is None
    at_twist = {c["id"]: c for c in luna_api.get(f"/books/{book.pk}/codex", as_of_chapter=12).json()["claims"]}
    assert set(at_twist) == {twist["id"]}


def test_through_mcp_the_codex_as_of_chapter_3_shows_no_withheld_end(author, author_api, book, session):
    fact, twist = a_twist_in_chapter_12(author_api, book)
    luna = agent_keys(author, book)["luna"]

    status, codex = outcome(call(luna, "codex_read", {"book_id": str(book.pk), "as_of_chapter": 3}))

    assert status == "ok", codex
    given = {c["id"]: c for c in codex["claims"]}
    assert set(given) == {fact["id"]} and twist["id"] not in str(codex)
    assert given[fact["id"]]["true_until_effective"] is None, "the withheld twist's chapter shows through"


def test_an_as_of_dossier_and_run_never_carry_the_withheld_twist_or_its_chapter(author_api, luna_api, book, session):
    fact, twist = a_twist_in_chapter_12(author_api, book)

    dossier = luna_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "luna", "as_of_chapter": 3}).json()["content"]
    data = start_run(author_api, book, "next-question", as_of_chapter=3)
    work_off_queue()

    [given] = dossier["claims"]
    assert given["id"] == fact["id"] and given["true_until_chapter"] is None and "true_until_effective" not in given
    assert twist["id"] not in str(dossier) and "drowned" not in str(dossier)
    runs = list(AgentRun.objects.filter(book=book))
    assert data["input"]["as_of_chapter"] == 3 and runs
    for run in runs:
        text = str(run.dossier.content) + str(run.looked_up)
        assert twist["id"] not in text and "drowned" not in text, run.task
        assert "true_until_effective" not in text and "11" not in [str(v) for v in _values(run.dossier.content)]


def _values(content) -> list:
    """Every scalar in a dossier's claims (to check that no end chapter is among them)."""
    return [value for claim in content["claims"] for value in claim.values() if not isinstance(value, (dict, list))]
