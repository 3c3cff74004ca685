"""Issue 26, done when (its core): with the offline provider and no agent key, a new book goes from an empty
account to hand-off through what her browser can do (the pages' forms, posted with Django's test client). The
author only answers Sol's questions in plain sentences, confirms what waits for her and approves with rationales;
Sol takes each next step on its own (the task queue is worked off in-process, as ``db_worker`` would)."""

from __future__ import annotations

import pytest
from django.test import Client

from approvals.models import Approval
from approvals.selectors import decision_log_verify
from discovery.agents.models import AgentRun, AgentRunOutput, OutputType
from discovery.loop.models import ArtifactStatus, BlackboardArtifact, LensReview, LoopMeta, OptionCard
from discovery.loop.selectors import trace_lint
from discovery.models import Book, Chapter, DiscoverySession, KnowledgeClaim, Observation, StoryCharter, Turn
from novelgraph.core.models import ApiKey

from .agents_support import work_off_queue
from .factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.agents_act]

# Her answers, by the charter field Sol asks about (Sol's questions are the offline provider's, by field).
ANSWERS = {
    "What experience should remain with the reader": "Unease about whom to trust, and the relief of a truth that "
    "was there all along. The protagonist is Mara Quell, who keeps the lighthouse at Saltmarsh.",
    "In one sentence, what is this book about": "A keeper must prove a drowning was murder before the town "
    "buries the truth with the man.",
    "Who carries this story": "Mara Quell, who wants to be believed more than she wants to be safe.",
    "What stands in the protagonist's way": "The harbour master wants the drowning closed as an accident, and "
    "he has the whole town on his side.",
    "What should the reader be promised": "A fair puzzle with every clue on the page.",
    "How should the book end": "The truth comes out and costs Mara the light she keeps.",
    "Which genre promises": "A fair-play mystery: the culprit is on the page early.",
    "Which question about people": "Whether loyalty to a place excuses lying for it.",
    "Whose eyes do we see through": "Mara's, close third person, past tense.",
    "What must this book never do": "Never cheat the reader with a clue kept off the page.",
}


def answer_to(question: str) -> str:
    return next(text for start, text in ANSWERS.items() if question.startswith(start))


class Author:
    """The author in her browser: each act is one form posted; the background worker runs after it."""

    def __init__(self, user):
        self.client = Client()
        self.client.force_login(user)
        self.acts = 0

    def post(self, path: str, data: dict | None = None):
        response = self.client.post(path, data or {})
        assert response.status_code in (200, 302), (path, response.status_code, response.content[:2000])
        self.acts += 1
        work_off_queue()
        return response

    def decide(self, approval: Approval, rationale: str, **choice) -> None:
        self.post(f"/review/{approval.pk}/", {"verdict": "approve", "rationale": rationale, **choice})
        approval.refresh_from_db()
        assert approval.status == "decided", approval.status


def pending(book, kind: str, gate: str | None = None) -> Approval | None:
    found = Approval.objects.filter(book=book, status="pending", kind=kind)
    if gate:
        found = found.filter(gate=gate)
    return found.order_by("created_at").first()


def test_a_new_book_reaches_hand_off_with_the_agents_inside_and_only_the_authors_browser(settings):
    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "PROVIDER": "offline"}
    user = UserFactory(username="mara-writer")
    author = Author(user)

    author.post(
        "/books/new/",
        {
            "title": "The Lighthouse Keeper",
            "premise": "A lighthouse keeper finds a drowned man's letter that names her as the next to die.",
            "genre_pack": "mystery",
        },
    )
    book = Book.objects.get(owner=user)
    author.post(f"/books/{book.pk}/discovery/start/")
    session = DiscoverySession.objects.get(book=book)

    # She answers Sol's questions, each in a plain sentence; Sol asks the next one on his own.
    asked = []
    for _ in range(3):
        session.refresh_from_db()
        asked.append(session.current_question)
        author.post(f"/books/{book.pk}/turns/", {"content": answer_to(session.current_question)})
    session.refresh_from_db()
    assert len(set(asked)) == 3, asked  # never the same question twice, never one her turns already answer
    assert not any(q.startswith("Who carries this story") for q in asked), "her first turn named the protagonist"

    # Her answers became observations citing her turns; she confirms each turn's at once.
    turns = list(Turn.objects.filter(session=session, role="author").order_by("ordinal"))
    observations = Observation.objects.filter(session=session)
    assert {o.turn_id for o in observations} == {t.pk for t in turns}
    assert observations.filter(key="protagonist name", value="Mara Quell", turn=turns[0]).exists()
    assert not observations.exclude(status="working").exists()
    for turn in turns:
        author.post(f"/books/{book.pk}/turns/{turn.pk}/confirm/")
    assert not Observation.objects.filter(session=session, status="working").exists()

    # G0 (raised by Sol after her first turn), then G1 passes on its own and Sol raises G1.5.
    author.decide(pending(book, "gate", "G0"), "This is why the book exists.")
    g15 = pending(book, "gate", "G1.5")
    assert g15 is not None, list(AgentRun.objects.values_list("task", "status", "notes"))
    recommended = OptionCard.objects.get(approval_id=g15.pk).payload["thrust"]["id"]
    author.decide(g15, "The core keeps the keeper at the centre.", thrust_id=recommended)

    # Terra's charter, drafted from her confirmed observations: she approves it.
    charter_approval = pending(book, "story-charter")
    assert charter_approval is not None, list(AgentRun.objects.values_list("task", "status", "notes"))
    charter = StoryCharter.objects.get(pk=charter_approval.subject_id)
    assert charter.proposed_by == "terra"
    assert charter.content["protagonist"]["name"] == "Mara Quell"
    cited = {r["id"] for r in charter.source_refs if r["type"] == "observation"}
    assert cited and cited <= {str(pk) for pk in observations.values_list("pk", flat=True)}
    author.decide(charter_approval, "Mara carries it.")

    # Sol proposed canon from her confirmed words and asked for her verdict: she approves it.
    canon_asks = list(Approval.objects.filter(book=book, status="pending", kind="canon-promotion"))
    assert canon_asks, list(AgentRun.objects.filter(role="sol").values_list("notes", flat=True))
    for ask in canon_asks:
        author.decide(ask, "She is mine.")
    promoted = KnowledgeClaim.objects.filter(base__scope="book", status="approved", provenance="agent-inferred")
    assert promoted.filter(subject="Mara Quell", predicate="is", value="the protagonist").exists()
    claim = promoted.get(subject="Mara Quell")
    assert claim.source_refs[0]["type"] == "observation"

    # G2: Terra and Luna reviewed in-app, the brief links the trace, Sol closed a round and raised the card.
    g2 = pending(book, "gate", "G2")
    assert g2 is not None, list(AgentRun.objects.values_list("task", "status", "notes"))
    for lens, role in (("canon-integrity", "terra"), ("reader-trust", "luna")):
        review = LensReview.objects.get(book=book, gate="G2", lens__slug=lens)
        assert review.reviewer_role == role and review.findings
        run = AgentRunOutput.objects.get(type=OutputType.REVIEW, object_id=str(review.pk)).run
        assert run.role == role and run.status == "done"
    assert trace_lint(book, strict=True).ok
    author.decide(g2, "The charter governs the book.")

    # G3: Sol puts the brief on the hand-off card; her verdict ratifies it and hands off.
    g3 = pending(book, "gate", "G3") or pending(book, "consent", "G3")
    assert g3 is not None, list(AgentRun.objects.filter(role="sol").values_list("notes", flat=True))[:3]
    author.decide(g3, "Ready to draft.")

    meta = LoopMeta.objects.get(book=book)
    assert meta.status == "handed-off"
    brief = BlackboardArtifact.objects.get(book=book, slug="decision-brief")
    assert brief.status == ArtifactStatus.RATIFIED and brief.content["success_metrics"]
    assert brief.content["charter"]["version"] == charter.version
    chapter = Chapter.objects.get(book=book, number=1)
    assert "Mara Quell" in chapter.spec
    listed = author.client.get(f"/api/v1/books/{book.pk}/chapters")
    assert listed.status_code == 200, listed.content
    assert listed.json()["items"][0] == {"number": 1, "title": "Chapter 1", "spec": chapter.spec}
    assert decision_log_verify(book).ok
    assert not ApiKey.objects.filter(owner=user).exists(), "no agent key was made"
    print(f"\nauthor acts to hand-off: {author.acts}; agent runs: {AgentRun.objects.filter(book=book).count()}")
    print(sorted(AgentRun.objects.filter(book=book).values_list("task", "duration_ms"), key=lambda r: -r[1])[:12])
    assert author.acts <= 16


def test_the_extraction_rule_names_fields_people_and_places():
    from discovery.agents.providers.offline import extract_from, field_of

    found = extract_from(
        "The protagonist is Mara Quell, who keeps the light in the town of Saltmarsh. A clerk named Odo lies.",
        "What experience should remain with the reader after the final page?",
    )
    keys = dict(found)
    assert keys["protagonist name"] == "Mara Quell" and keys["place"] == "Saltmarsh" and keys["named person"] == "Odo"
    assert field_of("protagonist name") == "protagonist" and field_of("reader promise") == "reader_promise"
    assert field_of("named person") is None and field_of("place") is None


def test_with_the_agents_acting_a_turn_queues_sols_next_step_and_the_author_can_turn_it_off(author_api, book):
    from discovery.agents.models import AgentRun

    session_id = author_api.post(f"/books/{book.pk}/discovery").json()["session_id"]
    said = author_api.post(f"/sessions/{session_id}/turns", {"role": "author", "content": "Mara keeps the light."})
    assert said.status_code == 201
    (run,) = AgentRun.objects.filter(book=book)
    assert (run.role, run.task, run.requested_by_role, run.status) == ("sol", "next-question", "sol", "queued")

    browser = Client()
    browser.force_login(book.owner)
    off = browser.post(f"/books/{book.pk}/agents/act/", {"on": "0", "next": f"/books/{book.pk}/"})
    assert off.status_code == 302
    book.refresh_from_db()
    assert book.agents_act is False
    author_api.post(f"/sessions/{session_id}/turns", {"role": "author", "content": "And she lies about it."})
    assert AgentRun.objects.filter(book=book).count() == 1, "Sol waits for her buttons"


def test_an_editor_cannot_turn_the_agents_off(editor_browser, book):
    refused = editor_browser.post(f"/books/{book.pk}/agents/act/", {"on": "0"})
    assert refused.status_code == 403
    book.refresh_from_db()
    assert book.agents_act is True


def test_the_chapters_route_lists_none_before_hand_off_and_hides_another_authors_book(author_api, book):
    listed = author_api.get(f"/books/{book.pk}/chapters")
    assert listed.status_code == 200 and listed.json()["items"] == []
    stranger = Client()
    stranger.force_login(UserFactory())
    assert stranger.get(f"/api/v1/books/{book.pk}/chapters").status_code == 404


def test_the_author_hands_off_with_the_button_when_sol_has_not(author_api, sol_api, terra_api, luna_api, book):
    from .discovery_support import start
    from .loop_scenes import pass_gate, saturate

    start(author_api, book)
    for gate in ("G0", "G1", "G1.5"):
        pass_gate(sol_api, author_api, book, gate)
    saturate(sol_api, luna_api, terra_api, book)
    pass_gate(sol_api, author_api, book, "G2")
    brief = {
        "slug": "decision-brief",
        "type": "decision-brief",
        "content": {"success_metrics": ["the reader can name the culprit by chapter 12"], "chapter_1": "The letter."},
    }
    assert terra_api.post(f"/books/{book.pk}/loop/artifacts", brief).status_code == 201

    browser = Client()
    browser.force_login(book.owner)
    page = browser.get(f"/books/{book.pk}/loop/")
    assert "Hand off to drafting" in page.content.decode()
    asked = browser.post(f"/books/{book.pk}/loop/hand-off/")
    assert asked.status_code == 302 and asked.url.startswith("/review/"), asked
    card = Approval.objects.get(book=book, status="pending", gate="G3")
    decided = browser.post(f"/review/{card.pk}/", {"verdict": "approve", "rationale": "Ready to draft."})
    assert decided.status_code == 302
    assert LoopMeta.objects.get(book=book).status == "handed-off"
    assert Chapter.objects.get(book=book, number=1).spec == "The letter."
    assert BlackboardArtifact.objects.get(book=book, slug="decision-brief").status == ArtifactStatus.RATIFIED


def test_sol_hands_a_g2_duty_again_when_the_run_that_took_it_failed_and_closes_the_round_when_only_it_is_missing():
    from discovery.agents.providers.offline import BRIEF_DECISION, sol_next_question

    def context(handoffs: list[dict], loop: dict) -> dict:
        return {
            "book": {"title": "T", "premise": "P", "genre_pack": "mystery"},
            "dossier": {"scratchpad": [], "claims": [], "observations": []},
            "turns": [],
            "questions": [],
            "charters": [{"status": "approved", "version": 1, "main_thrust": "M", "created_at": "1"}],
            "thrusts": [],
            "handoffs": handoffs,
            "loop": {"gate": "G2", "status": "working", "pending_card": None, "reruns_queued": 0, **loop},
        }

    waiting = {"reviews": ["canon-integrity", "reader-trust"], "brief": None, "g2_blockers": ["no brief"]}
    brief = {"decision": BRIEF_DECISION, "status": "open", "created_at": "2"}
    plan = sol_next_question(context([brief], waiting))
    assert [h["task"] for h in plan["handoffs"]] == [], "its run is still at work"
    plan = sol_next_question(context([{**brief, "failed": True}], waiting))
    assert [h["task"] for h in plan["handoffs"]] == ["brief"]

    ready = {**waiting, "brief": {"status": "proposed"}, "g2_blockers": [], "g2_reasons": ["no full round yet"]}
    plan = sol_next_question(context([{**brief, "status": "answered"}], ready))
    assert plan["advance_round"] is True and plan["gate"]["gate"] == "G2"


def test_a_loop_paused_at_its_cost_bound_stops_sols_own_steps(author_api, book):
    from discovery.agents.models import AgentRun

    session_id = author_api.post(f"/books/{book.pk}/discovery").json()["session_id"]
    LoopMeta.objects.filter(book=book).update(status="paused-at-bound", bound="cost")
    said = author_api.post(f"/sessions/{session_id}/turns", {"role": "author", "content": "Mara keeps the light."})
    assert said.status_code == 201, "her turn is kept"
    assert not AgentRun.objects.filter(book=book).exists(), "the bound pauses the agents until her verdict"


def test_the_demo_is_written_without_sol_taking_his_own_steps_and_leaves_him_acting():
    from io import StringIO

    from django.core.management import call_command

    call_command("demo", stdout=StringIO())
    book = Book.objects.get(title="The Lighthouse Letter")
    assert book.agents_act is True
    assert not AgentRun.objects.filter(book=book, status="queued").exists()
