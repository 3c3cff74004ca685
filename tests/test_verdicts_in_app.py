"""Issue 26: every verdict does what its explanation promises, with the built-in agents and through the author's
pages only (her browser's posts, Django's test client). No verdict leaves work that only the API can finish.

The tests marked ``agents_act`` let Sol take his own steps after each of her acts (the task queue is worked off
in-process, as ``db_worker`` would); the others look at the decision page itself."""

from __future__ import annotations

import re

import pytest

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.agents.models import AgentRun
from discovery.loop.models import LensRerun, LoopMeta, OptionCard, PlanNode
from discovery.models import Book, DiscoverySession, ThrustCandidate, Turn
from novelgraph.core.models import ApiKey

from .agents_support import work_off_queue
from .factories import UserFactory
from .loop_scenes import ask_gate, started_book, url  # noqa: F401 (started_book: the book, its discovery started)
from .test_discovery_to_handoff import Author, answer_to, pending
from .test_loop_verdicts import scene  # noqa: F401 (a child node, candidates, a slot and a traceability chain)

pytestmark = pytest.mark.django_db

PREMISE = "A lighthouse keeper finds a drowned man's letter that names her as the next to die."


def at_g0(settings) -> tuple[Author, Book, DiscoverySession]:
    """A new book in her browser: created, discovery started, Sol's first question answered; Sol raised G0."""
    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "PROVIDER": "offline"}
    author = Author(UserFactory(username="mara-writer"))
    author.post("/books/new/", {"title": "The Lighthouse Keeper", "premise": PREMISE, "genre_pack": "mystery"})
    book = Book.objects.get(title="The Lighthouse Keeper")
    author.post(f"/books/{book.pk}/discovery/start/")
    session = DiscoverySession.objects.get(book=book)
    author.post(f"/books/{book.pk}/turns/", {"content": answer_to(session.current_question)})
    assert pending(book, "gate", "G0") is not None, list(AgentRun.objects.values_list("task", "notes"))
    return author, book, session


def at_g15(settings) -> tuple[Author, Book, DiscoverySession]:
    author, book, session = at_g0(settings)
    for turn in Turn.objects.filter(session=session, role="author"):
        author.post(f"/books/{book.pk}/turns/{turn.pk}/confirm/")
    author.decide(pending(book, "gate", "G0"), "This is why the book exists.")
    assert pending(book, "gate", "G1.5") is not None, list(AgentRun.objects.values_list("task", "notes"))
    return author, book, session


def verdict(author: Author, approval: Approval, word: str, rationale: str, constraint: str = "", **fields):
    author.post(
        f"/review/{approval.pk}/", {"verdict": word, "rationale": rationale, "constraint": constraint, **fields}
    )
    approval.refresh_from_db()
    assert (approval.status, approval.verdict) == ("decided", word)
    return DecisionLogEntry.objects.get(approval=approval)


def page_of(author: Author, approval: Approval) -> str:
    page = author.client.get(f"/review/{approval.pk}/")
    assert page.status_code == 200
    return page.content.decode()


# --- Redirect: the steer is recorded and Sol's next card answers it ---------------------------------------------


@pytest.mark.agents_act
def test_a_redirect_at_g0_reaches_sols_next_step_and_his_next_card_answers_the_steer(settings):
    author, book, _ = at_g0(settings)
    first = pending(book, "gate", "G0")
    steer = "Make the harbour master the one who wrote the letter."
    entry = verdict(author, first, "redirect", "The seed misses who is behind it.", steer)
    assert entry.detail["effect"]["steer"] == steer
    assert LoopMeta.objects.get(book=book).constraints[-1] == {
        "kind": "steer",
        "text": steer,
        "gate": "G0",
        "card": str(OptionCard.objects.get(approval=first).pk),
    }

    # Sol's next step was given the steer, and the card he raised answers it: not the same card back.
    sol = AgentRun.objects.filter(book=book, role="sol", status="done").order_by("-created_at").first()
    assert sol.looked_up["loop"]["author_words"] == [{"kind": "steer", "text": steer, "gate": "G0"}]
    again = pending(book, "gate", "G0")
    assert again is not None and again.pk != first.pk
    card = OptionCard.objects.get(approval=again)
    assert steer in card.summary and card.summary != OptionCard.objects.get(approval=first).summary
    assert card.payload["answers"] == [{"kind": "steer", "text": steer, "gate": "G0"}]
    assert any(steer in asked for asked in card.decisions_requested)
    shown = page_of(author, again)
    assert "Answers what you said" in shown and steer in shown

    # Approving the card that answered her steer records it with the ratified seed; the next card answers nothing.
    entry = verdict(author, again, "approve", "Now it says why.")
    assert entry.detail["effect"]["answers"] == [{"kind": "steer", "text": steer, "gate": "G0"}]
    assert LoopMeta.objects.get(book=book).gate != "G0"
    assert decision_log_verify(book).ok


@pytest.mark.agents_act
def test_a_redirect_at_g15_has_terra_redraft_the_thrusts_along_the_steer(settings):
    author, book, _ = at_g15(settings)
    first = pending(book, "gate", "G1.5")
    steer = "Let the keeper be the one who sent the letter."
    verdict(author, first, "redirect", "Closer, but turn it.", steer)
    assert set(LensRerun.objects.filter(book=book).values_list("status", flat=True)) == {"done"}
    redrafted = ThrustCandidate.objects.filter(session__book=book, title__contains="(draft 2)")
    assert redrafted.count() == 3 and all(steer in t.main_thrust for t in redrafted)
    again = pending(book, "gate", "G1.5")
    card = OptionCard.objects.get(approval=again)
    assert steer in card.summary and card.payload["thrust"]["id"] in {str(t.pk) for t in redrafted}


# --- Explore alternatives at G1.5: Terra's run drafts new candidates in-app; the book leaves G1.5 ---------------


@pytest.mark.agents_act
def test_explore_alternatives_at_g15_runs_terra_for_new_thrusts_and_the_book_leaves_g15(settings):
    author, book, _ = at_g15(settings)
    first = pending(book, "gate", "G1.5")
    before = set(ThrustCandidate.objects.filter(session__book=book).values_list("pk", flat=True))
    entry = verdict(author, first, "explore-alternatives", "None of these is the harbour master's book.")
    assert [r["lens"] for r in entry.detail["effect"]["reruns"]] == ["explore-options"]
    shown = page_of(author, first)
    assert "Terra drafts new thrust candidates in-app" in shown

    # The re-run the verdict queued was done by an in-app run of Terra's, handed on by Sol.
    (rerun,) = LensRerun.objects.filter(book=book)
    assert rerun.status == "done"
    terra = AgentRun.objects.filter(book=book, role="terra", task="thrusts").order_by("-created_at").first()
    assert terra.status == "done" and terra.parent.role == "sol"
    assert any("re-run of the explore-options lens" in note for note in terra.notes), terra.notes
    new = ThrustCandidate.objects.filter(session__book=book).exclude(pk__in=before)
    assert new.count() == 3 and all("(draft 2)" in t.title for t in new)

    # Sol put a fresh G1.5 card before her, recommending a new draft; she chooses it and the book moves on.
    again = pending(book, "gate", "G1.5")
    assert again is not None and again.pk != first.pk
    recommended = OptionCard.objects.get(approval=again).payload["thrust"]["id"]
    assert recommended in {str(pk) for pk in new.values_list("pk", flat=True)}
    author.decide(again, "The second draft carries it.", thrust_id=recommended)
    assert LoopMeta.objects.get(book=book).gate == "G2"
    assert ThrustCandidate.objects.get(pk=recommended).status == "selected"
    assert not ApiKey.objects.filter(owner=book.owner).exists(), "no agent key was made"


# --- Approve with constraint: the touched work re-runs in-app, under the constraint -----------------------------


@pytest.mark.agents_act
def test_approve_with_constraint_at_g15_reruns_the_thrusts_in_app_under_the_constraint(settings):
    author, book, _ = at_g15(settings)
    first = pending(book, "gate", "G1.5")
    constraint = "Keep it to one night and one town."
    entry = verdict(author, first, "approve-with-constraint", "Good, but smaller.", constraint)
    assert entry.detail["effect"]["constraint_recorded"] is True
    assert [r["lens"] for r in entry.detail["effect"]["reruns"]] == ["explore-options"]
    assert LoopMeta.objects.get(book=book).gate == "G1.5", "the gate does not advance yet"

    assert set(LensRerun.objects.filter(book=book).values_list("status", flat=True)) == {"done"}
    redrafted = ThrustCandidate.objects.filter(session__book=book, title__contains="(draft 2)")
    assert redrafted.count() == 3 and all(constraint in t.main_thrust for t in redrafted)
    again = pending(book, "gate", "G1.5")
    assert again is not None and again.pk != first.pk
    card = OptionCard.objects.get(approval=again)
    assert card.payload["answers"] == [{"kind": "constraint", "text": constraint, "gate": "G1.5"}]
    assert constraint in card.summary


def test_a_cascade_rerun_queued_by_her_redirect_is_done_by_an_in_app_run_of_its_lens(
    book,
    sol_api,
    author_browser,
    scene,  # noqa: F811
):
    approval_id = ask_gate(sol_api, book, "G0", node_id=str(scene["node"].pk), trace_seed="arc").json()["approval_id"]
    steer = {"verdict": "redirect", "rationale": "Not this arc.", "constraint": "Follow the sister instead."}
    assert author_browser.post(f"/review/{approval_id}/", steer).status_code == 302
    rerun = LensRerun.objects.get(book=book)
    assert (rerun.lens, rerun.artifacts, rerun.status) == ("reader-trust", ["arc-lock-keeper"], "queued")

    # She asks Sol from the agents panel (the button her page has); Sol hands the re-run to Luna's review run.
    asked = author_browser.post(f"/books/{book.pk}/agents/start/", {"task": "next-question"})
    assert asked.status_code in (200, 302), asked.content[:500]
    work_off_queue()
    rerun.refresh_from_db()
    assert rerun.status == "done"
    luna = AgentRun.objects.get(book=book, task="trust-review")
    assert (luna.status, luna.parent.role) == ("done", "sol")
    assert "Did the queued re-run of the reader-trust lens." in luna.notes


def test_sol_hands_each_queued_rerun_to_a_run_of_its_lens_once():
    from discovery.agents.providers.offline import _rerun_handoffs

    def context(reruns, handoffs=()):
        return {
            "book": {"title": "T", "premise": "P", "genre_pack": "mystery"},
            "turns": [],
            "handoffs": list(handoffs),
            "loop": {"reruns": reruns},
        }

    reruns = [
        {"id": "1", "number": 1, "lens": "explore-options", "artifacts": ["node:x"], "reason": "new candidates: no"},
        {"id": "2", "number": 2, "lens": "explore-options", "artifacts": ["decision-brief"], "reason": "stale"},
        {"id": "3", "number": 3, "lens": "canon-integrity", "artifacts": ["charter"], "reason": "stale"},
        {"id": "4", "number": 4, "lens": "reader-trust", "artifacts": ["charter"], "reason": "stale"},
    ]
    notes: list[str] = []
    handed = _rerun_handoffs(context(reruns), notes)
    assert [(h["task"], h["handoff"]["to_role"]) for h in handed] == [
        ("thrusts", "terra"),
        ("brief", "terra"),
        ("canon-review", "terra"),
        ("trust-review", "luna"),
    ]
    assert handed[0]["handoff"]["statements"][-1]["text"] == "The author asked: new candidates: no"
    # Handed once: not again while its handoff stands, again when the run that took it failed.
    given = [{"decision": h["handoff"]["decision"], "status": "open", "failed": False} for h in handed]
    assert _rerun_handoffs(context(reruns, given), notes) == []
    given[0]["failed"] = True
    assert [h["task"] for h in _rerun_handoffs(context(reruns, given), notes)] == ["thrusts"]


# --- Park: the loop goes on with what it can ---------------------------------------------------------------------


@pytest.mark.agents_act
def test_park_at_g0_lets_the_discovery_go_on_and_sol_asks_again_after_her_next_answer(settings):
    author, book, session = at_g0(settings)
    first = pending(book, "gate", "G0")
    entry = verdict(author, first, "park", "Not yet: I want to talk first.")
    assert entry.detail["effect"]["deferred"] is True
    assert "Deferred: the discovery goes on" in page_of(author, first)

    # Not the same card straight back: nothing waits for her, the loop is working, not stranded.
    assert pending(book, "gate") is None
    meta = LoopMeta.objects.get(book=book)
    assert (meta.gate, meta.status) == ("G0", "working")
    notes = AgentRun.objects.filter(book=book, role="sol").order_by("-created_at").first().notes
    assert any("the author parked it" in note for note in notes), notes

    # She answers: Sol goes on with the next question and asks for G0 again, now with what she added.
    session.refresh_from_db()
    asked = session.current_question
    author.post(f"/books/{book.pk}/turns/", {"content": answer_to(asked)})
    session.refresh_from_db()
    assert session.current_question and session.current_question != asked
    again = pending(book, "gate", "G0")
    assert again is not None and again.pk != first.pk


@pytest.mark.agents_act
def test_abandon_at_g0_is_not_asked_straight_back_and_sol_asks_again_after_she_speaks(settings):
    author, book, session = at_g0(settings)
    first = pending(book, "gate", "G0")
    verdict(author, first, "abandon", "This premise is not the book: I will say what is.")
    assert pending(book, "gate") is None, "the abandoned card is not raised again at once"
    notes = AgentRun.objects.filter(book=book, role="sol").order_by("-created_at").first().notes
    assert any("the author abandoned this line" in note for note in notes), notes

    session.refresh_from_db()
    author.post(f"/books/{book.pk}/turns/", {"content": answer_to(session.current_question)})
    again = pending(book, "gate", "G0")
    assert again is not None and again.pk != first.pk


# --- Abandon: its impact preview is shown before it asks ---------------------------------------------------------


def test_abandon_shows_what_it_would_change_before_it_asks(book, sol_api, author_browser, scene):  # noqa: F811
    PlanNode.objects.create(book=book, parent=scene["node"], depth=2, intent="The keeper's sister")
    body = {"node_id": str(scene["node"].pk), "trace_seed": "arc"}
    approval_id = ask_gate(sol_api, book, "G0", **body).json()["approval_id"]
    page = author_browser.get(f"/review/{approval_id}/").content.decode()
    said = (
        "The line “The lock-keeper’s arc” is abandoned, 1 plan below it goes stale, and what rests on it goes "
        "stale (arc-lock-keeper, ch1). Nothing is deleted: the history stays."
    ).replace("’", "'")
    assert 'data-testid="abandon-preview"' in page and said.replace("'", "&#x27;") in page
    # The question the form asks before recording an abandon carries the same preview.
    assert f'data-confirm-text-abandon="{said.replace(chr(39), "&#x27;")}"' in page
    assert Approval.objects.get(pk=approval_id).status == "pending", "reading the preview records nothing"


def test_abandon_of_a_gate_card_about_the_whole_book_says_so(book, sol_api, author_browser):
    approval_id = ask_gate(sol_api, book, "G0").json()["approval_id"]
    page = author_browser.get(f"/review/{approval_id}/").content.decode()
    assert "The whole book&#x27;s line" in page and "nothing below it goes stale" in page
    assert "Sol asks for it again after your next answer" in page, "park's help says what it does to this card"


# --- Extend: a structured grant, and exactly what was granted shown after ---------------------------------------


def _round_cap_card(book, sol_api):
    LoopMeta.objects.filter(book=book).update(round_cap=2, cost_budget=100)
    sol_api.get(url(book))
    for _ in range(2):
        sol_api.post(url(book, "/rounds"), {})
    return OptionCard.objects.get(book=book, kind="bound", status="pending").approval


def test_extend_takes_rounds_and_budget_in_their_own_boxes_and_shows_exactly_what_was_granted(
    book, sol_api, author_browser
):
    approval = _round_cap_card(book, sol_api)
    form = author_browser.get(f"/review/{approval.pk}/").content.decode()
    assert 'name="grant_round_cap"' in form and 'name="grant_cost_budget"' in form
    assert "Now 2 (2 used); the card proposes 3." in form

    sent = author_browser.post(
        f"/review/{approval.pk}/",
        {"verdict": "extend", "rationale": "Two more tries.", "grant_round_cap": "8", "grant_cost_budget": "150"},
    )
    assert sent.status_code == 302
    meta = LoopMeta.objects.get(book=book)
    assert (meta.round_cap, meta.cost_budget, meta.status) == (8, 150, "working")
    entry = DecisionLogEntry.objects.get(approval=approval)
    assert entry.detail["effect"]["granted"] == {"round_cap": 8, "cost_budget": 150}
    assert entry.detail["effect"]["previous"] == {"round_cap": 2, "cost_budget": 100}
    shown = author_browser.get(f"/review/{approval.pk}/").content.decode()
    assert "Granted: round cap 8 (was 2); cost budget 150 (was 100)." in shown


@pytest.mark.parametrize(
    ("fields", "box"),
    [
        ({"grant_round_cap": "eight"}, "grant_round_cap"),
        ({"grant_cost_budget": "-5"}, "grant_cost_budget"),
        ({"grant_round_cap": "1"}, None),  # not beyond the rounds used: refused by the loop's own rule
        ({"grant_round_cap": "8", "constraint": "and raise the budget to 200"}, "constraint"),
    ],
)
def test_a_grant_that_cannot_be_granted_is_refused_inline_and_grants_nothing(
    book, sol_api, author_browser, fields, box
):
    approval = _round_cap_card(book, sol_api)
    sent = author_browser.post(
        f"/review/{approval.pk}/", {"verdict": "extend", "rationale": "More.", "constraint": "", **fields}
    )
    assert sent.status_code == 422
    page = sent.content.decode()
    assert 'role="alert"' in page
    if box:
        marked = re.findall(r'<(?:input|textarea|select)[^>]*aria-invalid="true"[^>]*>', page)
        assert any(f'id="{box}"' in tag for tag in marked), marked
    meta = LoopMeta.objects.get(book=book)
    assert (meta.round_cap, meta.cost_budget) == (2, 100)
    assert Approval.objects.get(pk=approval.pk).status == "pending"
